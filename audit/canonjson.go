package audit

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a small strict JSON parser and the RFC 8785 (JSON Canonicalization
// Scheme) encoder used for the Input and Detail of records. The parser is stricter than
// encoding/json on purpose: it refuses what would make the stored form ambiguous
// (duplicate object keys, lone UTF-16 surrogates, invalid UTF-8, numbers out of range)
// instead of silently repairing it.

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonFalse
	jsonTrue
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is a parsed JSON value. For jsonNumber, s holds the canonical number text;
// for jsonString, the decoded string. kids holds the elements of an array (with empty
// keys) or the members of an object, kept sorted in RFC 8785 order.
type jsonValue struct {
	kind jsonKind
	s    string
	kids []jsonMember
}

type jsonMember struct {
	key string
	val jsonValue
}

// jsonSyntaxError reports where parsing stopped. It never quotes the input.
type jsonSyntaxError struct {
	Offset int
	Msg    string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset)
}

type jsonParser struct {
	data     string // the whole document: decoded strings without escapes are substrings
	pos      int
	depth    int
	maxDepth int
	stack    []jsonMember // members of the arrays and objects being parsed
	arena    []jsonMember // finished members are carved from here, fewer allocations
	reuse    bool         // take arenas from arenaPool and list them in chunks
	chunks   jsonArenas
}

// jsonArenas are the arenas a parsed document's members live in. Once the document is
// no longer needed, release hands them back for the next parse: a record's input is
// parsed, masked and encoded on every append, and its members are most of what an
// append allocates.
type jsonArenas []*[]jsonMember

// arenaPool holds the arenas of released documents.
var arenaPool sync.Pool

func (a jsonArenas) release() {
	for _, c := range a {
		clear((*c)[:cap(*c)]) // keep no strings of the released document alive
		*c = (*c)[:0]
		arenaPool.Put(c)
	}
}

// parseJSON parses exactly one JSON value (surrounding whitespace allowed).
func parseJSON(data []byte, maxDepth int) (jsonValue, error) {
	v, _, err := parseJSONWith(data, maxDepth, false)
	return v, err
}

// parseJSONReusing is parseJSON with arenas taken from arenaPool: the caller releases
// them once it is done with the value (and every slice of it).
func parseJSONReusing(data []byte, maxDepth int) (jsonValue, jsonArenas, error) {
	return parseJSONWith(data, maxDepth, true)
}

func parseJSONWith(data []byte, maxDepth int, reuse bool) (jsonValue, jsonArenas, error) {
	if !utf8.Valid(data) {
		// Locate the first bad byte for the message.
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return jsonValue{}, nil, &jsonSyntaxError{off, "invalid UTF-8"}
	}
	p := parserPool.Get().(*jsonParser)
	defer func() {
		clear(p.stack)
		p.stack = p.stack[:0]
		p.arena, p.chunks = nil, nil // owned by the returned value now
		parserPool.Put(p)
	}()
	p.data, p.pos, p.depth, p.maxDepth, p.reuse = string(data), 0, 0, maxDepth, reuse
	p.skipSpace()
	v, err := p.value()
	if err == nil {
		if p.skipSpace(); p.pos != len(p.data) {
			err = p.errorf("unexpected data after the JSON value")
		}
	}
	if err != nil {
		p.chunks.release()
		return jsonValue{}, nil, err
	}
	return v, p.chunks, nil
}

var parserPool = sync.Pool{New: func() any { return &jsonParser{stack: make([]jsonMember, 0, 64)} }}

func (p *jsonParser) errorf(format string, args ...any) error {
	return &jsonSyntaxError{p.pos, fmt.Sprintf(format, args...)}
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (jsonValue, error) {
	if p.pos >= len(p.data) {
		return jsonValue{}, p.errorf("unexpected end of JSON")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		return jsonValue{kind: jsonString, s: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return jsonValue{kind: jsonTrue}, nil
	case p.literal("false"):
		return jsonValue{kind: jsonFalse}, nil
	case p.literal("null"):
		return jsonValue{kind: jsonNull}, nil
	case c == 0:
		return jsonValue{}, p.errorf("NUL byte")
	default:
		return jsonValue{}, p.errorf("invalid character")
	}
}

func (p *jsonParser) literal(word string) bool {
	if strings.HasPrefix(p.data[p.pos:], word) {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return p.errorf("nesting deeper than %d", p.maxDepth)
	}
	return nil
}

func (p *jsonParser) object() (jsonValue, error) {
	if err := p.enter(); err != nil {
		return jsonValue{}, err
	}
	p.pos++ // {
	base := len(p.stack)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return jsonValue{kind: jsonObject}, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return jsonValue{}, p.errorf("expected a string key")
		}
		k, err := p.string()
		if err != nil {
			return jsonValue{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return jsonValue{}, p.errorf("expected ':'")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value()
		if err != nil {
			return jsonValue{}, err
		}
		p.stack = append(p.stack, jsonMember{k, val})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jsonValue{}, p.errorf("unexpected end of JSON in object")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != '}' {
			return jsonValue{}, p.errorf("expected ',' or '}'")
		}
		p.pos++
		break
	}
	p.depth--
	v := jsonValue{kind: jsonObject, kids: p.pop(base)}
	if !membersSorted(v.kids) {
		sortMembers(v.kids)
		for i := 1; i < len(v.kids); i++ {
			if v.kids[i-1].key == v.kids[i].key {
				return jsonValue{}, p.errorf("duplicate object key")
			}
		}
	}
	return v, nil
}

// pop moves the members pushed since base into a slice of their own, carved from the
// arena (a slice that outgrows the arena's room starts a new one; the slices carved
// before keep the old one).
func (p *jsonParser) pop(base int) []jsonMember {
	n := len(p.stack) - base
	if cap(p.arena)-len(p.arena) < n {
		// A member takes at least 2 bytes of JSON ("1,"), usually far more: size the
		// first arena for a typical density, later ones by doubling.
		p.arena = p.newArena(max(n, len(p.data)/12+8, 2*cap(p.arena)))
	}
	start := len(p.arena)
	p.arena = p.arena[:start+n]
	kids := p.arena[start : start+n : start+n]
	copy(kids, p.stack[base:])
	clear(p.stack[base:])
	p.stack = p.stack[:base]
	return kids
}

func (p *jsonParser) newArena(size int) []jsonMember {
	if !p.reuse {
		return make([]jsonMember, 0, size)
	}
	c, _ := arenaPool.Get().(*[]jsonMember)
	if c == nil || cap(*c) < size {
		a := make([]jsonMember, 0, size) // a pooled arena too small is left to the GC
		c = &a
	}
	p.chunks = append(p.chunks, c)
	return *c
}

// membersSorted reports whether the keys are strictly increasing (sorted, no
// duplicates), the common case for documents written by encoding/json from maps.
func membersSorted(m []jsonMember) bool {
	for i := 1; i < len(m); i++ {
		if compareUTF16(m[i-1].key, m[i].key) >= 0 {
			return false
		}
	}
	return true
}

func (p *jsonParser) array() (jsonValue, error) {
	if err := p.enter(); err != nil {
		return jsonValue{}, err
	}
	p.pos++ // [
	base := len(p.stack)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return jsonValue{kind: jsonArray}, nil
	}
	for {
		p.skipSpace()
		el, err := p.value()
		if err != nil {
			return jsonValue{}, err
		}
		p.stack = append(p.stack, jsonMember{val: el})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jsonValue{}, p.errorf("unexpected end of JSON in array")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != ']' {
			return jsonValue{}, p.errorf("expected ',' or ']'")
		}
		p.pos++
		break
	}
	p.depth--
	return jsonValue{kind: jsonArray, kids: p.pop(base)}, nil
}

func (p *jsonParser) string() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errorf("control character in string")
		}
		p.pos++
	}
	var b strings.Builder
	b.WriteString(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.data) {
			break
		}
		e := p.data[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
					return "", p.errorf("lone UTF-16 surrogate")
				}
				p.pos += 2
				r2, ok := p.hex4()
				if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
					return "", p.errorf("lone UTF-16 surrogate")
				}
				r = utf16.DecodeRune(r, r2)
			}
			b.WriteRune(r)
		default:
			return "", p.errorf("invalid escape")
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.data[p.pos : p.pos+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func (p *jsonParser) number() (jsonValue, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return jsonValue{}, p.errorf("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return jsonValue{}, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return jsonValue{}, p.errorf("invalid number")
		}
	}
	lit := p.data[start:p.pos]
	if isSmallInteger(lit) {
		return jsonValue{kind: jsonNumber, s: lit}, nil // already canonical
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return jsonValue{}, &jsonSyntaxError{start, "number out of range"}
	}
	return jsonValue{kind: jsonNumber, s: formatNumber(f)}, nil
}

// isSmallInteger reports whether a valid JSON number literal is an integer of at most
// 15 digits other than -0: its RFC 8785 form is the literal itself.
func isSmallInteger(lit string) bool {
	digits := strings.TrimPrefix(lit, "-")
	if len(digits) == 0 || len(digits) > 15 || digits == "0" && len(lit) > 1 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// formatNumber writes f as ECMAScript's Number.prototype.toString does, which is what
// RFC 8785 section 3.2.2.3 requires: integers without a fraction or exponent up to
// 1e21, shortest round-trip digits, exponent form outside [1e-6, 1e21).
func formatNumber(f float64) string {
	if f == 0 {
		return "0" // also for -0
	}
	var neg string
	if f < 0 {
		neg = "-"
		f = -f
	}
	// Shortest digits and decimal exponent: f = 0.d1d2...dk × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n := x + 1
	k := len(digits)
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		sign := "+"
		if n-1 < 0 {
			sign = "-"
		}
		ex := n - 1
		if ex < 0 {
			ex = -ex
		}
		if k == 1 {
			s = digits + "e" + sign + strconv.Itoa(ex)
		} else {
			s = digits[:1] + "." + digits[1:] + "e" + sign + strconv.Itoa(ex)
		}
	}
	return neg + s
}

// sortMembers orders object members by their keys as RFC 8785 section 3.2.3 requires:
// by UTF-16 code units.
func sortMembers(m []jsonMember) {
	n := len(m)
	if n < 2 {
		return
	}
	if n > maxSmallObject {
		slices.SortFunc(m, func(a, b jsonMember) int { return compareUTF16(a.key, b.key) })
		return
	}
	// Objects are small: sort their positions (an insertion sort), then move each
	// member once, rather than swapping members about.
	var idx [maxSmallObject]uint8
	for i := range n {
		idx[i] = uint8(i)
	}
	for i := 1; i < n; i++ {
		x, j := idx[i], i
		for ; j > 0 && compareUTF16(m[idx[j-1]].key, m[x].key) > 0; j-- {
			idx[j] = idx[j-1]
		}
		idx[j] = x
	}
	var tmp [maxSmallObject]jsonMember
	copy(tmp[:n], m)
	for i := range n {
		m[i] = tmp[idx[i]]
	}
}

// maxSmallObject is the most members sortMembers sorts by position.
const maxSmallObject = 48

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units. That order
// equals byte order except between a supplementary character (4 bytes in UTF-8, a
// surrogate pair in UTF-16) and a character in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	// Back up to the start of the rune that differs.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ua, ub := utf16Key(ra), utf16Key(rb)
	if ua != ub {
		if ua < ub {
			return -1
		}
		return 1
	}
	if ra < rb {
		return -1
	}
	return 1
}

// utf16Key is the first UTF-16 code unit of r.
func utf16Key(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + ((r - 0x10000) >> 10)
	}
	return r
}

// appendCanonical appends the RFC 8785 encoding of v.
func appendCanonical(dst []byte, v *jsonValue) []byte {
	switch v.kind {
	case jsonNull:
		return append(dst, "null"...)
	case jsonFalse:
		return append(dst, "false"...)
	case jsonTrue:
		return append(dst, "true"...)
	case jsonNumber:
		return append(dst, v.s...)
	case jsonString:
		return appendString(dst, v.s)
	case jsonArray:
		dst = append(dst, '[')
		for i := range v.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, &v.kids[i].val)
		}
		return append(dst, ']')
	case jsonObject:
		dst = append(dst, '{')
		for i := range v.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, v.kids[i].key)
			dst = append(dst, ':')
			dst = appendCanonical(dst, &v.kids[i].val)
		}
		return append(dst, '}')
	}
	panic("audit: unknown JSON kind")
}

const hexDigits = "0123456789abcdef"

// appendString appends s as an RFC 8785 JSON string: '"' and '\' escaped, the control
// characters U+0000..U+001F as \b \t \n \f \r or \u00xx (lowercase hex), everything
// else as literal UTF-8. s must be valid UTF-8.
func appendString[T text](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
