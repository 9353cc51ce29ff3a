package parse

import "strings"

// splitEnvS splits the argument of `env -S` (--split-string) as GNU env does: blanks
// separate words; '…' is literal but for \\ and \'; "…" and unquoted text take the escapes
// \" \' \\ \# \$ \_ (a space, or a separator outside quotes) \c (ends the string) \f \n \r
// \t \v; # at the start of a word begins a comment; ${NAME} expands a variable (a run-time
// part). ok is false where env would refuse the string (and run nothing). When the string
// itself had run-time parts, every word is dynamic.
func splitEnvS(f field) (words []field, ok bool) {
	s := f.val
	var cur strings.Builder
	var cf field
	inWord := false
	flush := func() {
		if inWord {
			cf.val = cur.String()
			if f.dynamic && !cf.dynamic {
				cf.dynamic, cf.dynAt = true, 0
			}
			words = append(words, cf)
		}
		cur.Reset()
		cf = field{}
		inWord = false
	}
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			switch {
			case c == '\'':
				quote = 0
			case c == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '\''):
				i++
				cur.WriteByte(s[i])
			default:
				cur.WriteByte(c)
			}
			continue
		case c == '\'' || c == '"':
			if quote == c {
				quote = 0
			} else if quote == 0 {
				quote = c
				inWord = true
			} else {
				cur.WriteByte(c)
			}
			continue
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'):
			flush()
			continue
		case quote == 0 && c == '#' && !inWord:
			flush()
			return words, true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			switch e := s[i]; e {
			case '"', '\'', '\\', '#', '$':
				cur.WriteByte(e)
			case '_':
				if quote == 0 {
					flush()
					continue
				}
				cur.WriteByte(' ')
			case 'c':
				if quote != 0 {
					return nil, false
				}
				flush()
				return words, true
			case 'f':
				cur.WriteByte('\f')
			case 'n':
				cur.WriteByte('\n')
			case 'r':
				cur.WriteByte('\r')
			case 't':
				cur.WriteByte('\t')
			case 'v':
				cur.WriteByte('\v')
			default:
				return nil, false
			}
		case c == '$':
			end := strings.IndexByte(s[i:], '}')
			if i+1 >= len(s) || s[i+1] != '{' || end < 0 {
				return nil, false
			}
			if !cf.dynamic {
				cf.dynamic, cf.dynAt = true, cur.Len()
			}
			cur.WriteString(s[i : i+end+1])
			i += end
		default:
			cur.WriteByte(c)
		}
		inWord = true
	}
	if quote != 0 {
		return nil, false
	}
	flush()
	return words, true
}
