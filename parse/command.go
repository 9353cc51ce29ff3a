package parse

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// redir is a Redirect with what the walker needs besides.
type redir struct {
	Redirect
	glob  bool
	stdin int8  // 0: not standard input; 1: stdin from a file or descriptor; 2: from body
	body  field // here-document or here-string text, when stdin == 2
}

// command appends the entry of one command (and the inner commands its wrappers reveal).
// fields may be empty for a statement made only of redirections.
func (w *walker) command(fields []field, env map[string]string, envDyn bool, redirs []redir, sc scope, p Pos, forceDyn bool) {
	if w.err != nil {
		return
	}
	w.words += len(fields) + 1
	if w.words > maxWords {
		w.fail(fmt.Sprintf("more than %d words in all commands", maxWords), p)
		return
	}
	cmd := Command{
		Index:     len(w.doc.Commands),
		Argv:      make([]string, len(fields)),
		Flags:     []string{},
		Options:   noOptions,
		Operands:  []Operand{},
		Redirects: make([]Redirect, len(redirs)),
		Env:       env,
		Via:       sc.via,
		Context:   sc.ctx,
		Pos:       p,
		Cwd:       w.dirs.first(),
	}
	dyn, glob := envDyn || forceDyn || sc.dynAll, false
	for i, f := range fields {
		cmd.Argv[i] = f.val
		dyn = dyn || f.dynamic
		glob = glob || f.glob
	}
	known := false // the name is static (inside a dynamic re-parsed script, only likely)
	if len(fields) > 0 {
		a0 := fields[0]
		cmd.Path = a0.val
		known = !a0.dynamic && !a0.glob
		cmd.DynamicName = !known || sc.dynAll
		if known {
			cmd.Name = a0.val[strings.LastIndexByte(a0.val, '/')+1:]
		} else {
			cmd.Name = a0.val
		}
		// bash looks a name without a slash up among the functions first.
		cmd.FunctionCall = sc.lookup && known && !a0.tilde && !sc.dynAll && len(cmd.Name) == len(a0.val) &&
			w.isFunctionCall(a0.val)
		nflags, nops := countFlags(fields)
		if nflags > 0 {
			cmd.Flags = make([]string, 0, nflags)
		}
		if nops > 0 {
			cmd.Operands = make([]Operand, 0, nops)
		}
		dashdash := false
		for i := 1; i < len(fields); i++ {
			f := fields[i]
			v := f.val
			if !dashdash && len(v) > 1 && v[0] == '-' {
				switch {
				case v == "--":
					dashdash = true
				case v[1] == '-':
					cmd.Flags = append(cmd.Flags, v)
				default:
					cmd.Flags = shortFlags(cmd.Flags, f)
				}
				continue
			}
			o := Operand{Text: v, Dynamic: f.dynamic || sc.dynAll, Glob: f.glob, Argi: i}
			if !sc.dynAll {
				o.Path, o.InsideWorkspace = w.resolve(f)
			}
			cmd.Operands = append(cmd.Operands, o)
		}
	}
	for i, r := range redirs {
		cmd.Redirects[i] = r.Redirect
		dyn = dyn || r.Dynamic
		glob = glob || r.glob
	}
	cmd.Dynamic = dyn
	cmd.Glob = glob
	if len(fields) > 0 {
		tool := ""
		if known {
			tool = cmd.Name
		}
		cmd.Options = w.optionsOf(tool, fields, sc.dynAll)
		w.builtinEval(&cmd, fields, sc)
	}
	w.doc.Commands = append(w.doc.Commands, cmd)
	if len(fields) == 0 {
		return
	}
	sc.lookup = false
	if known && !cmd.FunctionCall { // a function named like a wrapper runs its body
		if wrap := wrappers[cmd.Name]; wrap != nil && (cmd.Name != "git" || gitRuns(fields)) {
			w.unwrap(wrap, cmd.Name, fields, env, envDyn, redirs, sc, p)
		}
	}
	if sc.same { // after the inner commands, which start where the wrapper does
		w.dirEffect(&cmd, fields, sc.stdin != nil)
	}
}

// countFlags counts the flags and operands of a command's words (see Command.Flags).
func countFlags(fields []field) (nflags, nops int) {
	dashdash := false
	for _, f := range fields[1:] {
		v := f.val
		switch {
		case dashdash || len(v) < 2 || v[0] != '-':
			nops++
		case v == "--":
			dashdash = true
		case v[1] == '-':
			nflags++
		default:
			nflags += len(v) // an upper bound: one flag per byte
		}
	}
	return nflags, nops
}

// shortFlagText holds "-c" for every ASCII c, so splitting clusters does not allocate.
var shortFlagText = func() (t [128]string) {
	for c := range t {
		t[c] = "-" + string(rune(c))
	}
	return t
}()

// shortFlags splits a short-option cluster: `-rf` → `-r`,`-f`. From the first run-time part
// on, the rest of the word is one flag.
func shortFlags(dst []string, f field) []string {
	v := f.val
	end := len(v)
	if f.dynamic && f.dynAt < end {
		end = max(f.dynAt, 1)
	}
	for _, r := range v[1:end] {
		if r < 128 {
			dst = append(dst, shortFlagText[r])
		} else {
			dst = append(dst, "-"+string(r))
		}
	}
	if end < len(v) {
		dst = append(dst, "-"+v[end:])
	}
	return dst
}

// resolve gives the lexical path of a word and whether it is inside the workspace for every
// directory the shell may be in. Path is "" when it cannot be known statically.
func (w *walker) resolve(f field) (string, bool) {
	v := f.val
	if f.dynamic || f.tilde || v == "" {
		return "", false
	}
	if v[0] == '/' {
		p := path.Clean(v)
		return p, w.inside(p) && !(f.glob && globMayEscape(v))
	}
	if w.dirs.unknown() {
		return "", false
	}
	p := joinPath(w.dirs.list[0], v)
	in := w.inside(p) && !(f.glob && globMayEscape(v))
	up := strings.Contains(v, "..")
	for _, d := range w.dirs.list[1:] {
		if !in {
			break
		}
		if up {
			in = w.inside(path.Join(d, v))
		} else { // a path that never goes up stays under d
			in = w.inside(d)
		}
	}
	return p, in
}

// joinPath is path.Join(dir, rel) for a clean absolute dir, with one allocation when rel
// needs no cleaning.
func joinPath(dir, rel string) string {
	if !needsClean(rel) {
		if dir == "/" {
			return "/" + rel
		}
		return dir + "/" + rel
	}
	return path.Join(dir, rel)
}

// needsClean reports whether a relative path has empty, "." or ".." elements or a
// trailing slash.
func needsClean(rel string) bool {
	if rel == "" || rel[len(rel)-1] == '/' {
		return true
	}
	start := 0
	for i := 0; i <= len(rel); i++ {
		if i == len(rel) || rel[i] == '/' {
			switch rel[start:i] {
			case "", ".", "..":
				return true
			}
			start = i + 1
		}
	}
	return false
}

// inside reports whether a clean absolute path is the workspace or lies under it.
func (w *walker) inside(p string) bool {
	switch {
	case w.ws == "":
		return false
	case w.ws == "/":
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, w.ws) && (len(p) == len(w.ws) || p[len(w.ws)] == '/')
}

// globMayEscape reports whether a component of a glob could match "..", which lexical
// resolution would not see (`.*` matches `..` in most shells).
func globMayEscape(g string) bool {
	for c := range strings.SplitSeq(g, "/") {
		if strings.HasPrefix(c, ".") && strings.ContainsAny(c, "*?[") {
			if ok, err := path.Match(c, ".."); ok || err != nil {
				return true
			}
		}
	}
	return false
}

// redirects evaluates a statement's redirections (their substitutions are walked apart).
// In a script re-parsed from run-time text (dynAll) no target can be trusted.
func (w *walker) redirects(rs []*syntax.Redirect, dynAll bool) []redir {
	if len(rs) == 0 {
		return nil
	}
	out := make([]redir, 0, len(rs))
	for _, r := range rs {
		x := w.redirect(r)
		if dynAll {
			x.Dynamic, x.Path, x.InsideWorkspace = true, "", false
		}
		out = append(out, x)
	}
	return out
}

func (w *walker) redirect(r *syntax.Redirect) redir {
	var out redir
	out.Op = r.Op.String()
	input := false
	switch r.Op {
	case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		input = true
	default:
		out.Fd = 1
	}
	if r.N != nil {
		n, err := strconv.Atoi(r.N.Value)
		if err != nil { // {var}>file
			n = -1
		}
		out.Fd = n
	}
	stdin := input && out.Fd == 0
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		w.doc.Features.Heredoc = true
		out.Target = w.evalWord(r.Word.Parts, r.Word.Pos()).val
		body := w.heredocBody(r)
		out.Body, out.Dynamic = body.val, body.dynamic
		if stdin {
			out.stdin, out.body = 2, body
		}
		return out
	case syntax.WordHdoc:
		w.doc.Features.Heredoc = true
		f := w.evalWord(r.Word.Parts, r.Word.Pos())
		out.Target, out.Body, out.Dynamic = f.val, f.val, f.dynamic
		if stdin {
			out.stdin, out.body = 2, f
		}
		return out
	}
	f := w.evalWord(r.Word.Parts, r.Word.Pos())
	out.Target, out.Dynamic, out.glob = f.val, f.dynamic, f.glob
	if stdin {
		out.stdin = 1
	}
	switch r.Op {
	case syntax.DplIn, syntax.DplOut:
		if !f.dynamic && isFdWord(f.val) {
			return out // descriptor duplication or close: no file
		}
		out.Write = r.Op == syntax.DplOut // >&file is &>file
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		out.Write = true
	}
	out.Path, out.InsideWorkspace = w.resolve(f)
	return out
}

// isFdWord reports whether the word of a duplication names a descriptor: `1`, `2-`, `-`.
func isFdWord(s string) bool {
	if s == "-" {
		return true
	}
	s = strings.TrimSuffix(s, "-")
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

// dirState is what the walker knows of the shell's working directory: the directories it
// may be in, the most likely first, or nothing (unknown).
type dirState struct {
	list []string // nil when unknown
}

// maxDirs bounds how many possible directories are tracked before giving up.
const maxDirs = 8

func (d dirState) unknown() bool { return d.list == nil }

func (d dirState) first() string {
	if d.list == nil {
		return ""
	}
	return d.list[0]
}

// union is the state of a shell that may be in either state.
func (d dirState) union(o dirState) dirState {
	if d.list == nil || o.list == nil {
		return dirState{}
	}
	out := d.list
	for _, x := range o.list {
		if !contains(out, x) {
			if len(out) == len(d.list) { // copy on first change: states are shared
				out = make([]string, len(d.list), len(d.list)+len(o.list))
				copy(out, d.list)
			}
			out = append(out, x)
		}
	}
	if len(out) > maxDirs {
		return dirState{}
	}
	return dirState{list: out}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dirEffect applies what a command run by the shell itself does to its directory.
func (w *walker) dirEffect(cmd *Command, fields []field, stdinBody bool) {
	if !cmd.DynamicName && (cmd.Path == "builtin" || cmd.Path == "command") {
		return // the inner command, run by this shell, had its effect
	}
	// A command that does not change directory leaves the shell where it is whether or
	// not it succeeds: `cd sub && make && cd ..` runs the last cd in sub. A command that
	// makes the directory unknown, or cd (which sets its own), overrides this.
	w.succ, w.succK = w.dirs, !w.dirs.unknown()
	defer func() {
		if w.dirs.unknown() {
			w.succK = false
		}
	}()
	if cmd.DynamicName { // could be cd
		w.dirs = dirState{}
		return
	}
	if cmd.FunctionCall { // the body runs, not the builtin it may be named after
		if w.funcs[cmd.Name] {
			w.dirs = dirState{}
		}
		return
	}
	switch {
	case fields[0].val == "cd" || fields[0].val == "pushd":
		w.cd(fields[1:], fields[0].val == "pushd")
	case fields[0].val == "popd":
		for _, f := range fields[1:] {
			if f.val == "-n" {
				return
			}
		}
		w.dirs = dirState{}
	case fields[0].val == "source" || fields[0].val == ".":
		if !(stdinBody && len(fields) > 1 && isStdinPath(fields[len(fields)-1])) {
			w.dirs = dirState{} // a file we do not read (a sourced here-document was walked)
		}
	}
	if w.funcs[cmd.Name] { // perhaps a function that changes directory
		w.dirs = dirState{}
	}
}

// cd applies `cd ARGS` (or pushd): on success the shell is in the target, on failure it
// stays where it was.
func (w *walker) cd(args []field, pushd bool) {
	var ops []field
	opts := true
	for _, a := range args {
		switch {
		case opts && a.val == "--":
			opts = false
		case opts && !a.dynamic && len(a.val) > 1 && (a.val[0] == '-' || (pushd && a.val[0] == '+')):
			if pushd && a.val == "-n" {
				return // only the stack changes
			}
			if pushd && len(a.val) > 1 && a.val[1] >= '0' && a.val[1] <= '9' { // pushd +N/-N
				w.dirs = dirState{}
				return
			}
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) > 1 {
		return // too many arguments: nothing changes
	}
	if len(ops) == 0 { // $HOME, or for pushd a swap
		w.dirs = dirState{}
		return
	}
	t := ops[0]
	switch {
	case t.dynamic || t.tilde || t.glob || t.val == "-":
		w.dirs = dirState{}
		return
	case t.val == "":
		return
	case t.val[0] == '/':
		w.succ = dirState{list: []string{path.Clean(t.val)}}
	case w.cdpath && !relativeToDot(t.val), w.dirs.unknown():
		w.dirs = dirState{}
		return
	default:
		list := make([]string, 0, len(w.dirs.list))
		for _, d := range w.dirs.list {
			if p := path.Join(d, t.val); !contains(list, p) {
				list = append(list, p)
			}
		}
		w.succ = dirState{list: list}
	}
	w.succK = true
	w.dirs = w.succ.union(w.dirs)
}

// relativeToDot reports whether a relative cd target ignores CDPATH.
func relativeToDot(t string) bool {
	return t == "." || t == ".." || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../")
}

// changesDir reports whether running n may change the shell's directory: a cd, pushd, popd,
// source, eval, builtin/command, a function known to change directory, or a command whose
// name is only known at run time. (A trap action that changes directory makes the directory
// unknown where the trap is set.)
func (w *walker) changesDir(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if found {
			return false
		}
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		switch name := w.staticWord(c.Args[0]); name {
		case "", "cd", "pushd", "popd", "source", ".", "eval", "builtin", "command":
			found = true
		default:
			found = w.funcs[name]
		}
		return !found
	})
	return found
}

// staticWord returns the value of a word that needs no run-time state and no brace
// expansion, else "".
func (w *walker) staticWord(word *syntax.Word) string {
	if wordDynamic(word.Parts) || hasBrace(word.Parts) {
		return ""
	}
	f := w.evalWord(word.Parts, word.Pos())
	if f.glob {
		return ""
	}
	return f.val
}

// laterDirs is the directory state for code that runs later, from wherever the script is
// then (function bodies, trap actions): the current state when the script never changes
// directory, else unknown.
func (w *walker) laterDirs() dirState {
	if w.fileTree == nil {
		return dirState{}
	}
	if w.fileDirs == 0 {
		w.fileDirs = -1
		if w.changesDir(w.fileTree) {
			w.fileDirs = 1
		}
	}
	if w.fileDirs == 1 {
		return dirState{}
	}
	return w.dirs
}
