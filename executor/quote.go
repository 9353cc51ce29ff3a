package executor

import "strings"

// QuotePOSIX joins argv into a POSIX shell command line whose words are exactly argv, for
// bash, zsh, dash and any POSIX sh. A word is left bare only when it is made of
// characters no shell treats specially, and never the first one (which could otherwise
// be a reserved word or an alias); every other word is single-quoted, inside which
// nothing is special; a single quote in a word closes the quoting, is written escaped
// (\') and reopens it. Single quotes keep every byte as is (newlines, control
// characters, multi-byte characters) whatever the locale, which $'...' escapes would not.
func QuotePOSIX(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i > 0 && bare(w) {
			b.WriteString(w)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(w, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// bare reports whether w needs no quoting: letters, digits and _ . / , : @ % + - only.
// `=` (zsh expands a leading =cmd), `~`, globs, braces and the rest are quoted.
func bare(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case strings.ContainsRune("_./,:@%+-", r):
		default:
			return false
		}
	}
	return true
}
