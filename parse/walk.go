package parse

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// walker turns syntax trees into the document. It is used once, by one goroutine.
type walker struct {
	doc      *Document
	maxDepth int
	maxBytes int
	words    int // words of all commands so far (bounded by maxWords)
	nested   int // bytes of re-parsed scripts so far
	pipes    int // pipelines numbered so far
	err      *Error

	top string // the top-level script (for positions past the parser's column range)
	src string // the text the nodes being walked come from
	at  *Pos   // when set, the position of every command (argv, re-parsed scripts)

	ws    string   // cleaned workspace, "" when unset
	dirs  dirState // where the shell being walked may be
	succ  dirState // where it is if the last command succeeded (valid when succOK)
	succK bool

	fileTree *syntax.File    // the tree being walked, for the lazy changesDir scan
	fileDirs int8            // 0 not scanned, 1 the tree changes directory, -1 it does not
	funcs    map[string]bool // functions defined anywhere so far: whether one may change directory
	cdpath   bool            // the script assigns CDPATH: relative cd targets may go anywhere

	fns   funcSet     // functions certainly defined here, in the shell being walked (funcs.go)
	shell *shellFuncs // what may remove functions in that shell

	buf []byte // scratch for word evaluation

	// Evaluations (evaluate.go).
	evals   []rawEval          // found so far, resolved by finishEvals
	setters map[string]*setter // what env prefixes, arithmetic and builtins assign
	attrs   map[string]byte    // declared attributes (-A, -i, -n) by variable
	anySet  bool               // something may assign any variable unseen
	owner   int                // the command whose words are being walked, -1 for none
	inArith int                // inside a recorded arithmetic expression

	optChunk []Option // the array the options lists of the document share

	numericAssigns map[int]bool // assignments (by index) whose value is a number
}

// scope is what commands inherit from where they sit.
type scope struct {
	ctx    Context
	via    []string
	redirs []redir           // redirections of the enclosing compound commands or wrapper
	env    map[string]string // environment given by an outer command (wrapper, A=1 bash -c)
	envDyn bool              // env has run-time values
	depth  int               // nesting level
	dynAll bool              // inside a script re-parsed from text with run-time parts
	same   bool              // commands run in the shell being walked (their cd counts)
	stdin  *field            // the here-document or here-string on standard input, if any
	lookup bool              // the command is a simple command of the shell: it may call a function
}

func newWalker(doc *Document, opts Options, src string) *walker {
	w := &walker{
		doc:      doc,
		maxDepth: opts.MaxDepth,
		maxBytes: opts.MaxBytes,
		top:      src,
		src:      src,
		ws:       doc.Request.Workspace,
		owner:    -1,
	}
	if doc.Request.Cwd != "" {
		w.dirs = dirState{list: []string{doc.Request.Cwd}}
	}
	return w
}

func (w *walker) topScope() scope {
	return scope{ctx: Context{PipelineID: -1}, via: []string{}, same: true}
}

func (w *walker) finish() *Document {
	if w.err != nil {
		return fail(w.doc, w.err.Message, w.err.Line, w.err.Col)
	}
	w.finishEvals()
	return w.doc
}

// fail records the first error; walking stops as soon as one is recorded.
func (w *walker) fail(msg string, p Pos) {
	if w.err == nil {
		w.err = &Error{Message: msg, Line: p.Line, Col: p.Col}
	}
}

// pos converts a parser position. Inside re-parsed scripts every command gets the position
// of the outer command.
func (w *walker) pos(p syntax.Pos) Pos {
	if w.at != nil {
		return *w.at
	}
	line, col := int(p.Line()), int(p.Col())
	if line == 0 || col == 0 { // beyond the parser's line or column range
		line, col = offsetPos(w.top, int(p.Offset()))
	}
	return Pos{Line: line, Col: col}
}

// deeper enters one nesting level, failing past MaxDepth.
func (w *walker) deeper(sc *scope, p Pos) bool {
	sc.depth++
	if sc.depth > w.maxDepth {
		w.fail(fmt.Sprintf("nesting deeper than %d levels", w.maxDepth), p)
		return false
	}
	return true
}

// file walks a whole tree (the script, or a re-parsed nested script).
func (w *walker) file(f *syntax.File, sc scope) {
	if cap(w.doc.Commands) == 0 {
		// A guess at the number of commands, to grow the list once at most.
		n := len(f.Stmts) + strings.Count(w.src, "|") + strings.Count(w.src, "&&") + strings.Count(w.src, "$(")
		w.doc.Commands = make([]Command, 0, min(n, 1024))
	}
	savedTree, savedDirs := w.fileTree, w.fileDirs
	w.fileTree, w.fileDirs = f, 0
	w.stmts(f.Stmts, sc)
	w.fileTree, w.fileDirs = savedTree, savedDirs
}

func (w *walker) stmts(list []*syntax.Stmt, sc scope) {
	for _, s := range list {
		if w.err != nil {
			return
		}
		w.stmt(s, sc)
	}
}

func (w *walker) stmt(s *syntax.Stmt, sc scope) {
	if w.err != nil {
		return
	}
	if s.Background || s.Coprocess || s.Disown {
		// A background job runs in a subshell: its cd does not reach the rest.
		w.doc.Features.Background = true
		sc.ctx.Background = true
		saved, fns := w.dirs, w.fns
		defer func() { w.dirs, w.succK, w.fns = saved, false, fns }()
	}
	if s.Negated {
		// `! cmd` succeeds when cmd fails: where its success would leave the shell is unknown.
		defer func() { w.succK = false }()
	}
	own := w.redirects(s.Redirs, sc.dynAll)
	sc.stdin = stdinOf(own, sc.stdin)
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(c, s, own, sc)
	case *syntax.DeclClause:
		w.decl(c, s, own, sc)
	case *syntax.LetClause:
		w.let(c, s, own, sc)
	case *syntax.TimeClause:
		w.time(c, s, own, sc)
	case nil:
		// Only redirections (`> f`): still an entry, as the file is created or truncated.
		if len(own) > 0 {
			w.command(nil, w.inheritedEnv(sc), sc.envDyn, w.combine(own, sc.redirs), sc, w.pos(s.Pos()), false)
		}
		w.redirSubsts(s.Redirs, sc)
	default:
		inner := sc
		inner.redirs = w.combine(own, sc.redirs)
		w.compound(s.Cmd, inner)
		if b, ok := s.Cmd.(*syntax.BinaryCmd); !ok || b.Op != syntax.AndStmt || len(s.Redirs) > 0 {
			w.succK = false // only an && list passes on where its success leaves the shell
		}
		if len(s.Redirs) > 0 {
			w.redirSubsts(s.Redirs, sc)
		}
	}
}

// stdinOf is the here-document or here-string standard input comes from after a
// statement's own redirections (the last one on descriptor 0 wins), or nil when it comes
// from a file or descriptor.
func stdinOf(own []redir, inherited *field) *field {
	st := inherited
	for i := range own {
		switch own[i].stdin {
		case 1:
			st = nil
		case 2:
			st = &own[i].body
		}
	}
	return st
}

// combine returns the command's own redirections followed by the inherited ones.
func (w *walker) combine(own, inherited []redir) []redir {
	if len(inherited) == 0 {
		return own
	}
	if len(own) == 0 {
		return inherited
	}
	return slices.Concat(own, inherited)
}

func (w *walker) compound(cmd syntax.Command, sc scope) {
	switch c := cmd.(type) {
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			w.pipeline(c, sc)
		case syntax.AndStmt:
			// Y runs only if X succeeded; the most likely outcome is that both did.
			w.stmt(c.X, sc)
			anyX, fns := w.dirs, w.fns
			if w.succK {
				w.dirs = w.succ
			}
			w.stmt(c.Y, sc)
			succ, succK := w.succ, w.succK
			w.dirs = w.dirs.union(anyX)
			w.succ, w.succK = succ, succK // the success of X && Y is Y's
			w.fns = fns                   // Y may not have run
		default: // ||: Y runs only if X failed; the most likely outcome is that X succeeded.
			w.stmt(c.X, sc)
			anyX, fns := w.dirs, w.fns
			w.stmt(c.Y, sc)
			w.dirs = anyX.union(w.dirs)
			w.succK = false
			w.fns = fns
		}
	case *syntax.Subshell:
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		sc.ctx.Subshell = true
		saved, fns := w.dirs, w.fns
		w.stmts(c.Stmts, sc)
		w.dirs, w.fns = saved, fns
	case *syntax.Block:
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		w.stmts(c.Stmts, sc)
	case *syntax.IfClause:
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		var out dirState
		first := true
		fns := w.fns
		for ic := c; ic != nil && w.err == nil; ic = ic.Else {
			w.fns = fns // each branch: only what its own condition defined
			cond := sc
			cond.ctx.Condition = true
			w.succK = false
			before := w.dirs
			w.stmts(ic.Cond, cond)
			// The next branch runs when the condition failed: most likely where it began.
			otherwise := before.union(w.dirs)
			if len(ic.Cond) > 0 && w.succK {
				w.dirs = w.succ
			}
			w.stmts(ic.Then, sc)
			if first {
				out = w.dirs
				first = false
			} else {
				out = out.union(w.dirs)
			}
			w.dirs = otherwise
			if ic.Else == nil && len(ic.Cond) > 0 { // no else: the condition may fail
				out = out.union(otherwise)
			}
		}
		w.dirs, w.fns = out, fns
	case *syntax.WhileClause:
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		w.loop(c, sc, func() {
			cond := sc
			cond.ctx.Condition = true
			w.stmts(c.Cond, cond)
			w.stmts(c.Do, sc)
		})
	case *syntax.ForClause:
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		w.loop(c, sc, func() {
			switch l := c.Loop.(type) {
			case *syntax.WordIter:
				w.loopVar(l, c.Select, sc)
			case *syntax.CStyleLoop:
				w.arithEval(l.Init, l.Init, sc)
				w.arithEval(l.Cond, l.Cond, sc)
				w.arithEval(l.Post, l.Post, sc)
			}
			w.stmts(c.Do, sc)
		})
	case *syntax.CaseClause:
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		w.wordSubsts(c.Word, sc)
		start, fns := w.dirs, w.fns
		out := start
		for _, item := range c.Items {
			w.dirs, w.fns = start, fns
			for _, p := range item.Patterns {
				w.wordSubsts(p, sc)
			}
			w.stmts(item.Stmts, sc)
			out = out.union(w.dirs)
		}
		w.dirs, w.fns = out, fns
	case *syntax.FuncDecl:
		if b, ok := c.Body.Cmd.(*syntax.BinaryCmd); ok {
			// mvdan.cc/sh reads `f() { :; } && g` (or `|| g`, `| g`) as a function whose
			// body is `{ :; } && g`; bash defines f, then runs g. A body is never a list.
			w.compound(splitFuncDecl(c, b), sc)
			return
		}
		w.doc.Features.FunctionDefinition = true
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		sc.ctx.Function = true
		name := ""
		if c.Name != nil {
			name = c.Name.Value
			if w.funcs == nil {
				w.funcs = map[string]bool{}
			}
			// Any of the definitions of a name may be the one that runs.
			w.funcs[name] = w.changesDir(c.Body) || w.funcs[name]
		}
		// The body runs when called, from wherever the script is then, with the functions
		// defined by then (itself included).
		saved, fns := w.dirs, w.fns
		w.dirs = w.laterDirs()
		register := name != "" && !sc.dynAll && funcName(name)
		if register {
			w.fns = w.fns.with(name)
		}
		w.stmt(c.Body, sc)
		w.dirs, w.fns = saved, fns
		if register {
			w.fns = w.fns.with(name)
		}
	case *syntax.ArithmCmd:
		w.arithEval(c.X, c, sc)
	case *syntax.TestClause:
		w.testEval(c.X, sc)
		w.testSubsts(c.X, sc)
	case *syntax.CoprocClause:
		w.doc.Features.Background = true
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		sc.ctx.Background = true
		saved, fns := w.dirs, w.fns
		w.stmt(c.Stmt, sc)
		w.dirs, w.fns = saved, fns
	case *syntax.TestDecl:
		if !w.deeper(&sc, w.pos(c.Pos())) {
			return
		}
		fns := w.fns
		w.wordSubsts(c.Description, sc)
		w.stmt(c.Body, sc)
		w.fns = fns
	}
}

// splitFuncDecl turns the function fd whose body was read as the list b into that list,
// with the definition of fd (with the list's first statement for body) in place of its
// first statement. The tree is copied, not changed.
func splitFuncDecl(fd *syntax.FuncDecl, b *syntax.BinaryCmd) *syntax.BinaryCmd {
	nb := *b
	if xb, ok := b.X.Cmd.(*syntax.BinaryCmd); ok {
		nx := *b.X
		nx.Cmd = splitFuncDecl(fd, xb)
		nb.X = &nx
		return &nb
	}
	def := *fd
	def.Body = b.X
	nb.X = &syntax.Stmt{Position: fd.Pos(), Cmd: &def}
	return &nb
}

// pipeline walks the stages of a pipeline with 2+ stages. Each stage runs in a subshell.
func (w *walker) pipeline(c *syntax.BinaryCmd, sc scope) {
	stages := pipeStages(c, make([]*syntax.Stmt, 0, 4))
	id := w.pipes
	w.pipes++
	saved, fns := w.dirs, w.fns
	for i, st := range stages {
		s := sc
		s.ctx.Pipeline = true
		s.ctx.PipelineID = id
		s.ctx.Stage = i
		if i > 0 {
			s.stdin = nil // the pipe
		}
		w.dirs, w.fns = saved, fns
		w.stmt(st, s)
	}
	w.dirs, w.fns = saved, fns
	w.succK = false
}

// pipeStages flattens `a | b | c` (parsed as ((a | b) | c)) into its stages.
func pipeStages(c *syntax.BinaryCmd, dst []*syntax.Stmt) []*syntax.Stmt {
	for _, s := range [2]*syntax.Stmt{c.X, c.Y} {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) &&
			len(s.Redirs) == 0 && !s.Negated && !s.Background {
			dst = pipeStages(b, dst)
			continue
		}
		dst = append(dst, s)
	}
	return dst
}

// loop walks a loop body. When the loop may change directory, later iterations start
// elsewhere: the whole loop, and what follows, runs in an unknown directory.
func (w *walker) loop(n syntax.Node, sc scope, body func()) {
	if !w.dirs.unknown() && w.changesDir(n) {
		w.dirs = dirState{}
	}
	fns := w.fns
	body()
	w.succK = false
	w.fns = fns // the body may not have run
}

// loopVar records the loop variable's assignments and walks the items' substitutions.
func (w *walker) loopVar(l *syntax.WordIter, sel bool, sc scope) {
	p := w.pos(l.Name.Pos())
	if !l.InPos.IsValid() { // for x; do …: the positional parameters
		w.addAssign(Assignment{Name: l.Name.Value, Value: `"$@"`, Dynamic: true}, sc, p, nil)
	}
	var fields []field
	for _, item := range l.Items {
		fields = w.wordFields(item, fields[:0])
		for _, f := range fields {
			w.addAssign(Assignment{Name: l.Name.Value, Value: f.val, Dynamic: f.dynamic || f.glob || f.tilde}, sc, p, nil)
		}
		w.wordSubsts(item, sc)
	}
	_ = sel // select assigns one of the items, like for
}

// call handles a simple command.
func (w *walker) call(c *syntax.CallExpr, s *syntax.Stmt, own []redir, sc scope) {
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			w.assign(a, sc)
		}
		saved := w.owner
		w.owner = -1
		if len(own) > 0 {
			w.owner = len(w.doc.Commands)
			w.command(nil, w.inheritedEnv(sc), sc.envDyn, w.combine(own, sc.redirs), sc, w.pos(s.Pos()), false)
		}
		w.callSubsts(c, s, sc)
		w.owner = saved
		return
	}
	saved := w.owner
	w.owner = len(w.doc.Commands)
	defer func() { w.owner = saved }()
	env, envDyn := w.env(c.Assigns, sc)
	fields := make([]field, 0, len(c.Args))
	for _, a := range c.Args {
		fields = w.wordFields(a, fields)
	}
	if w.err != nil {
		return
	}
	before := w.dirs
	call := sc
	call.lookup = true
	w.command(fields, env, envDyn, w.combine(own, sc.redirs), call, w.pos(c.Pos()), false)
	// Substitutions run before the command, in a subshell of the shell before it.
	after, succ, succK := w.dirs, w.succ, w.succK
	w.dirs = before
	w.callSubsts(c, s, sc)
	w.dirs, w.succ, w.succK = after, succ, succK
}

// callSubsts walks the substitutions of a simple command's words in source order.
func (w *walker) callSubsts(c *syntax.CallExpr, s *syntax.Stmt, sc scope) {
	if len(s.Redirs) == 0 || len(c.Args) == 0 || s.Redirs[0].Pos().After(c.Args[len(c.Args)-1].Pos()) {
		for _, a := range c.Assigns {
			w.assignSubsts(a, sc)
		}
		for _, a := range c.Args {
			w.wordSubsts(a, sc)
		}
		w.redirSubsts(s.Redirs, sc)
		return
	}
	// Redirections mixed with words (`> $(a) cmd $(b)`): sort by position.
	nodes := make([]syntax.Node, 0, len(c.Assigns)+len(c.Args)+len(s.Redirs))
	for _, a := range c.Assigns {
		nodes = append(nodes, a)
	}
	for _, a := range c.Args {
		nodes = append(nodes, a)
	}
	for _, r := range s.Redirs {
		nodes = append(nodes, r)
	}
	slices.SortStableFunc(nodes, func(a, b syntax.Node) int {
		return int(a.Pos().Offset()) - int(b.Pos().Offset())
	})
	for _, n := range nodes {
		switch n := n.(type) {
		case *syntax.Assign:
			w.assignSubsts(n, sc)
		case *syntax.Word:
			w.wordSubsts(n, sc)
		case *syntax.Redirect:
			w.redirSubsts([]*syntax.Redirect{n}, sc)
		}
	}
}

// env evaluates a command's leading assignments on top of the inherited environment.
func (w *walker) env(assigns []*syntax.Assign, sc scope) (map[string]string, bool) {
	env := w.inheritedEnv(sc)
	dyn := sc.envDyn
	for _, a := range assigns {
		if a.Name == nil {
			continue
		}
		var f field
		switch {
		case a.Array != nil:
			f = field{val: w.text(a.Array), dynamic: w.arrayDynamic(a.Array)}
		case a.Value != nil:
			f = w.evalWord(a.Value.Parts, a.Value.Pos())
		}
		if a.Append {
			f.val = env[a.Name.Value] + f.val
		}
		env[a.Name.Value] = f.val
		dyn = dyn || f.dynamic || f.tilde
		as := Assignment{Name: a.Name.Value, Value: f.val, Dynamic: f.dynamic || f.tilde || sc.dynAll}
		switch {
		case as.Dynamic && a.Value != nil && !a.Append && !sc.dynAll && numericWord(a.Value.Parts):
			w.setNumeric(as.Name)
		case as.Dynamic || a.Append:
			w.setUnknown(as.Name)
		default:
			w.setValue(as.Name, as.Value)
		}
		if a.Array == nil {
			w.valueEval(as.Name, as, a.Value, sc, w.pos(a.Pos()))
		}
	}
	return env, dyn
}

// inheritedEnv returns a fresh copy of the environment the scope passes on.
func (w *walker) inheritedEnv(sc scope) map[string]string {
	env := make(map[string]string, len(sc.env))
	for k, v := range sc.env {
		env[k] = v
	}
	return env
}

// assign records a standalone (or declaration) assignment.
func (w *walker) assign(a *syntax.Assign, sc scope) {
	if a.Name == nil || (a.Naked && a.Value == nil && a.Array == nil) {
		return
	}
	as := Assignment{Name: a.Name.Value, Append: a.Append}
	switch {
	case a.Array != nil:
		as.Value = w.text(a.Array)
		as.Dynamic = w.arrayDynamic(a.Array)
	case a.Value != nil:
		f := w.evalWord(a.Value.Parts, a.Value.Pos())
		as.Value, as.Dynamic = f.val, f.dynamic || f.tilde
	}
	word := a.Value
	if a.Array != nil {
		word = nil
	}
	w.addAssign(as, sc, w.pos(a.Pos()), word)
	if word != nil && as.Dynamic && !sc.dynAll && numericWord(word.Parts) {
		w.numeric(len(w.doc.Assignments) - 1) // i=$((i + 1)): a number, whatever i holds
	}
}

// addAssign records an assignment, and what its value evaluates when the variable is
// an integer or a nameref (word: the value's word, when there is one).
func (w *walker) addAssign(as Assignment, sc scope, p Pos, word *syntax.Word) {
	if w.err != nil {
		return
	}
	w.valueEval(as.Name, as, word, sc, p)
	if as.Name == "CDPATH" {
		w.cdpath = true
	}
	as.Dynamic = as.Dynamic || sc.dynAll
	as.Via = sc.via
	as.Context = sc.ctx
	as.Pos = p
	w.doc.Assignments = append(w.doc.Assignments, as)
}

// decl handles export/declare/local/readonly/typeset/nameref: a command named so whose
// NAME=VALUE words are also recorded as assignments.
func (w *walker) decl(d *syntax.DeclClause, s *syntax.Stmt, own []redir, sc scope) {
	saved := w.owner
	w.owner = len(w.doc.Commands)
	defer func() { w.owner = saved }()
	fields := []field{{val: d.Variant.Value}}
	for _, a := range d.Args {
		switch {
		case a.Name == nil && a.Value != nil: // an option or a word known only at run time
			fields = w.wordFields(a.Value, fields)
		case a.Naked || a.Array != nil || a.Value == nil:
			f := field{val: w.text(a), dynamic: a.Array != nil && w.arrayDynamic(a.Array)}
			if f.dynamic { // the run-time part is in the array, after NAME=
				f.dynAt = len(w.slice(a.Pos(), a.Array.Pos()))
			}
			fields = append(fields, f)
			w.assign(a, sc)
		default:
			prefix := w.slice(a.Pos(), a.Value.Pos())
			f := w.evalWord(a.Value.Parts, a.Value.Pos())
			f.val = prefix + f.val
			f.dynAt += len(prefix)
			fields = append(fields, f)
			w.assign(a, sc)
		}
	}
	if w.err != nil {
		return
	}
	before := w.dirs
	w.command(fields, w.inheritedEnv(sc), sc.envDyn, w.combine(own, sc.redirs), sc, w.pos(d.Pos()), false)
	w.dirs = before
	for _, a := range d.Args {
		w.assignSubsts(a, sc)
	}
	w.redirSubsts(s.Redirs, sc)
}

// let handles the let builtin: a command whose words are the expressions' source text.
func (w *walker) let(l *syntax.LetClause, s *syntax.Stmt, own []redir, sc scope) {
	fields := []field{{val: "let"}}
	for _, x := range l.Exprs {
		t := w.text(x)
		f := field{val: t}
		for i := 0; i < len(t); i++ {
			if t[i] == '$' || t[i] == '`' {
				f.dynamic, f.dynAt = true, i
				break
			}
		}
		fields = append(fields, f)
	}
	saved := w.owner
	w.owner = len(w.doc.Commands)
	w.command(fields, w.inheritedEnv(sc), sc.envDyn, w.combine(own, sc.redirs), sc, w.pos(l.Pos()), false)
	for _, x := range l.Exprs {
		w.arithEval(x, x, sc)
	}
	w.redirSubsts(s.Redirs, sc)
	w.owner = saved
}

// time handles the bash `time` keyword: an entry named time, and the timed pipeline with
// "time" in its via.
func (w *walker) time(t *syntax.TimeClause, s *syntax.Stmt, own []redir, sc scope) {
	redirs := w.combine(own, sc.redirs)
	fields := []field{{val: "time"}}
	if t.PosixFormat {
		fields = append(fields, field{val: "-p"})
	}
	p := w.pos(t.Pos())
	w.command(fields, w.inheritedEnv(sc), sc.envDyn, redirs, sc, p, false)
	if t.Stmt != nil {
		inner := sc
		if !w.deeper(&inner, p) {
			return
		}
		inner.via = appendVia(sc.via, "time")
		inner.redirs = redirs
		w.stmt(t.Stmt, inner)
	}
	w.redirSubsts(s.Redirs, sc)
}

func appendVia(via []string, name string) []string {
	out := make([]string, len(via)+1)
	copy(out, via)
	out[len(via)] = name
	return out
}

// subst walks the statements of a command or process substitution.
func (w *walker) subst(stmts []*syntax.Stmt, p syntax.Pos, sc scope, proc bool) {
	if proc {
		w.doc.Features.ProcessSubstitution = true
	} else {
		w.doc.Features.CommandSubstitution = true
	}
	if !w.deeper(&sc, w.pos(p)) {
		return
	}
	sc.ctx.Substitution = true
	saved, succ, succK, fns := w.dirs, w.succ, w.succK, w.fns
	w.stmts(stmts, sc)
	w.dirs, w.succ, w.succK, w.fns = saved, succ, succK, fns
}

// wordSubsts walks the substitutions inside a word, and records ${A:=b} assignments.
func (w *walker) wordSubsts(word *syntax.Word, sc scope) {
	if word != nil {
		w.partsSubsts(word.Parts, sc)
	}
}

func (w *walker) partsSubsts(parts []syntax.WordPart, sc scope) {
	for _, part := range parts {
		if w.err != nil {
			return
		}
		switch p := part.(type) {
		case *syntax.DblQuoted:
			w.partsSubsts(p.Parts, sc)
		case *syntax.CmdSubst:
			w.subst(p.Stmts, p.Pos(), sc, false)
		case *syntax.ProcSubst:
			w.subst(p.Stmts, p.Pos(), sc, true)
		case *syntax.ArithmExp:
			w.arithEval(p.X, p, sc)
		case *syntax.ParamExp:
			w.paramEval(p, sc)
			w.paramSubsts(p, sc)
		case *syntax.BraceExp:
			for _, e := range p.Elems {
				w.wordSubsts(e, sc)
			}
		}
	}
}

func (w *walker) paramSubsts(p *syntax.ParamExp, sc scope) {
	if p.NestedParam != nil {
		w.partsSubsts([]syntax.WordPart{p.NestedParam}, sc)
	}
	w.arithSubsts(p.Index, sc)
	if p.Slice != nil {
		w.arithSubsts(p.Slice.Offset, sc)
		w.arithSubsts(p.Slice.Length, sc)
	}
	if p.Repl != nil {
		w.wordSubsts(p.Repl.Orig, sc)
		w.wordSubsts(p.Repl.With, sc)
	}
	if p.Exp != nil {
		if p.Param != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) {
			as := Assignment{Name: p.Param.Value, Dynamic: true}
			if p.Exp.Word != nil {
				f := w.evalWord(p.Exp.Word.Parts, p.Exp.Word.Pos())
				as.Value = f.val
			}
			w.addAssign(as, sc, w.pos(p.Pos()), nil)
		}
		w.wordSubsts(p.Exp.Word, sc)
	}
}

func (w *walker) arithSubsts(x syntax.ArithmExpr, sc scope) {
	switch x := x.(type) {
	case *syntax.Word:
		w.wordSubsts(x, sc)
	case *syntax.BinaryArithm:
		w.arithSubsts(x.X, sc)
		w.arithSubsts(x.Y, sc)
	case *syntax.UnaryArithm:
		w.arithSubsts(x.X, sc)
	case *syntax.ParenArithm:
		w.arithSubsts(x.X, sc)
	case *syntax.FlagsArithm:
		w.arithSubsts(x.X, sc)
	}
}

func (w *walker) testSubsts(x syntax.TestExpr, sc scope) {
	switch x := x.(type) {
	case *syntax.Word:
		w.wordSubsts(x, sc)
	case *syntax.BinaryTest:
		w.testSubsts(x.X, sc)
		w.testSubsts(x.Y, sc)
	case *syntax.UnaryTest:
		w.testSubsts(x.X, sc)
	case *syntax.ParenTest:
		w.testSubsts(x.X, sc)
	}
}

func (w *walker) assignSubsts(a *syntax.Assign, sc scope) {
	w.assignEval(a, sc)
	w.arithSubsts(a.Index, sc)
	w.wordSubsts(a.Value, sc)
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			w.arithSubsts(e.Index, sc)
			w.wordSubsts(e.Value, sc)
		}
	}
}

func (w *walker) redirSubsts(rs []*syntax.Redirect, sc scope) {
	for _, r := range rs {
		w.wordSubsts(r.Word, sc)
		if r.Hdoc != nil && !delimQuoted(r.Word) {
			w.wordSubsts(r.Hdoc, sc)
		}
	}
}

// arrayDynamic reports whether an array expression has run-time parts.
func (w *walker) arrayDynamic(a *syntax.ArrayExpr) bool {
	for _, e := range a.Elems {
		if e.Value != nil && wordDynamic(e.Value.Parts) {
			return true
		}
		if e.Index != nil {
			return true
		}
	}
	return false
}

// wordDynamic reports whether word parts need run-time state.
func wordDynamic(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted, *syntax.ExtGlob:
		case *syntax.DblQuoted:
			if wordDynamic(p.Parts) {
				return true
			}
		case *syntax.BraceExp:
			for _, e := range p.Elems {
				if wordDynamic(e.Parts) {
					return true
				}
			}
		default:
			return true
		}
	}
	return false
}

// text returns the source text of a node of the script being walked.
func (w *walker) text(n syntax.Node) string {
	return w.slice(n.Pos(), n.End())
}

func (w *walker) slice(from, to syntax.Pos) string {
	a, b := int(from.Offset()), int(to.Offset())
	if !from.IsValid() || !to.IsValid() || a > b || b > len(w.src) {
		return "?"
	}
	return w.src[a:b]
}
