package parse

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Command.Options: every option of a command with its value, however it was written.
// A tool accepts one option in many spellings (tar's `-Iprog`, `-I prog`, `-cIprog`,
// `cIf prog a.tar`, `--use-compress-program=prog`, `--use-compress-program prog`,
// `--use-compress-prog=prog`, `--use=prog`), and a rule written for one of them misses
// the others. The options list gives them all one entry, named canonically, by reading
// the words the way the tool's own parser (getopt_long, git's parse-options, find's
// expression, Go's flag package, zip's two-letter options) reads them.

// optTable describes the options of one tool (or of one git subcommand).
type optTable struct {
	short    map[string]*optDef // by the letters after "-" ("I"; zip's two-letter "TT")
	long     []*optDef          // sorted by name; in single tables, the whole-word options
	maxShort int                // the longest short name (2 for zip)
	// single: every word starting with "-" is one option, named whole, with "-" or "--"
	// (find's -exec, Go's -toolexec), its value after "=" or the next word.
	single bool
	// exact: long options are not abbreviated (git's own options, find, Go flags);
	// otherwise a unique prefix names its option, as getopt_long allows, and an
	// ambiguous one names every candidate (the tool refuses it; naming them all is safe).
	exact bool
	// stop: options end at the first operand (getopt's "+": xargs, env, timeout, awk,
	// whose operands after that are a command or a program); otherwise GNU permutation
	// lets options follow operands.
	stop bool
	// oldStyle: a first word without "-" is a cluster of option letters whose values are
	// the words after it, in order (tar cIf PROG a.tar).
	oldStyle bool
	// subs: the first operand is a subcommand (git's), whose options follow it; the
	// tool's own options end there. A subcommand not listed gets generic options.
	subs map[string]*optTable
	// command: options whose value is a command that runs to a terminating ";" or
	// "{} +" (find -exec): those words are the command's, not options.
	command map[string]bool
	// plus: "+" also starts an option cluster (the shells' +o NAME, +e), its options
	// named with "+".
	plus bool
}

// optDef is one option: its canonical name and how it takes a value.
type optDef struct {
	name  string // as written in the table: "-I", "--use-compress-program", "-exec"
	canon string // the name every spelling gets: the first long name, else the short one
	kind  byte   // 0 no value, '=' a value (attached or the next word), '?' only attached
}

// generic reads the options of tools parse has no table for: long options with their
// "=value", short clusters split into value-less letters (which options take a value
// is not known), options anywhere before "--" (as Command.Flags).
var generic = &optTable{}

// table builds an optTable from entries, each the space-separated names of one option
// ("-I --use-compress-program="), the last name ending in "=" when the option takes a
// value and "?" when the value is optional (only after "=", or attached to a short
// name). A name with one dash and several letters is a short option of that many
// letters (zip's -TT), unless the table is single.
func table(single bool, entries ...string) *optTable {
	t := &optTable{short: map[string]*optDef{}, single: single, exact: single}
	for _, e := range entries {
		names := strings.Fields(e)
		var kind byte
		if last := names[len(names)-1]; strings.HasSuffix(last, "=") || strings.HasSuffix(last, "?") {
			kind = last[len(last)-1]
			names[len(names)-1] = last[:len(last)-1]
		}
		canon := names[0]
		for _, n := range names {
			if strings.HasPrefix(n, "--") {
				canon = n
				break
			}
		}
		for _, n := range names {
			d := &optDef{name: n, canon: canon, kind: kind}
			if single || strings.HasPrefix(n, "--") {
				t.long = append(t.long, d)
				continue
			}
			t.short[n[1:]] = d
			t.maxShort = max(t.maxShort, len(n)-1)
		}
	}
	sort.Slice(t.long, func(i, j int) bool { return t.long[i].name < t.long[j].name })
	return t
}

// lookupLong resolves a long option name (with its dashes, without "=value"): an exact
// name, else (unless the table is exact) the options it is a prefix of, one per
// canonical name. nil when nothing matches.
func (t *optTable) lookupLong(name string) []*optDef {
	i := sort.Search(len(t.long), func(i int) bool { return t.long[i].name >= name })
	if i < len(t.long) && t.long[i].name == name {
		return t.long[i : i+1]
	}
	if t.exact || len(name) < 3 {
		return nil
	}
	var out []*optDef
	for ; i < len(t.long) && strings.HasPrefix(t.long[i].name, name); i++ {
		dup := false
		for _, d := range out {
			dup = dup || d.canon == t.long[i].canon
		}
		if !dup {
			out = append(out, t.long[i])
		}
	}
	return out
}

// matchShort finds the short option at the start of s (the longest name first: zip's
// -TT before -T) and the bytes it takes.
func (t *optTable) matchShort(s string) (*optDef, int) {
	for n := min(t.maxShort, len(s)); n >= 1; n-- {
		if d := t.short[s[:n]]; d != nil {
			return d, n
		}
	}
	return nil, 0
}

// optionsOf returns the options of a command's words (fields[0] is the command), read
// with the table of its tool. dynAll makes every entry dynamic (a script re-parsed from
// run-time text). The lists of one document are appended to one growing array (each
// list capped, so that appending to one copies it): a few allocations per document.
func (w *walker) optionsOf(name string, fields []field, dynAll bool) []Option {
	t := optTables[name]
	if t == nil {
		t = generic
	}
	if w.optChunk == nil {
		w.optChunk = make([]Option, 0, 16)
	}
	start := len(w.optChunk)
	s := optScan{fields: fields, dynAll: dynAll, out: w.optChunk}
	s.run(t)
	if len(s.out) == start {
		return noOptions
	}
	w.optChunk = s.out
	return s.out[start:len(s.out):len(s.out)]
}

// noOptions is the options list of a command without options, shared: it is never
// appended to in place (its capacity is 0).
var noOptions = []Option{}

// optScan reads the options of one command.
type optScan struct {
	fields []field
	dynAll bool
	out    []Option
}

func (s *optScan) add(name string, val field, argi int, dyn bool) {
	s.out = append(s.out, Option{Name: name, Value: val.val, Argi: argi, Dynamic: dyn || val.dynamic || s.dynAll})
}

func (s *optScan) run(t *optTable) {
	fields := s.fields
	inSub := false
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		v := f.val
		if v == "--" && !f.dynamic {
			return
		}
		if t.command[v] && !f.dynamic {
			i = s.command(t, i)
			continue
		}
		if len(v) < 2 || (v[0] != '-' && !(t.plus && v[0] == '+')) || (f.dynamic && f.dynAt == 0) {
			switch {
			case i == 1 && t.oldStyle && !f.dynamic:
				i = s.oldStyle(t, i)
			case t.subs != nil && !inSub:
				if f.dynamic {
					return // a subcommand known only at run time: its options are unknown
				}
				sub := t.subs[v]
				if sub == nil {
					sub = generic
				}
				t, inSub = sub, true
			case t.stop:
				return
			}
			continue
		}
		if f.dynamic && f.dynAt == 1 { // -$X: the option letters are known at run time only
			s.add(v, field{}, i, true)
			continue
		}
		switch {
		case v[0] == '+':
			i = s.cluster(t, i)
		case v[1] == '-':
			i = s.long(t, i, v)
		case t.single:
			i = s.long(t, i, v)
		default:
			i = s.cluster(t, i)
		}
	}
}

// long reads a long option (or a single-dash word option of a single table) at
// fields[i] and returns the index of the last word it used.
func (s *optScan) long(t *optTable, i int, v string) int {
	f := s.fields[i]
	at := i
	name, _, eq := strings.Cut(v, "=")
	if f.dynamic && f.dynAt < len(name) { // --$X, --use-$X
		s.add(v, field{}, i, true)
		return i
	}
	defs := t.lookupLong(name)
	if defs == nil && t.single && strings.HasPrefix(name, "--") { // Go flags: --toolexec is -toolexec
		name = name[1:]
		defs = t.lookupLong(name)
	}
	var val field
	switch {
	case eq:
		val = subField(f, strings.IndexByte(v, '=')+1)
	case takesValue(defs) && i+1 < len(s.fields):
		i++
		val = s.fields[i]
	}
	if defs == nil {
		s.add(name, val, at, false)
		return i
	}
	for _, d := range defs {
		s.add(d.canon, val, at, false)
	}
	return i
}

func takesValue(defs []*optDef) bool {
	for _, d := range defs {
		if d.kind == '=' {
			return true
		}
	}
	return false
}

// cluster reads a cluster of short options at fields[i] (-cvIprog, -ovalue, -TT prog)
// and returns the index of the last word it used.
func (s *optScan) cluster(t *optTable, i int) int {
	f := s.fields[i]
	v := f.val
	for j := 1; j < len(v); {
		if f.dynamic && j >= f.dynAt {
			s.add(v[:1]+v[j:], field{}, i, true)
			return i
		}
		d, n := t.matchShort(v[j:])
		if d == nil || v[0] == '+' {
			r, size := utf8.DecodeRuneInString(v[j:])
			var name string
			if r < utf8.RuneSelf && v[0] == '-' {
				name = shortFlagText[r]
			} else {
				name = v[:1] + string(r)
			}
			if d != nil && d.kind == '=' { // +o NAME
				if j+size < len(v) || i+1 >= len(s.fields) {
					s.add(name, subField(f, j+size), i, false)
					return i
				}
				s.add(name, s.fields[i+1], i, false)
				return i + 1
			}
			s.add(name, field{}, i, false)
			j += size
			continue
		}
		switch d.kind {
		case '=':
			switch {
			case j+n < len(v):
				s.add(d.canon, subField(f, j+n), i, false)
			case i+1 < len(s.fields):
				s.add(d.canon, s.fields[i+1], i, false)
				return i + 1
			default:
				s.add(d.canon, field{}, i, false)
			}
			return i
		case '?':
			s.add(d.canon, subField(f, j+n), i, false)
			return i
		}
		s.add(d.canon, field{}, i, false)
		j += n
	}
	return i
}

// oldStyle reads tar's first word without a dash (cIf): each letter an option, the
// letters taking a value taking the words after it in order. It returns the index of
// the last word used.
func (s *optScan) oldStyle(t *optTable, i int) int {
	v := s.fields[i].val
	next := i + 1
	for _, r := range v {
		d := t.short[string(r)]
		switch {
		case d == nil:
			s.add("-"+string(r), field{}, i, false)
		case d.kind == '=' && next < len(s.fields):
			s.add(d.canon, s.fields[next], i, false)
			next++
		default:
			s.add(d.canon, field{}, i, false)
		}
	}
	return next - 1
}

// command reads find's -exec COMMAND ... ; (or {} +): the option with the command's
// name for its value; the command's words are skipped. It returns the index of the
// terminator (or the last word).
func (s *optScan) command(t *optTable, i int) int {
	name := s.fields[i].val
	if defs := t.lookupLong(name); defs != nil {
		name = defs[0].canon
	}
	if i+1 >= len(s.fields) {
		s.add(name, field{}, i, false)
		return i
	}
	s.add(name, s.fields[i+1], i, false)
	for j := i + 2; j < len(s.fields); j++ {
		w := s.fields[j]
		if !w.dynamic && (w.val == ";" || (w.val == "+" && s.fields[j-1].val == "{}")) {
			return j
		}
	}
	return len(s.fields) - 1
}
