package parse

import "strings"

// optSpec describes a wrapper's command-line options, getopt_long style, so that the
// words that are option values are not taken for the inner command.
type optSpec struct {
	arg    string   // short options that take a value (attached or the next word)
	optArg string   // short options whose value is optional and only attached
	long   []string // "name" (no value), "name=" (value required), "name?" (optional, only with =)
	// permute: options may follow operands (GNU permutation); otherwise option parsing
	// stops at the first operand, as with getopt's "+".
	permute bool
	digits  bool // -N, --N and -+N are options (nice's legacy adjustment)
}

// opt is one option found: its canonical name ("-u", "--user") and value.
type opt struct {
	name string
	val  field
	has  bool
}

// scan parses args. Without permute, rest is the words from the first operand on (after a
// "--"); with permute, rest is every operand. A word whose option letters cannot be known
// (a run-time part where an option letter would be) is an operand: it may expand to
// anything, the command included.
func (sp *optSpec) scan(args []field) (opts []opt, rest []field) {
	for i := 0; i < len(args); {
		o, next, done := sp.word(args, i)
		switch {
		case done && next > i: // "--"
			return opts, append(rest, args[next:]...)
		case done && !sp.permute:
			return opts, append(rest, args[i:]...)
		case done:
			rest = append(rest, args[i])
			i++
		default:
			opts = append(opts, o...)
			i = next
		}
	}
	return opts, rest
}

// word parses the option word args[i]: the options it holds and the index of the word
// after it and its values. done is true when args[i] is no option: an operand (next == i)
// or "--" (next == i+1).
func (sp *optSpec) word(args []field, i int) (opts []opt, next int, done bool) {
	a := args[i]
	v := a.val
	switch {
	case v == "--" && !a.dynamic:
		return nil, i + 1, true
	case len(v) < 2 || v[0] != '-' || (a.dynamic && a.dynAt < 2):
		return nil, i, true
	case sp.digits && isAdjustment(v):
		return []opt{{name: v}}, i + 1, false
	case v[1] == '-':
		name, _, eq := strings.Cut(v[2:], "=")
		if a.dynamic && (!eq || a.dynAt < 2+len(name)) {
			return nil, i, true
		}
		full, kind := sp.lookupLong(name)
		o := opt{name: "--" + full}
		switch {
		case eq:
			o.val, o.has = subField(a, 3+len(name)), true
		case kind == '=' && i+1 < len(args):
			i++
			o.val, o.has = args[i], true
		}
		return []opt{o}, i + 1, false
	}
	if a.dynamic && a.dynAt < len(v) {
		// Letters before the run-time part are options only if one of them takes the
		// rest as its value; otherwise the word's meaning is known only at run time.
		known := false
		for j := 1; j < a.dynAt; j++ {
			if strings.IndexByte(sp.arg, v[j]) >= 0 || strings.IndexByte(sp.optArg, v[j]) >= 0 {
				known = true
				break
			}
		}
		if !known {
			return nil, i, true
		}
	}
	for j := 1; j < len(v); j++ {
		c := v[j]
		o := opt{name: "-" + string(rune(c))}
		if c < 128 {
			o.name = shortFlagText[c]
		}
		if strings.IndexByte(sp.arg, c) >= 0 {
			if j+1 < len(v) {
				o.val, o.has = subField(a, j+1), true
			} else if i+1 < len(args) {
				i++
				o.val, o.has = args[i], true
			}
			return append(opts, o), i + 1, false
		}
		if strings.IndexByte(sp.optArg, c) >= 0 {
			if j+1 < len(v) {
				o.val, o.has = subField(a, j+1), true
			}
			return append(opts, o), i + 1, false
		}
		opts = append(opts, o)
	}
	return opts, i + 1, false
}

// lookupLong resolves a long option name, abbreviations included, to its full name and
// kind ('=' value required, '?' optional, 0 none). Unknown names take no value.
func (sp *optSpec) lookupLong(name string) (string, byte) {
	match, kind, n := name, byte(0), 0
	for _, l := range sp.long {
		ln, k := l, byte(0)
		if e := l[len(l)-1]; e == '=' || e == '?' {
			ln, k = l[:len(l)-1], e
		}
		if ln == name {
			return ln, k
		}
		if strings.HasPrefix(ln, name) {
			match, kind = ln, k
			n++
		}
	}
	if n == 1 {
		return match, kind
	}
	return name, 0
}

// subField is the part of a word from byte offset i on.
func subField(a field, i int) field {
	i = min(i, len(a.val))
	f := field{val: a.val[i:], glob: a.glob}
	if a.dynamic && a.dynAt >= i {
		f.dynamic, f.dynAt = true, a.dynAt-i
	} else if a.dynamic {
		f.dynamic, f.dynAt = true, 0
	}
	return f
}

// isAdjustment matches nice's legacy -N, --N and -+N.
func isAdjustment(v string) bool {
	s := v[1:]
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// has reports whether any of the named options was given.
func hasOpt(opts []opt, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// optValue returns the value of the last of the named options given.
func optValue(opts []opt, names ...string) (field, bool) {
	var f field
	found := false
	for _, o := range opts {
		for _, n := range names {
			if o.name == n && o.has {
				f, found = o.val, true
			}
		}
	}
	return f, found
}
