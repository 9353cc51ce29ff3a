package parse

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Document.Evaluations: where bash evaluates text the script holds as data. Some
// expansions turn a variable's value into code: ${x@P} decodes prompt escapes (\140 is a
// backquote) and then runs the command substitutions of the result; arithmetic evaluates
// the values of the variables it names as expressions, and evaluates an array subscript
// in them, which runs `$(cmd)` (x='a[$(id)]'; echo $((x))); ${!x}, namerefs and the
// variable names of read, printf -v, test -v and declare evaluate subscripts too. The
// walker records each such construct with the variables whose values it evaluates
// (rawEval); when the whole document is walked, finishEvals resolves what those
// variables may hold from every assignment the document makes (in any order, in any
// shell: a union, which is safe), and marks the evaluation dynamic when any of it is
// known only at run time.

// evalMode says how bash uses the value of a variable an evaluation reads.
type evalMode uint8

const (
	modeArith  evalMode = 1 << iota // an arithmetic expression: the names in it are evaluated too
	modeName                        // a variable name, whose subscript is arithmetic
	modePrompt                      // a prompt string: decoded, then expanded
	modeData                        // only decoded (${x@E}): nothing of it is evaluated
)

// evalInput is a variable whose value an evaluation reads, and how.
type evalInput struct {
	name string
	mode evalMode
}

// evalIn accumulates what one construct evaluates.
type evalIn struct {
	inputs  []evalInput
	texts   []string // quoted text of the construct itself
	dynamic bool
}

func (in *evalIn) add(name string, mode evalMode) {
	switch {
	case numericSpecial[name]:
	case runtimeParam(name):
		in.dynamic = true
	default:
		in.inputs = append(in.inputs, evalInput{name, mode})
	}
}

// rawEval is an evaluation found by the walk, resolved by finishEvals.
type rawEval struct {
	ev     Evaluation
	inputs []evalInput
	texts  []string
	// cond: 0 always an evaluation; 'a' unless condName is declared an associative
	// array (whose subscripts are strings); 'v' a value assigned to condName: an
	// arithmetic evaluation if it is an integer variable, a nameref target if it is a
	// nameref, nothing else (its inputs are found then, from the text).
	cond     byte
	condName string
}

// setter is what the document may assign to one variable.
type setter struct {
	values  []string
	unknown bool // a value known only at run time
}

// Variable attributes, from declare/local/typeset options.
const (
	attrAssoc byte = 1 << iota
	attrInt
	attrRef
)

// numericSpecial are the variables bash only ever gives numbers (whatever is assigned
// to them): their values evaluate to nothing else.
var numericSpecial = map[string]bool{
	"#": true, "?": true, "$": true, "!": true, "RANDOM": true, "SRANDOM": true,
	"SECONDS": true, "LINENO": true, "BASHPID": true, "PPID": true, "UID": true,
	"EUID": true, "EPOCHSECONDS": true, "OPTIND": true, "SHLVL": true,
	"BASH_SUBSHELL": true, "HISTCMD": true,
}

// integerSpecial are the variables whose assignments bash evaluates as arithmetic,
// as if they were declared -i.
var integerSpecial = map[string]bool{"RANDOM": true, "SRANDOM": true, "OPTIND": true, "HISTCMD": true}

// runtimeParam reports the parameters the script does not assign: positional ones
// ($1, $@, $*, $0) and $-, $_.
func runtimeParam(name string) bool {
	switch name {
	case "@", "*", "-", "_", "0":
		return true
	}
	return name != "" && name[0] >= '0' && name[0] <= '9'
}

// maxEvals bounds the evaluations of one document; maxResolve the names and values one
// evaluation is resolved to (beyond, it is dynamic).
const (
	maxEvals   = 1 << 14
	maxResolve = 64
)

// record adds an evaluation found at node n.
func (w *walker) record(kind string, n syntax.Node, sc scope, in *evalIn, cond byte, condName string) {
	w.recordText(kind, w.text(n), w.pos(n.Pos()), sc, in, cond, condName)
}

func (w *walker) recordText(kind, text string, p Pos, sc scope, in *evalIn, cond byte, condName string) {
	if w.err != nil {
		return
	}
	if len(w.evals) >= maxEvals {
		w.fail(fmt.Sprintf("more than %d evaluations", maxEvals), p)
		return
	}
	w.evals = append(w.evals, rawEval{
		ev: Evaluation{Kind: kind, Text: text, Command: w.owner, Via: sc.via, Context: sc.ctx,
			Pos: p, Dynamic: in.dynamic || sc.dynAll},
		inputs: in.inputs, texts: in.texts, cond: cond, condName: condName,
	})
}

// setterOf returns the setter of a variable, made on first use.
func (w *walker) setterOf(name string) *setter {
	if w.setters == nil {
		w.setters = map[string]*setter{}
	}
	s := w.setters[name]
	if s == nil {
		s = &setter{}
		w.setters[name] = s
	}
	return s
}

// numeric records that the assignment of index i assigns a number.
func (w *walker) numeric(i int) {
	if w.numericAssigns == nil {
		w.numericAssigns = map[int]bool{}
	}
	w.numericAssigns[i] = true
}

// numericWord reports a word that always expands to a number: arithmetic expansions,
// lengths (${#x}) and digits ($((i + 1)), "${#a[@]}", 1$((n))).
func numericWord(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.ArithmExp:
		case *syntax.ParamExp:
			if !p.Length || p.Excl {
				return false
			}
		case *syntax.Lit:
			if strings.Trim(p.Value, "0123456789") != "" {
				return false
			}
		case *syntax.DblQuoted:
			if !numericWord(p.Parts) {
				return false
			}
		default:
			return false
		}
	}
	return len(parts) > 0
}

// setNumeric records that a variable is given a number (by arithmetic, getopts'
// OPTIND, wait -p).
func (w *walker) setNumeric(name string) { w.setterOf(name) }

func (w *walker) setUnknown(name string) { w.setterOf(name).unknown = true }

func (w *walker) setValue(name, v string) {
	s := w.setterOf(name)
	s.values = append(s.values, v)
}

func (w *walker) setAttr(name string, a byte) {
	if w.attrs == nil {
		w.attrs = map[string]byte{}
	}
	w.attrs[name] |= a
}

// paramEval records what a parameter expansion evaluates: ${x@P}, ${x@E}, ${!x}, an
// array subscript, a substring offset or length. Inside an arithmetic expression being
// recorded, subscripts and slices are part of it.
func (w *walker) paramEval(p *syntax.ParamExp, sc scope) {
	if p.Param == nil {
		return
	}
	name := p.Param.Value
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil {
		var in evalIn
		switch w.staticWord(p.Exp.Word) {
		case "P":
			if p.Excl {
				in.dynamic = true // the value of whichever variable x names
			}
			in.add(name, modePrompt)
			w.record("prompt", p, sc, &in, 0, "")
		case "E":
			in.add(name, modeData)
			w.record("escape", p, sc, &in, 0, "")
		}
	}
	if p.Excl && p.Names == 0 && !allIndex(p.Index) {
		var in evalIn
		in.add(name, modeName)
		w.record("indirect", p, sc, &in, 0, "")
	}
	if w.inArith > 0 {
		return
	}
	if p.Index != nil && !allIndex(p.Index) {
		var in evalIn
		w.arithInputs(p.Index, &in)
		w.record("arithmetic", p, sc, &in, 'a', name)
	}
	if p.Slice != nil {
		var in evalIn
		w.arithInputs(p.Slice.Offset, &in)
		w.arithInputs(p.Slice.Length, &in)
		w.record("arithmetic", p, sc, &in, 0, "")
	}
}

// allIndex reports the subscripts @ and * (every element: nothing evaluated).
func allIndex(x syntax.ArithmExpr) bool {
	if x == nil {
		return false
	}
	wd, ok := x.(*syntax.Word)
	if !ok || len(wd.Parts) != 1 {
		return false
	}
	l, ok := wd.Parts[0].(*syntax.Lit)
	return ok && (l.Value == "@" || l.Value == "*")
}

// arithEval records an arithmetic expression ($(( )), (( )), let, for (( ))) and walks
// its substitutions, which run before it.
func (w *walker) arithEval(x syntax.ArithmExpr, n syntax.Node, sc scope) {
	if x == nil {
		return
	}
	var in evalIn
	w.arithInputs(x, &in)
	w.record("arithmetic", n, sc, &in, 0, "")
	w.inArith++
	w.arithSubsts(x, sc)
	w.inArith--
}

// arithInputs collects the variables an arithmetic expression reads and records those
// it assigns (numbers).
func (w *walker) arithInputs(x syntax.ArithmExpr, in *evalIn) {
	switch x := x.(type) {
	case *syntax.Word:
		w.arithWord(x.Parts, in)
	case *syntax.BinaryArithm:
		if isArithAssign(x.Op) {
			w.arithAssigned(x.X)
			if x.Op == syntax.Assgn && arithName(x.X) != "" {
				w.arithInputs(x.Y, in)
				return
			}
		}
		w.arithInputs(x.X, in)
		w.arithInputs(x.Y, in)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			w.arithAssigned(x.X)
		}
		w.arithInputs(x.X, in)
	case *syntax.ParenArithm:
		w.arithInputs(x.X, in)
	case *syntax.FlagsArithm:
		w.arithInputs(x.X, in)
	}
}

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
		syntax.ShrAssgn:
		return true
	}
	return false
}

// arithName is the variable an arithmetic operand names (x, or a in a[i]), or "".
func arithName(x syntax.ArithmExpr) string {
	wd, ok := x.(*syntax.Word)
	if !ok || len(wd.Parts) != 1 {
		return ""
	}
	switch p := wd.Parts[0].(type) {
	case *syntax.Lit:
		if isName(p.Value) {
			return p.Value
		}
	case *syntax.ParamExp:
		if p.Param != nil && !p.Dollar.IsValid() {
			return p.Param.Value
		}
	}
	return ""
}

// arithAssigned records that arithmetic assigns a number to the variable x names.
func (w *walker) arithAssigned(x syntax.ArithmExpr) {
	if n := arithName(x); n != "" {
		w.setNumeric(n)
	}
}

// arithWord collects the inputs of an arithmetic operand word.
func (w *walker) arithWord(parts []syntax.WordPart, in *evalIn) {
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			w.litInputs(p.Value, modeArith, in, false)
		case *syntax.SglQuoted:
			w.litInputs(p.Value, modeArith, in, true)
		case *syntax.DblQuoted:
			w.arithWord(p.Parts, in)
		case *syntax.ParamExp:
			w.paramInputs(p, modeArith, in)
		case *syntax.ArithmExp:
			w.arithInputs(p.X, in) // a number, from what it reads
		default: // command and process substitutions: their output is evaluated
			in.dynamic = true
		}
	}
}

// wordInputs collects the inputs of a word that is expanded and then evaluated in
// mode: an operand of [[ -eq ]] (arithmetic), the word of [[ -v ]] (a name).
func (w *walker) wordInputs(parts []syntax.WordPart, mode evalMode, in *evalIn) {
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			w.litInputs(p.Value, mode, in, strings.ContainsAny(p.Value, "\\$`"))
		case *syntax.SglQuoted:
			w.litInputs(p.Value, mode, in, true)
		case *syntax.DblQuoted:
			w.wordInputs(p.Parts, mode, in)
		case *syntax.ParamExp:
			w.paramInputs(p, mode, in)
		case *syntax.ArithmExp: // a number; recorded on its own
		default:
			in.dynamic = true
		}
	}
}

// litInputs collects the names in static text evaluated in mode; quoted text is kept
// whole as a text of the construct.
func (w *walker) litInputs(s string, mode evalMode, in *evalIn, keep bool) {
	if keep {
		in.texts = append(in.texts, s)
	}
	switch mode {
	case modeArith:
		arithNames(s, func(n string) { in.add(n, modeArith) })
	case modeName:
		subscriptNames(s, func(n string) { in.add(n, modeArith) })
	}
}

// paramInputs collects what a parameter expansion inside an evaluated word or
// expression reads.
func (w *walker) paramInputs(p *syntax.ParamExp, mode evalMode, in *evalIn) {
	if p.Param == nil {
		in.dynamic = true
		return
	}
	name := p.Param.Value
	if p.Index != nil && !allIndex(p.Index) {
		w.arithInputs(p.Index, in)
	}
	if p.Slice != nil {
		w.arithInputs(p.Slice.Offset, in)
		w.arithInputs(p.Slice.Length, in)
	}
	switch {
	case p.Length:
		return // a number
	case p.Excl, p.Names != 0:
		in.dynamic = true // the value of a variable named at run time
		return
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		if op := w.staticWord(p.Exp.Word); op == "P" || op == "E" {
			in.dynamic = true // decoded (and expanded) text
			return
		}
	case p.Exp != nil && p.Exp.Word != nil:
		w.wordInputs(p.Exp.Word.Parts, mode, in) // a default or alternate value
	case p.Repl != nil:
		if p.Repl.With != nil {
			w.wordInputs(p.Repl.With.Parts, mode, in)
		}
	}
	in.add(name, mode)
}

// arithNames calls fn for each variable name in arithmetic text, skipping numbers with
// their bases and digits (0x1f, 16#ff).
func arithNames(s string, fn func(string)) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			for i < len(s) && (isNameByte(s[i]) || s[i] == '#' || s[i] == '@') {
				i++
			}
		case isNameByte(c):
			j := i
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			fn(s[i:j])
			i = j
		default:
			i++
		}
	}
}

// subscriptNames calls fn for the names in the subscript of a variable name (a[i+1]).
func subscriptNames(s string, fn func(string)) {
	if i := strings.IndexByte(s, '['); i >= 0 {
		arithNames(s[i:], fn)
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isName reports a shell variable name.
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// testEval records the arithmetic comparisons and -v tests of [[ ]].
func (w *walker) testEval(x syntax.TestExpr, sc scope) {
	switch x := x.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			var in evalIn
			for _, y := range []syntax.TestExpr{x.X, x.Y} {
				if wd, ok := y.(*syntax.Word); ok {
					w.wordInputs(wd.Parts, modeArith, &in)
				}
			}
			w.record("arithmetic", x, sc, &in, 0, "")
			return
		}
		w.testEval(x.X, sc)
		w.testEval(x.Y, sc)
	case *syntax.UnaryTest:
		if wd, ok := x.X.(*syntax.Word); ok && x.Op == syntax.TsVarSet {
			var in evalIn
			w.wordInputs(wd.Parts, modeName, &in)
			if in.dynamic || len(in.inputs) > 0 || len(in.texts) > 0 || strings.Contains(w.text(wd), "[") {
				w.record("name", wd, sc, &in, 0, "")
			}
			return
		}
		w.testEval(x.X, sc)
	case *syntax.ParenTest:
		w.testEval(x.X, sc)
	}
}

// assignEval records the subscripts an assignment evaluates (a[i]=v, a=([i]=v)) unless
// the array is associative.
func (w *walker) assignEval(a *syntax.Assign, sc scope) {
	if a.Name == nil {
		return
	}
	if a.Index != nil {
		var in evalIn
		w.arithInputs(a.Index, &in)
		w.record("arithmetic", a.Index, sc, &in, 'a', a.Name.Value)
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				var in evalIn
				w.arithInputs(e.Index, &in)
				w.record("arithmetic", e.Index, sc, &in, 'a', a.Name.Value)
			}
		}
	}
}

// valueEval records the evaluations of a value assigned to name, which count only if
// name is an integer variable (arithmetic) or a nameref (a name), as the script may
// declare anywhere (finishEvals decides, cond 'v'). RANDOM, SRANDOM, OPTIND and HISTCMD
// evaluate what they are assigned whatever the script declares (word: the value's word,
// when the walker has one).
func (w *walker) valueEval(name string, as Assignment, word *syntax.Word, sc scope, p Pos) {
	if integerSpecial[name] {
		var in evalIn
		switch {
		case word != nil:
			w.wordInputs(word.Parts, modeArith, &in)
		case as.Dynamic:
			in.dynamic = true
		default:
			w.litInputs(as.Value, modeArith, &in, true)
		}
		w.recordText("arithmetic", as.Value, p, sc, &in, 0, "")
		return
	}
	in := evalIn{dynamic: as.Dynamic}
	w.recordText("", as.Value, p, sc, &in, 'v', name)
}

// builtinEval records what a builtin does with variable names: the names it evaluates
// (read, printf -v, wait -p, test -v, declare NAME=VALUE), the values it assigns, the
// attributes it declares, and whether it may set a variable named at run time.
func (w *walker) builtinEval(cmd *Command, fields []field, sc scope) {
	if cmd.DynamicName || cmd.FunctionCall || len(fields) == 0 {
		if cmd.DynamicName {
			w.anySet = true // it could be read, eval, source, declare ...
		}
		return
	}
	switch cmd.Path {
	case "read":
		w.readEval(cmd, fields, sc)
	case "printf":
		w.printfEval(cmd, fields, sc)
	case "mapfile", "readarray":
		names := operandsAfter(fields, "dnOsuCc")
		if len(names) == 0 {
			w.setUnknown("MAPFILE")
		}
		for _, f := range names {
			w.setName(cmd, f, sc, false)
		}
	case "getopts":
		if ops := operandsAfter(fields, ""); len(ops) > 1 {
			w.setName(cmd, ops[1], sc, false)
		}
		w.setUnknown("OPTARG")
	case "wait":
		for i := 1; i+1 < len(fields); i++ {
			if fields[i].val == "-p" && !fields[i].dynamic {
				w.nameEval(cmd, fields[i+1], sc)
				w.setNumeric(fields[i+1].val)
			}
		}
	case "test", "[":
		for i := 1; i+1 < len(fields); i++ {
			if fields[i].val == "-v" && !fields[i].dynamic {
				w.nameEval(cmd, fields[i+1], sc)
			}
		}
	case "declare", "typeset", "local", "export", "readonly":
		w.declEval(cmd, fields, sc)
	case "source", ".":
		if !(sc.stdin != nil && len(fields) > 1 && isStdinPath(fields[len(fields)-1])) {
			w.anySet = true // a file the parser does not read
		}
	case "unset":
		for _, f := range fields[1:] {
			if f.dynamic {
				w.anySet = true
			}
		}
	}
}

// operandsAfter returns the words after the options of a builtin, skipping the values
// of the option letters in withValue.
func operandsAfter(fields []field, withValue string) []field {
	i := 1
	for i < len(fields) {
		v := fields[i].val
		if fields[i].dynamic || len(v) < 2 || v[0] != '-' {
			break
		}
		i++
		if v == "--" {
			break
		}
		if strings.IndexByte(withValue, v[len(v)-1]) >= 0 {
			i++
		}
	}
	return fields[min(i, len(fields)):]
}

// nameEval records a variable name a builtin evaluates (its subscript), when it is
// known only at run time or has a subscript.
func (w *walker) nameEval(cmd *Command, f field, sc scope) {
	if !f.dynamic && !strings.Contains(f.val, "[") {
		return
	}
	var in evalIn
	if f.dynamic {
		in.dynamic = true
		w.anySet = true
	} else {
		w.litInputs(f.val, modeName, &in, true)
	}
	saved := w.owner
	w.owner = cmd.Index
	w.recordText("name", f.val, cmd.Pos, sc, &in, 0, "")
	w.owner = saved
}

// setName records a variable a builtin assigns at run time.
func (w *walker) setName(cmd *Command, f field, sc scope, evaluates bool) {
	if evaluates {
		w.nameEval(cmd, f, sc)
	}
	if f.dynamic {
		w.anySet = true
		return
	}
	w.setUnknown(baseName(f.val))
}

// baseName is a variable name without its subscript.
func baseName(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		return s[:i]
	}
	return s
}

// readEval: read [-ers] [-a ARRAY] [-d D] [-i T] [-n N] [-N N] [-p P] [-t T] [-u FD]
// [NAME...] evaluates the subscripts of its names; their values come from standard
// input, known when it is a static here-string or here-document.
func (w *walker) readEval(cmd *Command, fields []field, sc scope) {
	body, static := stdinText(cmd.Redirects)
	assign := func(name string) {
		if static {
			w.setValue(name, body)
		} else {
			w.setUnknown(name)
		}
	}
	names := operandsAfter(fields, "adinNptu")
	for i := 1; i+1 < len(fields); i++ {
		v := fields[i].val
		if fields[i].dynamic || len(v) < 2 || v[0] != '-' || v == "--" {
			break
		}
		if v[len(v)-1] == 'a' {
			if fields[i+1].dynamic {
				w.anySet = true
			} else {
				assign(baseName(fields[i+1].val))
			}
		}
	}
	if len(names) == 0 {
		assign("REPLY")
	}
	for _, f := range names {
		w.nameEval(cmd, f, sc)
		if f.dynamic {
			w.anySet = true
			continue
		}
		assign(baseName(f.val))
	}
}

// stdinText is the text a command reads when all its redirections of standard input
// are static here-strings or here-documents.
func stdinText(rs []Redirect) (string, bool) {
	var bodies []string
	for _, r := range rs {
		if r.Fd != 0 {
			continue
		}
		switch r.Op {
		case "<<<", "<<", "<<-":
			if r.Dynamic {
				return "", false
			}
			bodies = append(bodies, r.Body)
		default:
			return "", false
		}
	}
	if len(bodies) == 0 {
		return "", false
	}
	return strings.Join(bodies, "\n"), true
}

// printfEval: printf -v NAME FORMAT [ARGS] evaluates NAME's subscript and assigns the
// formatted text: known when the format and arguments are static, given as their text
// with printf's escapes decoded both ways (\NNN in the format, \0NNN in %b arguments).
func (w *walker) printfEval(cmd *Command, fields []field, sc scope) {
	var name *field
	i := 1
	for i < len(fields) {
		v := fields[i].val
		if fields[i].dynamic || len(v) < 2 || v[0] != '-' {
			break
		}
		i++
		if v == "--" {
			break
		}
		if strings.HasPrefix(v, "-v") {
			if len(v) > 2 {
				f := subField(fields[i-1], 2)
				name = &f
			} else if i < len(fields) {
				name = &fields[i]
				i++
			}
		}
	}
	if name == nil {
		return
	}
	w.nameEval(cmd, *name, sc)
	if name.dynamic {
		w.anySet = true
		return
	}
	n := baseName(name.val)
	rest := fields[min(i, len(fields)):]
	texts := make([]string, 0, len(rest))
	for _, f := range rest {
		if f.dynamic {
			w.setUnknown(n)
			return
		}
		texts = append(texts, f.val)
	}
	raw := strings.Join(texts, " ")
	w.setValue(n, raw)
	w.setValue(n, w.decodeEscapes(raw))
	w.setValue(n, w.decodeEscapes(strings.ReplaceAll(raw, `\0`, `\`)))
}

// decodeEscapes decodes backslash escapes as $'…' does.
func (w *walker) decodeEscapes(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	e := evaluator{w: w}
	e.ansiC(s)
	return string(e.buf)
}

// declEval: declare/typeset/local [-aAinr...] NAME[=VALUE]: the attributes, and the
// names known only at run time or with a subscript, whose subscript declare, typeset
// and local evaluate (export and readonly do not).
func (w *walker) declEval(cmd *Command, fields []field, sc scope) {
	var attrs byte
	opts := true
	for _, f := range fields[1:] {
		v := f.val
		if opts && !f.dynamic && len(v) > 1 && (v[0] == '-' || v[0] == '+') {
			if v == "--" {
				opts = false
				continue
			}
			if v[0] == '-' {
				for _, c := range v[1:] {
					switch c {
					case 'A':
						attrs |= attrAssoc
					case 'i':
						attrs |= attrInt
					case 'n':
						attrs |= attrRef
					}
				}
			}
			continue
		}
		opts = false
		name, _, eq := strings.Cut(v, "=")
		if f.dynamic && (!eq || f.dynAt <= len(name)) {
			w.anySet = true
			if cmd.Path != "export" && cmd.Path != "readonly" {
				w.nameEval(cmd, field{val: v, dynamic: true}, sc)
			}
			continue
		}
		if eq && strings.Contains(name, "[") && cmd.Path != "export" && cmd.Path != "readonly" {
			w.nameEval(cmd, field{val: name}, sc)
		}
		if attrs != 0 {
			w.setAttr(baseName(name), attrs)
		}
	}
	if cmd.Path == "nameref" || attrs&attrRef != 0 {
		w.anySet = true // assignments through a nameref set another variable
	}
}

// finishEvals resolves the recorded evaluations into Document.Evaluations.
func (w *walker) finishEvals() {
	if len(w.evals) == 0 {
		return
	}
	set := make(map[string]*setter, len(w.setters)+len(w.doc.Assignments))
	for k, s := range w.setters {
		cp := *s
		set[k] = &cp
	}
	for i, a := range w.doc.Assignments {
		s := set[a.Name]
		if s == nil {
			s = &setter{}
			set[a.Name] = s
		}
		if w.numericAssigns[i] && !a.Append {
			continue // a number
		}
		if a.Dynamic || a.Append {
			s.unknown = true
			continue
		}
		s.values = append(s.values, a.Value)
	}
	out := make([]Evaluation, 0, len(w.evals))
	add := func(r *rawEval, kind string) {
		ev := r.ev
		if kind != "" {
			ev.Kind = kind
		}
		ev.Names, ev.Values = []string{}, []string{}
		ev.Values = append(ev.Values, r.texts...)
		w.resolveEval(r.inputs, set, &ev)
		slices.Sort(ev.Names)
		slices.Sort(ev.Values)
		ev.Values = slices.Compact(ev.Values)
		out = append(out, ev)
	}
	for i := range w.evals {
		r := &w.evals[i]
		attr := w.attrs[r.condName]
		switch r.cond {
		case 'a':
			if attr&attrAssoc == 0 {
				add(r, "")
			}
		case 'v':
			for _, k := range []struct {
				attr byte
				kind string
				mode evalMode
			}{{attrInt, "arithmetic", modeArith}, {attrRef, "nameref", modeName}} {
				if attr&k.attr == 0 {
					continue
				}
				v := *r
				if !r.ev.Dynamic {
					var in evalIn
					w.litInputs(r.ev.Text, k.mode, &in, true)
					v.inputs, v.texts = in.inputs, in.texts
				}
				add(&v, k.kind)
			}
		default:
			add(r, "")
		}
	}
	w.doc.Evaluations = out
}

// resolveEval follows the inputs of an evaluation through the static values of the
// variables they name.
func (w *walker) resolveEval(inputs []evalInput, set map[string]*setter, ev *Evaluation) {
	seen := map[string]evalMode{}
	queue := slices.Clone(inputs)
	for len(queue) > 0 {
		in := queue[0]
		queue = queue[1:]
		if seen[in.name]&in.mode != 0 {
			continue
		}
		if _, ok := seen[in.name]; !ok {
			ev.Names = append(ev.Names, in.name)
		}
		seen[in.name] |= in.mode
		if len(ev.Names) > maxResolve || len(ev.Values) > maxResolve {
			ev.Dynamic = true
			return
		}
		s := set[in.name]
		if s == nil || s.unknown || w.anySet {
			ev.Dynamic = true
		}
		if s == nil {
			continue
		}
		for _, v := range s.values {
			ev.Values = append(ev.Values, v)
			next := func(n string) {
				if !numericSpecial[n] {
					queue = append(queue, evalInput{n, modeArith})
				}
			}
			switch in.mode {
			case modeArith:
				arithNames(v, next)
			case modeName:
				subscriptNames(v, next)
			}
		}
	}
}
