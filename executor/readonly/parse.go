package readonly

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The language's bounds, those of the seed's C structures (argv[8] per stage).
const (
	MaxStages = 8 // stages in the pipeline as written
	MaxArgs   = 8 // argv entries per stage, the command name included
)

// Pipeline is a parsed and normalised command: `cat File | Stages[0] | Stages[1] ...`.
// The zero value reads the empty file name, which Open refuses. A Pipeline is plain data: safe to
// share between goroutines as long as nobody modifies it.
type Pipeline struct {
	File   string  // the FILE operand as written
	Stages []Stage // the filters after the entry `cat FILE` (may be empty)
}

// Stage is one filter of a Pipeline: a command name (nl, head, tail, wc, sort, grep or
// sed) and its arguments in normal form (`head -n5` is Name "head", Args ["-n" "5"]).
type Stage struct {
	Name string
	Args []string // the arguments, the name excluded
}

// String is the normalised pipeline as shell text, e.g. `cat 'a b.txt' | head -n 20`.
// Arguments that a POSIX shell would split, expand or interpret are single-quoted, so
// that a shell would run exactly the pipeline Run evaluates.
func (p *Pipeline) String() string {
	var b strings.Builder
	b.WriteString("cat ")
	b.WriteString(quote(p.File))
	for _, s := range p.Stages {
		b.WriteString(" | ")
		b.WriteString(quote(s.Name))
		for _, a := range s.Args {
			b.WriteByte(' ')
			b.WriteString(quote(a))
		}
	}
	return b.String()
}

// quote returns s as one POSIX shell word: as is when it holds only characters that
// are never special, else in single quotes (a single quote inside is closed,
// escaped with a backslash and reopened).
func quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("_@%+=:,./-", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Parse parses and normalises command; the error is always *Error.
//
// The checks come in this order, the first failing one giving the error: forbidden
// characters (anywhere, quotes included), UTF-8 validity, quoting and empty stages,
// the number of stages, the command names, the number of arguments, then the
// pipeline's shape and each stage's options.
func Parse(command string) (*Pipeline, error) {
	p, err := parse(command)
	if err != nil {
		return nil, err // never a typed nil inside the interface
	}
	return p, nil
}

func parse(command string) (*Pipeline, *Error) {
	for i := 0; i < len(command); i++ {
		// A NUL byte is this package's extension of the seed's list: no file name or
		// pattern can hold one, and C code downstream would cut the text there.
		if strings.IndexByte(";&><$`\n\r\x00", command[i]) >= 0 {
			return nil, errorf(CodeForbidden, "character %s is not allowed", strconv.QuoteRune(rune(command[i])))
		}
	}
	if !utf8.ValidString(command) {
		return nil, errorf(CodeParse, "the command is not valid UTF-8")
	}
	argvs, err := tokenize(command)
	if err != nil {
		return nil, err
	}
	if len(argvs) > MaxStages {
		return nil, errorf(CodeTooManyStages, "%d stages, at most %d", len(argvs), MaxStages)
	}
	for _, argv := range argvs {
		if !allowedCommand(argv[0]) {
			return nil, errorf(CodeForbidden, "command %q is not allowed (allowed: cat nl head tail wc sort grep sed)", argv[0])
		}
	}
	for i, argv := range argvs {
		if len(argv) > MaxArgs {
			return nil, errorf(CodeTooManyArgs, "stage %d (%s) has %d arguments counting its name, at most %d", i+1, argv[0], len(argv), MaxArgs)
		}
	}

	p := &Pipeline{}
	first, rest := argvs[0], argvs[1:]
	switch first[0] {
	case "cat":
		files, err := operands("cat", first[1:])
		if err != nil {
			return nil, err
		}
		if len(files) != 1 {
			return nil, errorf(CodeUnsupported, "cat takes exactly one FILE, got %d", len(files))
		}
		p.File = files[0]
	case "head", "tail", "nl", "sed":
		st, _, files, err := compile(first[0], first[1:])
		if err != nil {
			return nil, err
		}
		switch len(files) {
		case 0:
			return nil, &Error{Code: CodeRequires, Message: requiresMessage}
		case 1:
			p.File = files[0]
			p.Stages = append(p.Stages, st)
		default:
			return nil, errorf(CodeUnsupported, "%s takes at most one FILE, got %d", first[0], len(files))
		}
	default: // grep, sort and wc never read a file here
		return nil, &Error{Code: CodeRequires, Message: requiresMessage}
	}
	for _, argv := range rest {
		st, _, files, err := compile(argv[0], argv[1:])
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			return nil, errorf(CodeUnsupported, "%s: a FILE operand (%q) is only allowed in the first stage", argv[0], files[0])
		}
		p.Stages = append(p.Stages, st)
	}
	return p, nil
}

// tokenize splits command into stages and each stage into its argv, removing quotes
// and backslashes. Tokens `--` are dropped (end of options, as the seed does it). Blanks
// are spaces and tabs, as in a POSIX shell; newlines never get here.
func tokenize(command string) ([][]string, *Error) {
	var (
		argvs [][]string
		argv  []string
		tok   []byte
		inTok bool // tok holds a token, maybe an empty one ('')
		raw   int  // tokens in the current stage, dropped ones included
	)
	endToken := func() {
		if inTok {
			if string(tok) != "--" {
				argv = append(argv, string(tok))
			}
			raw++
		}
		tok, inTok = tok[:0], false
	}
	endStage := func() *Error {
		endToken()
		if len(argv) == 0 {
			if raw == 0 && len(argvs) == 0 && !strings.Contains(command, "|") {
				return errorf(CodeEmpty, "no command")
			}
			return errorf(CodeParse, "stage %d of the pipeline is empty", len(argvs)+1)
		}
		argvs = append(argvs, argv)
		argv, raw = nil, 0
		return nil
	}
	for i := 0; i < len(command); i++ {
		switch c := command[i]; c {
		case ' ', '\t':
			endToken()
		case '|':
			if err := endStage(); err != nil {
				return nil, err
			}
		case '\'':
			j := strings.IndexByte(command[i+1:], '\'')
			if j < 0 {
				return nil, errorf(CodeParse, "unterminated single quote")
			}
			tok, inTok = append(tok, command[i+1:i+1+j]...), true
			i += j + 1
		case '"':
			inTok = true
			closed := false
			for i++; i < len(command); i++ {
				c := command[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(command) {
					i++
					c = command[i]
				}
				tok = append(tok, c)
			}
			if !closed {
				return nil, errorf(CodeParse, "unterminated double quote")
			}
		case '\\':
			if i+1 == len(command) {
				return nil, errorf(CodeParse, "trailing backslash")
			}
			i++
			tok, inTok = append(tok, command[i]), true
		default:
			tok, inTok = append(tok, c), true
		}
	}
	if err := endStage(); err != nil {
		return nil, err
	}
	return argvs, nil
}

func allowedCommand(name string) bool {
	switch name {
	case "cat", "nl", "head", "tail", "wc", "sort", "grep", "sed":
		return true
	}
	return false
}

// opKind is what a filter does.
type opKind uint8

const (
	opNL opKind = iota + 1
	opHead
	opTail
	opWCLines
	opWCBytes
	opSort
	opGrep
	opSedPrint  // print lines n..m
	opSedDelete // print the lines outside n..m
)

// op is a compiled filter.
type op struct {
	kind    opKind
	n, m    int    // head/tail count; sed range, 1-based and inclusive
	flag    bool   // grep -n, sort -r
	pattern []byte // grep
}

// compile checks one filter's arguments and returns its normal form, its compiled op
// and its operands (the FILE, which only the first stage may have). cat, which is no
// filter, is refused: it is only the entry.
func compile(name string, args []string) (Stage, op, []string, *Error) {
	st := Stage{Name: name}
	var o op
	var err *Error
	switch name {
	case "nl":
		o.kind = opNL
	case "head", "tail":
		o.kind, o.n = opHead, 10
		if name == "tail" {
			o.kind = opTail
		}
		if len(args) > 0 && strings.HasPrefix(args[0], "-n") {
			num := args[0][2:]
			args = args[1:]
			if num == "" {
				if len(args) == 0 {
					return st, o, nil, errorf(CodeUnsupported, "%s: -n needs a line count", name)
				}
				num, args = args[0], args[1:]
			}
			var ok bool
			if o.n, ok = count(num); !ok {
				return st, o, nil, errorf(CodeUnsupported, "%s: line count %q is not a non-negative decimal integer", name, num)
			}
			st.Args = []string{"-n", num}
		}
	case "wc":
		if len(args) == 0 || args[0] != "-l" && args[0] != "-c" {
			return st, o, nil, errorf(CodeUnsupported, "wc: only wc -l and wc -c are supported")
		}
		o.kind = opWCLines
		if args[0] == "-c" {
			o.kind = opWCBytes
		}
		st.Args, args = []string{args[0]}, args[1:]
	case "sort":
		o.kind = opSort
		if len(args) > 0 && args[0] == "-r" {
			o.flag, st.Args, args = true, []string{"-r"}, args[1:]
		}
	case "grep":
		o.kind = opGrep
		if len(args) > 0 && args[0] == "-n" {
			o.flag, st.Args, args = true, []string{"-n"}, args[1:]
		}
		if len(args) == 0 {
			return st, o, nil, errorf(CodeUnsupported, "grep needs a PATTERN")
		}
		// GNU grep would take a pattern that starts with "-" as options: refused rather
		// than given another meaning (a `--` before it is dropped like any other).
		if len(args[0]) > 1 && args[0][0] == '-' {
			return st, o, nil, errorf(CodeUnsupported, "grep: unsupported option %q (only -n; the PATTERN is a fixed string and cannot start with '-')", args[0])
		}
		o.pattern = []byte(args[0])
		st.Args, args = append(st.Args, args[0]), args[1:]
	case "sed":
		if len(args) == 0 || args[0] != "-n" {
			return st, o, nil, errorf(CodeUnsupported, "sed: only sed -n SCRIPT is supported")
		}
		if len(args) < 2 {
			return st, o, nil, errorf(CodeUnsupported, "sed -n needs a SCRIPT (Np, Nd, N,Mp or N,Md)")
		}
		if o, err = sedScript(args[1]); err != nil {
			return st, o, nil, err
		}
		st.Args, args = []string{"-n", args[1]}, args[2:]
	case "cat":
		return st, o, nil, errorf(CodeUnsupported, "cat is only supported as the first stage, as cat FILE")
	default:
		return st, o, nil, errorf(CodeForbidden, "command %q is not allowed (allowed: cat nl head tail wc sort grep sed)", name)
	}
	files, err := operands(name, args)
	return st, o, files, err
}

// operands checks what is left after a command's options: file names, none of which
// may look like an option (GNU tools would parse it as one) or be "-" (standard
// input). A file whose name starts with "-" is written ./-name.
func operands(name string, args []string) ([]string, *Error) {
	for _, a := range args {
		if a == "-" {
			return nil, errorf(CodeUnsupported, "%s: reading standard input (-) is not supported", name)
		}
		if strings.HasPrefix(a, "-") {
			return nil, errorf(CodeUnsupported, "%s: unsupported option %q", name, a)
		}
	}
	return args, nil
}

// sedScript compiles Np, Nd, N,Mp or N,Md (1 <= N <= M).
func sedScript(s string) (op, *Error) {
	bad := func() (op, *Error) {
		return op{}, errorf(CodeUnsupported, "sed: unsupported script %q (only Np, Nd, N,Mp and N,Md with 1 <= N <= M)", s)
	}
	if s == "" {
		return bad()
	}
	o := op{kind: opSedPrint}
	switch s[len(s)-1] {
	case 'p':
	case 'd':
		o.kind = opSedDelete
	default:
		return bad()
	}
	lo, hi, isRange := strings.Cut(s[:len(s)-1], ",")
	var ok bool
	if o.n, ok = count(lo); !ok || o.n < 1 {
		return bad()
	}
	o.m = o.n
	if isRange {
		if o.m, ok = count(hi); !ok || o.m < o.n {
			return bad()
		}
	}
	return o, nil
}

// count parses a non-negative decimal integer; a value too large for an int is
// math.MaxInt, which no file reaches (GNU head takes such counts as "all").
func count(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt-9)/10 {
			n = math.MaxInt
			continue
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
