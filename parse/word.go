package parse

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// field is one word after static evaluation.
type field struct {
	val     string
	dynamic bool // a part needs run-time state; its source text is kept in val
	dynAt   int  // offset in val of the first run-time part (when dynamic)
	glob    bool // an unquoted glob character
	tilde   bool // starts with an unquoted tilde prefix
	quoted  bool // has a quoted or escaped part: not dropped when empty
}

// wordFields appends the fields of an argument word: brace expansion may give several.
func (w *walker) wordFields(word *syntax.Word, dst []field) []field {
	if w.err != nil {
		return dst
	}
	if hasBrace(word.Parts) {
		cp := *word // SplitBraces rewrites the word it is given; keep the tree intact
		if syntax.SplitBraces(&cp) {
			return w.braceFields(&cp, word.Pos(), dst)
		}
	}
	return append(dst, w.evalWord(word.Parts, word.Pos()))
}

// braceFields appends the fields of a word with brace expressions. (Apart from
// wordFields: the iterator's closure would move dst to the heap on every call.)
func (w *walker) braceFields(word *syntax.Word, at syntax.Pos, dst []field) []field {
	for ew, err := range expand.BracesSeq(nil, word) {
		if err != nil {
			w.fail(fmt.Sprintf("brace expansion: %v", err), w.pos(at))
			return dst
		}
		if w.words+len(dst) > maxWords {
			w.fail(fmt.Sprintf("more than %d words after brace expansion", maxWords), w.pos(at))
			return dst
		}
		f := w.evalWord(ew.Parts, at)
		if f.val == "" && !f.dynamic && !f.quoted {
			continue // bash drops unquoted empty words: {,} and the empty half of x{a,}
		}
		dst = append(dst, f)
	}
	return dst
}

func hasBrace(parts []syntax.WordPart) bool {
	for _, p := range parts {
		if l, ok := p.(*syntax.Lit); ok && strings.IndexByte(l.Value, '{') >= 0 {
			return true
		}
	}
	return false
}

// evaluator accumulates one word.
type evaluator struct {
	w       *walker
	buf     []byte
	f       field
	bracket bool // an unquoted '[' waits for its ']' (which makes a glob)
	ansi    bool // an ANSI-C string was decoded: the result needs a UTF-8 check
}

// evalWord evaluates word parts the way bash would without running anything: quotes and
// escapes removed, $'…' decoded, run-time parts kept as their source text.
func (w *walker) evalWord(parts []syntax.WordPart, at syntax.Pos) field {
	if len(parts) == 1 { // fast paths: a plain literal or a single-quoted string
		switch p := parts[0].(type) {
		case *syntax.Lit:
			if plainLit(p.Value) {
				return field{val: p.Value}
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return field{val: p.Value}
			}
		}
	}
	e := evaluator{w: w, buf: w.buf[:0]}
	e.parts(parts, true)
	e.f.val = string(e.buf)
	w.buf = e.buf
	if e.ansi && !utf8.ValidString(e.f.val) {
		w.fail("word is not valid UTF-8 after $'…' decoding", w.pos(at))
	}
	return e.f
}

// plainLit reports whether an unquoted literal evaluates to itself.
func plainLit(s string) bool {
	if strings.HasPrefix(s, "~") {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '*', '?', '[':
			return false
		}
	}
	return true
}

func (e *evaluator) parts(parts []syntax.WordPart, top bool) {
	for i, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if top && i == 0 && strings.HasPrefix(p.Value, "~") {
				e.f.tilde = true
			}
			if !p.ValuePos.IsValid() && p.Value == `\` {
				// a backslash produced by a brace sequence ({Z..a}) is removed like a quote
				e.f.quoted = true
				continue
			}
			e.unquoted(p.Value)
		case *syntax.SglQuoted:
			e.f.quoted = true
			if p.Dollar {
				e.ansiC(p.Value)
			} else {
				e.buf = append(e.buf, p.Value...)
			}
		case *syntax.DblQuoted:
			e.f.quoted = true
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					e.quoted(l.Value, true)
				} else {
					e.runtime(q)
				}
			}
		case *syntax.ExtGlob:
			e.f.glob = true
			e.buf = append(e.buf, p.Op.String()...)
			e.buf = append(e.buf, p.Pattern.Value...)
			e.buf = append(e.buf, ')')
		default:
			e.runtime(part)
		}
	}
}

// runtime keeps the source text of a part that needs run-time state.
func (e *evaluator) runtime(n syntax.Node) {
	if !e.f.dynamic {
		e.f.dynamic = true
		e.f.dynAt = len(e.buf)
	}
	e.buf = append(e.buf, e.w.text(n)...)
}

// unquoted removes backslash escapes and notes glob characters.
func (e *evaluator) unquoted(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				c = s[i]
				e.f.quoted = true
			}
		case '*', '?':
			e.f.glob = true
		case '[':
			e.bracket = true
		case ']':
			if e.bracket {
				e.f.glob = true
			}
		}
		e.buf = append(e.buf, c)
	}
}

// quoted removes the backslashes bash removes inside double quotes (dq) or here-documents.
func (e *evaluator) quoted(s string, dq bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '\\':
				i++
				c = s[i]
			case '"':
				if dq {
					i++
					c = s[i]
				}
			case '\n':
				i++
				continue
			}
		}
		e.buf = append(e.buf, c)
	}
}

// ansiC decodes the body of a $'…' string as bash does. A NUL ends the string.
func (e *evaluator) ansiC(s string) {
	e.ansi = true
	start := len(e.buf)
	b := e.buf
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b = append(b, c)
			continue
		}
		i++
		c = s[i]
		switch c {
		case 'a':
			b = append(b, '\a')
		case 'b':
			b = append(b, '\b')
		case 'e', 'E':
			b = append(b, 0x1b)
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'v':
			b = append(b, '\v')
		case '\\', '\'', '"', '?':
			b = append(b, c)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for n := 0; n < 2 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7'; n++ {
				i++
				v = v*8 + int(s[i]-'0')
			}
			b = append(b, byte(v))
		case 'x', 'u', 'U':
			digits := 2
			if c == 'u' {
				digits = 4
			} else if c == 'U' {
				digits = 8
			}
			v, n := 0, 0
			for ; n < digits && i+1 < len(s) && isHex(s[i+1]); n++ {
				i++
				v = v*16 + hexVal(s[i])
			}
			switch {
			case n == 0:
				b = append(b, '\\', c)
			case c == 'x' || v <= 0x7f:
				b = append(b, byte(v))
			case utf8.ValidRune(rune(v)):
				b = utf8.AppendRune(b, rune(v))
			default:
				// bash writes an invalid UTF-8 sequence: make the word invalid too
				b = append(b, 0xff)
			}
		case 'c':
			if i+1 >= len(s) {
				b = append(b, '\\', 'c')
				break
			}
			i++
			x := s[i]
			if x == '\\' && i+1 < len(s) && s[i+1] == '\\' {
				i++
			}
			if x == '?' {
				b = append(b, 0x7f)
			} else {
				if x >= 'a' && x <= 'z' {
					x -= 'a' - 'A'
				}
				b = append(b, x&0x1f)
			}
		default:
			b = append(b, '\\', c)
		}
	}
	if j := bytes.IndexByte(b[start:], 0); j >= 0 {
		b = b[:start+j]
	}
	e.buf = b
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

// delimQuoted reports whether a here-document delimiter is quoted, which makes the body
// literal.
func delimQuoted(word *syntax.Word) bool {
	if word == nil {
		return false
	}
	for _, p := range word.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.IndexByte(p.Value, '\\') >= 0 {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// heredocBody evaluates a here-document body: literal when the delimiter is quoted, else
// with the here-document escapes removed and run-time parts kept as source text.
func (w *walker) heredocBody(r *syntax.Redirect) field {
	if r.Hdoc == nil {
		return field{}
	}
	var f field
	if delimQuoted(r.Word) {
		var b strings.Builder
		for _, p := range r.Hdoc.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				b.WriteString(l.Value)
			} else {
				b.WriteString(w.text(p))
			}
		}
		f.val = b.String()
	} else {
		e := evaluator{w: w, buf: w.buf[:0]}
		for _, p := range r.Hdoc.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				e.quoted(l.Value, false)
			} else {
				e.runtime(p)
			}
		}
		f = e.f
		f.val = string(e.buf)
		w.buf = e.buf
	}
	if r.Op == syntax.DashHdoc {
		f.val = stripTabs(f.val)
	}
	return f
}

// stripTabs removes the leading tabs of every line, as `<<-` does.
func stripTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "")
}
