package parse

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Shell functions: Command.FunctionCall is true when bash would certainly run a function
// the script defined rather than a builtin or a program. The walker keeps, for the shell
// being walked, the names defined on every path that reaches the current point (funcSet:
// a definition inside a branch, a loop, a subshell, a pipeline stage, a substitution or a
// background job does not count past it), and, per shell, what may remove or replace a
// function unseen (shellFuncs: found by scanning the shell's whole script once, lazily).
// Definitions never need removing from the set: a name that anything in the shell may
// unset is never a function call, and where anything may replace functions unseen
// (source, a dynamic eval, a command with a run-time name, ...) no name is. So a
// function body or a trap action, which runs later, sees the set where it is written.

// funcSet is the sorted list of the functions certainly defined at a point. It is never
// modified in place: states saved before a region stay valid.
type funcSet []string

func (s funcSet) has(name string) bool {
	_, ok := slices.BinarySearch(s, name)
	return ok
}

// with returns the set with name added.
func (s funcSet) with(name string) funcSet {
	i, ok := slices.BinarySearch(s, name)
	if ok {
		return s
	}
	return slices.Insert(slices.Clip(s), i, name)
}

// shellFuncs is what may remove or replace functions anywhere in one shell.
type shellFuncs struct {
	tree    *syntax.File // the shell's script
	src     string       // its text
	scanned bool
	all     bool            // any function may be unset or replaced by code the parser cannot see
	unset   map[string]bool // names some `unset` may remove
}

// maxScanDepth bounds the eval and trap texts the removal scan re-parses inside each other.
const maxScanDepth = 8

// funcsUnsafe reports whether name may be removed or replaced in the shell being walked.
func (w *walker) funcsUnsafe(name string) bool {
	sh := w.shell
	if sh == nil {
		return true
	}
	if !sh.scanned {
		sh.scanned = true
		savedErr, savedAt, savedSrc := w.err, w.at, w.src
		at := Pos{Line: 1, Col: 1}
		w.at, w.src = &at, sh.src // positions of words evaluated by the scan are never reported
		w.scanRemovals(sh.tree, sh, 0)
		w.err, w.at, w.src = savedErr, savedAt, savedSrc
	}
	return sh.all || (name != "" && sh.unset[name])
}

// scanRemovals finds in n what may remove or replace functions: `unset` (but `unset -v`),
// source and `.` (a file the parser does not read), mapfile/readarray -C (a callback
// evaluated as code), eval and trap actions with run-time parts (static ones are parsed and
// scanned), and commands whose name is only known at run time (any of these). `command`
// and `builtin` are looked through. Function bodies, subshells and substitutions are
// included: a removal there may not reach the shell, but assuming it does is safe.
func (w *walker) scanRemovals(n syntax.Node, sh *shellFuncs, depth int) {
	syntax.Walk(n, func(n syntax.Node) bool {
		if sh.all {
			return false
		}
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			w.scanCall(c.Args, sh, depth)
		}
		return !sh.all
	})
}

// scanCall looks at one simple command's words for scanRemovals.
func (w *walker) scanCall(args []*syntax.Word, sh *shellFuncs, depth int) {
	for len(args) > 0 {
		name := w.staticWord(args[0])
		switch name {
		case "":
			sh.all = true // a run-time name: could be any of these
		case "command", "builtin":
			args = args[1:]
			for len(args) > 0 && strings.HasPrefix(w.staticWord(args[0]), "-") {
				args = args[1:]
			}
			continue
		case "unset":
			w.scanUnset(args[1:], sh)
		case "source", ".":
			sh.all = true
		case "mapfile", "readarray":
			for _, a := range args[1:] {
				if v := w.staticWord(a); v == "" || (strings.HasPrefix(v, "-") && strings.Contains(v, "C")) {
					sh.all = true
				}
			}
		case "eval":
			w.scanText(args[1:], sh, depth)
		case "trap":
			rest := args[1:]
			if len(rest) > 0 && w.staticWord(rest[0]) == "--" {
				rest = rest[1:]
			}
			if len(rest) > 1 {
				if v := w.staticWord(rest[0]); v != "-" && !strings.HasPrefix(v, "-") && !isSignal(v) {
					w.scanText(rest[:1], sh, depth)
				}
			}
		}
		return
	}
}

// scanUnset records what `unset ARGS` may remove: the named functions, unless only
// variables are meant (-v); every function when a name is known only at run time.
func (w *walker) scanUnset(args []*syntax.Word, sh *shellFuncs) {
	vars := false
	opts := true
	for _, a := range args {
		v := w.staticWord(a)
		switch {
		case v == "": // run-time, glob or brace: could name any function
			sh.all = true
			return
		case opts && v == "--":
			opts = false
		case opts && len(v) > 1 && v[0] == '-':
			vars = strings.Contains(v, "v") && !strings.Contains(v, "f")
		default:
			opts = false
			if vars {
				continue
			}
			if sh.unset == nil {
				sh.unset = map[string]bool{}
			}
			sh.unset[v] = true
		}
	}
}

// scanText parses the text eval or a trap action runs and scans it; text with run-time
// parts could be anything.
func (w *walker) scanText(args []*syntax.Word, sh *shellFuncs, depth int) {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		if wordDynamic(a.Parts) || hasBrace(a.Parts) {
			sh.all = true
			return
		}
		parts = append(parts, w.evalWord(a.Parts, a.Pos()).val)
	}
	text := strings.Join(parts, " ")
	if depth >= maxScanDepth || len(text) > w.maxBytes {
		sh.all = true
		return
	}
	f, err := parseText(text)
	if err != nil {
		return // the walk refuses the script
	}
	savedSrc := w.src
	w.src = text
	w.scanRemovals(f, sh, depth+1)
	w.src = savedSrc
}

// specialBuiltins are found before functions by a POSIX shell (bash as sh, dash), and
// command and builtin bypass functions: a function so named may not be what runs.
var specialBuiltins = map[string]bool{
	"break": true, ":": true, ".": true, "continue": true, "eval": true, "exec": true,
	"exit": true, "export": true, "readonly": true, "return": true, "set": true,
	"shift": true, "times": true, "trap": true, "unset": true, "command": true,
	"builtin": true,
}

// funcName reports whether a function definition's name is one the walker registers: a
// POSIX name (letters, digits and _, not starting with a digit) that is not a reserved
// word. bash in POSIX mode (run as sh, or after set -o posix) refuses to define other
// names and goes on with the script, which would then run a program of that name.
func funcName(s string) bool {
	if s == "" || specialBuiltins[s] || reservedWords[s] || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

var reservedWords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true,
	"esac": true, "for": true, "select": true, "while": true, "until": true, "do": true,
	"done": true, "in": true, "function": true, "time": true, "coproc": true,
}

// isFunctionCall reports whether the simple command named name (static, as the shell
// walked runs it) certainly calls a function of the script. Code that runs later
// (function bodies, trap actions) sees the functions defined where it is: they are
// still defined when it runs, as nothing the parser cannot see removes a function
// whose name is marked.
func (w *walker) isFunctionCall(name string) bool {
	return w.fns.has(name) && !w.funcsUnsafe(name)
}
