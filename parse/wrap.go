package parse

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A wrapper runs another command given in its arguments. Its function finds that command
// (skipping the wrapper's options and their values) and reports it through the wrapCall.
type wrapFunc func(c *wrapCall)

// wrappers maps command base names to their unwrapping. Filled in init: the functions
// reach back to the walker, which reads the map.
var wrappers map[string]wrapFunc

// shells are the shell binaries whose -c script, or here-document on standard input, is
// re-parsed.
var shells = []string{"sh", "bash", "rbash", "zsh", "dash", "ksh", "ksh93", "mksh", "lksh",
	"pdksh", "oksh", "ash", "yash", "posh"}

func init() {
	wrappers = map[string]wrapFunc{
		"sudo": wrapSudo, "doas": wrapDoas, "env": wrapEnv, "nice": wrapNice,
		"nohup": wrapNohup, "time": wrapTime, "timeout": wrapTimeout, "stdbuf": wrapStdbuf,
		"ionice": wrapIonice, "setsid": wrapSetsid, "command": wrapCommand,
		"builtin": wrapBuiltin, "exec": wrapExec, "xargs": wrapXargs, "watch": wrapWatch,
		"busybox": wrapBusybox, "find": wrapFind, "eval": wrapEval, "trap": wrapTrap,
		"chroot": wrapChroot, "flock": wrapFlock, "unshare": wrapUnshare,
		"nsenter": wrapNsenter, "strace": wrapStrace, "ltrace": wrapLtrace, "chrt": wrapChrt,
		"taskset": wrapTaskset, "su": wrapSu, "runuser": wrapRunuser, "script": wrapScript,
		"systemd-run": wrapSystemdRun, "sg": wrapSg, "pkexec": wrapPkexec,
		"fakeroot": wrapFakeroot, "source": wrapSource, ".": wrapSource, "newgrp": wrapNewgrp,
		"toybox": wrapBusybox, "prlimit": wrapPrlimit, "setpriv": wrapSetpriv,
		"setarch": wrapSetarch, "linux32": wrapSetarch, "linux64": wrapSetarch,
		"numactl": wrapNumactl, "bwrap": wrapBwrap, "firejail": wrapFirejail,
		"dbus-run-session": wrapSimple(nohupSpec), "xvfb-run": wrapSimple(xvfbRunSpec),
		"valgrind": wrapSimple(valgrindSpec), "unbuffer": wrapSimple(unbufferSpec),
		"torsocks": wrapSimple(unbufferSpec), "proxychains": wrapSimple(proxychainsSpec),
		"proxychains4": wrapSimple(proxychainsSpec), "catchsegv": wrapSimple(unbufferSpec),
		"faketime": wrapFaketime, "run0": wrapRun0, "ssh-agent": wrapSSHAgent,
		"at": wrapAt, "batch": wrapAt, "git": wrapGit,
		"npx": wrapNpx, "npm": wrapNpm, "pnpm": wrapPnpm, "yarn": wrapYarn, "uvx": wrapUvx,
		"uv": wrapUv, "pipx": wrapPipx, "bunx": wrapBunx,
	}
	for _, s := range shells {
		wrappers[s] = wrapShell
	}
}

// wrapCall is one wrapper command being unwrapped.
type wrapCall struct {
	w      *walker
	name   string  // the wrapper's base name, appended to via
	args   []field // the wrapper's words after argv[0]
	env    map[string]string
	envDyn bool
	redirs []redir
	sc     scope // for the inner commands: via extended, one level deeper, not the same shell
	pos    Pos
}

// inner says how the wrapper runs its inner command.
type inner struct {
	env      map[string]string // variables the wrapper sets
	envDyn   bool
	clearEnv bool     // env -i
	unset    []string // env -u
	dynamic  bool     // the inner command gets arguments at run time (xargs, find -exec)
	dir      *dirState
	same     bool // runs in the shell being walked (builtin, command, eval)
	later    bool // runs later in the shell being walked (a trap action)
}

func (w *walker) unwrap(fn wrapFunc, name string, fields []field, env map[string]string, envDyn bool, redirs []redir, sc scope, p Pos) {
	if !w.deeper(&sc, p) {
		return
	}
	sc.via = appendVia(sc.via, name)
	sc.same = false
	fn(&wrapCall{w: w, name: name, args: fields[1:], env: env, envDyn: envDyn, redirs: redirs, sc: sc, pos: p})
}

// run appends the inner command made of fields.
func (c *wrapCall) run(fields []field, in inner) {
	w := c.w
	if len(fields) == 0 || w.err != nil {
		return
	}
	env := make(map[string]string, len(c.env)+len(in.env))
	if !in.clearEnv {
		for k, v := range c.env {
			env[k] = v
		}
	}
	for _, k := range in.unset {
		delete(env, k)
	}
	for k, v := range in.env {
		env[k] = v
	}
	sc := c.sc
	sc.same = in.same
	saved := w.dirs
	if in.dir != nil {
		w.dirs = *in.dir
	}
	w.command(fields, env, (c.envDyn && !in.clearEnv) || in.envDyn, c.redirs, sc, c.pos, in.dynamic)
	if in.dir != nil || !in.same {
		w.dirs = saved
	}
}

// script re-parses text the wrapper hands to a shell (or eval) and appends its commands.
// When the text has run-time parts, what it runs cannot be known: every command found is
// dynamic with a dynamic name, and if none is found one such command stands for the text.
// It returns the parsed tree (nil on error).
func (c *wrapCall) script(text field, in inner) *syntax.File {
	w := c.w
	if w.err != nil {
		return nil
	}
	if len(text.val) > w.maxBytes {
		w.fail(fmt.Sprintf("%s script is larger than %d bytes", c.name, w.maxBytes), c.pos)
		return nil
	}
	w.nested += len(text.val)
	if w.nested > maxNestedRatio*w.maxBytes {
		w.fail(fmt.Sprintf("nested scripts total more than %d bytes", maxNestedRatio*w.maxBytes), c.pos)
		return nil
	}
	f, err := parseText(text.val)
	if err != nil {
		msg, line, col := syntaxError(err, text.val)
		w.fail(fmt.Sprintf("%s script: line %d col %d: %s", c.name, line, col, msg), c.pos)
		return nil
	}
	sc := c.sc
	sc.same = true
	sc.redirs = c.redirs
	sc.stdin = nil // what the shell reads its script from is consumed
	sc.dynAll = sc.dynAll || text.dynamic || text.glob
	sc.env = make(map[string]string, len(c.env)+len(in.env))
	for k, v := range c.env {
		sc.env[k] = v
	}
	for k, v := range in.env {
		sc.env[k] = v
	}
	sc.envDyn = c.envDyn || in.envDyn
	savedSrc, savedAt, savedDirs := w.src, w.at, w.dirs
	savedFns, savedShell := w.fns, w.shell
	at := c.pos
	w.src, w.at = text.val, &at
	if in.dir != nil {
		w.dirs = *in.dir
	}
	if !in.same && !in.later { // a new shell: no function of this one (exported ones are not followed)
		w.fns, w.shell = nil, &shellFuncs{tree: f, src: text.val}
	}
	before := len(w.doc.Commands)
	w.file(f, sc)
	w.src, w.at = savedSrc, savedAt
	if !in.same { // a new shell (its cd and functions stay there) or a trap action
		w.dirs = savedDirs
		w.fns, w.shell = savedFns, savedShell
	}
	if sc.dynAll && len(w.doc.Commands) == before {
		sc.same = false
		w.command([]field{{val: text.val, dynamic: true}}, sc.env, true, c.redirs, sc, c.pos, true)
	}
	return f
}

// shell stands for the interactive shell a wrapper starts when given no command (sudo -s,
// su, chroot DIR, unshare, …): it reads standard input, so a here-document or here-string
// there is a script, re-parsed.
func (c *wrapCall) shell(in inner) {
	c.w.doc.Features.NestedShell = true
	if c.sc.stdin != nil {
		c.script(*c.sc.stdin, in)
	}
}

// runOrShell runs the inner command, or the wrapper's shell when there is none.
func (c *wrapCall) runOrShell(fields []field, in inner) {
	if len(fields) == 0 {
		c.shell(in)
		return
	}
	c.run(fields, in)
}

// dirOf is the working directory a wrapper option (env -C DIR, sudo -D DIR) gives.
func (c *wrapCall) dirOf(f field) *dirState {
	d := dirState{}
	switch {
	case f.dynamic || f.tilde || f.glob || f.val == "":
	case f.val[0] == '/':
		d.list = []string{path.Clean(f.val)}
	case !c.w.dirs.unknown():
		for _, x := range c.w.dirs.list {
			if p := path.Join(x, f.val); !contains(d.list, p) {
				d.list = append(d.list, p)
			}
		}
	}
	return &d
}

var unknownDir = &dirState{}

// joinFields joins words with spaces, as eval and `watch` do.
func joinFields(fs []field) field {
	if len(fs) == 1 {
		return fs[0]
	}
	var out field
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if f.dynamic && !out.dynamic {
			out.dynamic, out.dynAt = true, b.Len()+f.dynAt
		}
		out.glob = out.glob || f.glob
		b.WriteString(f.val)
	}
	out.val = b.String()
	return out
}

// takeAssigns moves leading NAME=VALUE words into env.
func takeAssigns(rest []field, in *inner) []field {
	for len(rest) > 0 {
		k, v, ok := strings.Cut(rest[0].val, "=")
		if !ok || k == "" || (rest[0].dynamic && rest[0].dynAt <= len(k)) {
			break
		}
		if in.env == nil {
			in.env = map[string]string{}
		}
		in.env[k] = v
		in.envDyn = in.envDyn || rest[0].dynamic || rest[0].tilde
		rest = rest[1:]
	}
	return rest
}

var sudoSpec = &optSpec{arg: "aCcDgpRrTtUu", optArg: "h", long: []string{
	"askpass", "auth-type=", "background", "bell", "chdir=", "chroot=", "close-from=",
	"command-timeout=", "edit", "group=", "help", "host=", "list", "login", "login-class=",
	"non-interactive", "other-user=", "preserve-env?", "preserve-groups", "prompt=",
	"remove-timestamp", "reset-timestamp", "role=", "set-home", "shell", "stdin", "type=",
	"user=", "validate", "version"}}

// sudo [options] [NAME=VALUE...] command: -e edits files (runs nothing), -s/-i hand the
// command to a shell, -D/--chdir and -i change the directory.
func wrapSudo(c *wrapCall) {
	opts, rest := sudoSpec.scan(c.args)
	if hasOpt(opts, "-e", "--edit") {
		return
	}
	var in inner
	if d, ok := optValue(opts, "-D", "--chdir"); ok {
		in.dir = c.dirOf(d)
	}
	if hasOpt(opts, "-i", "--login", "-R", "--chroot") {
		in.dir = unknownDir
	}
	rest = takeAssigns(rest, &in)
	if hasOpt(opts, "-s", "--shell", "-i", "--login") {
		if len(rest) == 0 {
			c.shell(in)
			return
		}
		c.w.doc.Features.NestedShell = true
		c.script(joinFields(rest), in)
		return
	}
	c.run(rest, in)
}

var doasSpec = &optSpec{arg: "Cu"}

func wrapDoas(c *wrapCall) {
	opts, rest := doasSpec.scan(c.args)
	if hasOpt(opts, "-s") {
		c.shell(inner{})
		return
	}
	c.run(rest, inner{})
}

var envSpec = &optSpec{arg: "aCSu", long: []string{
	"argv0=", "block-signal?", "chdir=", "debug", "default-signal?", "help", "ignore-environment",
	"ignore-signal?", "list-signal-handling", "null", "split-string=", "unset=", "version"}}

// env [options] [NAME=VALUE...] [command]: -i (or a lone -) clears, -u unsets, -C changes
// directory, -S splits its argument into words that replace it, options included.
func wrapEnv(c *wrapCall) {
	args := c.args
	var in inner
	splits := 0
	i := 0
scan:
	for i < len(args) {
		if args[i].val == "-" && !args[i].dynamic {
			in.clearEnv, in.env, in.envDyn = true, nil, false
			i++
			continue
		}
		opts, next, done := envSpec.word(args, i)
		if done {
			i = next
			break
		}
		for _, o := range opts {
			switch o.name {
			case "-i", "--ignore-environment":
				in.clearEnv, in.env, in.envDyn = true, nil, false
			case "-u", "--unset":
				in.unset = append(in.unset, o.val.val)
				delete(in.env, o.val.val)
			case "-C", "--chdir":
				in.dir = c.dirOf(o.val)
			case "-S", "--split-string":
				words, ok := splitEnvS(o.val)
				if !ok {
					return // env refuses the string: nothing runs
				}
				if splits++; splits > c.w.maxDepth {
					c.w.fail(fmt.Sprintf("env -S nested deeper than %d levels", c.w.maxDepth), c.pos)
					return
				}
				args = append(words, args[next:]...)
				i = 0
				continue scan
			}
		}
		i = next
	}
	c.run(takeAssigns(args[min(i, len(args)):], &in), in)
}

var niceSpec = &optSpec{arg: "n", long: []string{"adjustment=", "help", "version"}, digits: true}

func wrapNice(c *wrapCall) {
	_, rest := niceSpec.scan(c.args)
	c.run(rest, inner{})
}

var nohupSpec = &optSpec{long: []string{"help", "version"}}

func wrapNohup(c *wrapCall) {
	_, rest := nohupSpec.scan(c.args)
	c.run(rest, inner{})
}

var timeSpec = &optSpec{arg: "fo", long: []string{
	"append", "format=", "help", "output=", "portability", "quiet", "verbose", "version"}}

// time (GNU time, or the keyword's entry): -f FMT, -o FILE take values.
func wrapTime(c *wrapCall) {
	_, rest := timeSpec.scan(c.args)
	c.run(rest, inner{})
}

var timeoutSpec = &optSpec{arg: "ks", long: []string{
	"foreground", "help", "kill-after=", "preserve-status", "signal=", "verbose", "version"}}

// timeout [options] DURATION command
func wrapTimeout(c *wrapCall) {
	_, rest := timeoutSpec.scan(c.args)
	if len(rest) > 0 {
		c.run(rest[1:], inner{})
	}
}

var stdbufSpec = &optSpec{arg: "ioe", long: []string{"error=", "help", "input=", "output=", "version"}}

func wrapStdbuf(c *wrapCall) {
	_, rest := stdbufSpec.scan(c.args)
	c.run(rest, inner{})
}

var ioniceSpec = &optSpec{arg: "cnpPu", long: []string{
	"class=", "classdata=", "help", "ignore", "pgid=", "pid=", "uid=", "version"}}

// ionice [options] command; with -p/-P/-u it acts on running processes instead.
func wrapIonice(c *wrapCall) {
	opts, rest := ioniceSpec.scan(c.args)
	if hasOpt(opts, "-p", "-P", "-u", "--pid", "--pgid", "--uid") {
		return
	}
	c.run(rest, inner{})
}

var setsidSpec = &optSpec{long: []string{"ctty", "fork", "help", "version", "wait"}}

func wrapSetsid(c *wrapCall) {
	_, rest := setsidSpec.scan(c.args)
	c.run(rest, inner{})
}

var commandSpec = &optSpec{}

// command [-pVv] name args: -v and -V only describe the name.
func wrapCommand(c *wrapCall) {
	opts, rest := commandSpec.scan(c.args)
	if hasOpt(opts, "-v", "-V") {
		return
	}
	c.run(rest, inner{same: true})
}

func wrapBuiltin(c *wrapCall) {
	_, rest := commandSpec.scan(c.args)
	c.run(rest, inner{same: true})
}

var execSpec = &optSpec{arg: "a"}

func wrapExec(c *wrapCall) {
	_, rest := execSpec.scan(c.args)
	c.run(rest, inner{})
}

var xargsSpec = &optSpec{arg: "aEdILnPs", optArg: "eil", long: []string{
	"arg-file=", "delimiter=", "eof?", "exit", "help", "interactive", "max-args=", "max-chars=",
	"max-lines?", "max-procs=", "no-run-if-empty", "null", "open-tty", "process-slot-var=",
	"replace?", "show-limits", "verbose", "version"}}

// xargs [options] [command]: the command (echo by default) gets arguments from standard
// input at run time, so it is dynamic, and so is every word holding the -I/-i string.
func wrapXargs(c *wrapCall) {
	opts, rest := xargsSpec.scan(c.args)
	replace := ""
	for _, o := range opts {
		switch o.name {
		case "-I":
			replace = o.val.val
		case "-i", "--replace":
			replace = "{}"
			if o.has {
				replace = o.val.val
			}
		}
	}
	if len(rest) == 0 {
		rest = []field{{val: "echo"}}
	}
	c.run(markReplace(rest, replace), inner{dynamic: true})
}

// markReplace makes the words holding a run-time placeholder dynamic.
func markReplace(fs []field, s string) []field {
	if s == "" {
		return fs
	}
	out := fs
	for i, f := range fs {
		if j := strings.Index(f.val, s); j >= 0 {
			if &out[0] == &fs[0] {
				out = append([]field(nil), fs...)
			}
			if !f.dynamic || j < f.dynAt {
				out[i].dynAt = j
			}
			out[i].dynamic = true
		}
	}
	return out
}

var watchSpec = &optSpec{arg: "nqs", optArg: "d", long: []string{
	"beep", "chgexit", "color", "differences?", "equexit=", "errexit", "exec", "help",
	"interval=", "no-color", "no-linewrap", "no-rerun", "no-title", "no-wrap", "precise",
	"shotsdir=", "version"}}

// watch [options] command: the words are joined and run by sh -c, unless -x/--exec.
func wrapWatch(c *wrapCall) {
	opts, rest := watchSpec.scan(c.args)
	if len(rest) == 0 {
		return
	}
	if hasOpt(opts, "-x", "--exec") {
		c.run(rest, inner{})
		return
	}
	c.w.doc.Features.NestedShell = true
	c.script(joinFields(rest), inner{})
}

// busybox APPLET [args]
func wrapBusybox(c *wrapCall) {
	if len(c.args) == 0 || strings.HasPrefix(c.args[0].val, "-") {
		return
	}
	c.run(c.args, inner{})
}

// find … -exec|-execdir|-ok|-okdir COMMAND … ; (or {} +): each is an inner command whose
// `{}` words are dynamic (found paths); -execdir runs in each file's directory.
func wrapFind(c *wrapCall) {
	args := c.args
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if v != "-exec" && v != "-execdir" && v != "-ok" && v != "-okdir" {
			continue
		}
		j := i + 1
		for ; j < len(args); j++ {
			if t := args[j].val; t == ";" || (t == "+" && args[j-1].val == "{}") {
				break
			}
		}
		in := inner{dynamic: true}
		if v == "-execdir" || v == "-okdir" {
			in.dir = unknownDir
		}
		c.run(markReplace(args[i+1:j], "{}"), in)
		i = j
	}
}

// sh|bash|… [options] [-c SCRIPT | FILE] …: the -c script is re-parsed; without -c and
// without a script file (or with -s), a here-document or here-string on standard input is.
// A run-time word where an option may stand could be anything (`bash $X 'rm -rf /'`): it
// is an inner command with a dynamic name, and the word after it is re-parsed too (after
// -c, such a word is taken for the script).
func wrapShell(c *wrapCall) {
	w := c.w
	w.doc.Features.NestedShell = true
	args := c.args
	cflag, sflag := false, false
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		v := a.val
		switch {
		case a.dynamic && cflag: // most likely the script; known only at run time anyway
			c.script(a, inner{})
			return
		case a.dynamic:
			c.run(args[i:], inner{})
			if i+1 < len(args) {
				c.script(args[i+1], inner{})
			}
			return
		case v == "--" || v == "-":
			i++
			break options
		case len(v) < 2 || (v[0] != '-' && v[0] != '+'):
			break options
		case strings.HasPrefix(v, "--"):
			if v == "--rcfile" || v == "--init-file" {
				i++
			}
		default:
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'c':
					cflag = cflag || v[0] == '-'
				case 's':
					sflag = sflag || v[0] == '-'
				case 'o', 'O':
					i++ // option name
				}
			}
		}
	}
	operands := args[min(i, len(args)):]
	if cflag {
		if len(operands) > 0 {
			c.script(operands[0], inner{})
		}
		return
	}
	if len(operands) > 0 && !sflag && !isStdinPath(operands[0]) {
		return // runs a script file
	}
	if c.sc.stdin != nil {
		c.script(*c.sc.stdin, inner{})
	}
}

// isStdinPath reports whether a script file operand is standard input.
func isStdinPath(f field) bool {
	switch f.val {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return !f.dynamic
	}
	return false
}

// source FILE / . FILE: sourcing standard input (`. /dev/stdin <<EOF`) runs the
// here-document or here-string in the same shell; it is re-parsed. Other files are not
// read (the policy decides on sourcing them).
func wrapSource(c *wrapCall) {
	args := c.args
	if len(args) > 0 && args[0].val == "--" {
		args = args[1:]
	}
	if len(args) == 0 || !isStdinPath(args[0]) || c.sc.stdin == nil {
		return
	}
	c.w.doc.Features.Eval = true
	c.script(*c.sc.stdin, inner{same: true})
}

// eval ARGS: the words joined with spaces are re-parsed in the same shell.
func wrapEval(c *wrapCall) {
	c.w.doc.Features.Eval = true
	args := c.args
	if len(args) > 0 && args[0].val == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return
	}
	c.script(joinFields(args), inner{same: true})
}

// trap ACTION SIGNAL…: the action is a script run later (unless it resets: `-`, or a lone
// signal, or a first word that is a signal name).
func wrapTrap(c *wrapCall) {
	args := c.args
	for len(args) > 0 && strings.HasPrefix(args[0].val, "-") && args[0].val != "-" && !args[0].dynamic {
		if args[0].val == "--" {
			args = args[1:]
			break
		}
		return // -l, -p, -P print
	}
	if len(args) < 2 || (!args[0].dynamic && (args[0].val == "-" || isSignal(args[0].val))) {
		return
	}
	w := c.w
	w.doc.Features.Eval = true
	d := w.laterDirs()
	if f := c.script(args[0], inner{dir: &d, later: true}); f != nil && w.changesDir(f) {
		w.dirs = dirState{} // the action may run before any later command (DEBUG, ERR)
	}
}

var signals = " EXIT DEBUG ERR RETURN HUP INT QUIT ILL TRAP ABRT IOT BUS FPE KILL USR1 SEGV USR2" +
	" PIPE ALRM TERM STKFLT CHLD CLD CONT STOP TSTP TTIN TTOU URG XCPU XFSZ VTALRM PROF WINCH IO" +
	" POLL PWR SYS "

func isSignal(s string) bool {
	if s == "" {
		return false
	}
	if isAdjustment("-" + s) { // a number
		return true
	}
	s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
	return strings.Contains(signals, " "+s+" ") || strings.HasPrefix(s, "RTMIN") || strings.HasPrefix(s, "RTMAX")
}

var chrootSpec = &optSpec{long: []string{"groups=", "help", "skip-chdir", "userspec=", "version"}}

// chroot [options] NEWROOT [command]: paths are relative to the new root.
func wrapChroot(c *wrapCall) {
	_, rest := chrootSpec.scan(c.args)
	if len(rest) > 0 {
		c.runOrShell(rest[1:], inner{dir: unknownDir})
	}
}

var flockSpec = &optSpec{arg: "wE", long: []string{
	"close", "conflict-exit-code=", "exclusive", "fcntl", "help", "nb", "no-fork", "nonblock",
	"shared", "timeout=", "unlock", "verbose", "version", "wait="}}

// flock [options] FILE command… | flock [options] FILE -c SCRIPT | flock [options] FD
func wrapFlock(c *wrapCall) {
	_, rest := flockSpec.scan(c.args)
	if len(rest) < 2 {
		return
	}
	if v := rest[1].val; v == "-c" || v == "--command" {
		if len(rest) > 2 {
			c.w.doc.Features.NestedShell = true
			c.script(rest[2], inner{})
		}
		return
	}
	c.run(rest[1:], inner{})
}

var unshareSpec = &optSpec{arg: "RwSG", long: []string{
	"boottime=", "cgroup?", "fork", "help", "ipc?", "keep-caps", "kill-child?", "load-interp=",
	"map-auto", "map-current-user", "map-group=", "map-groups=", "map-root-user", "map-user=",
	"map-users=", "monotonic=", "mount?", "mount-binfmt?", "mount-proc?", "net?", "pid?",
	"propagation=", "root=", "setgid=", "setgroups=", "setuid=", "time?", "user?", "uts?",
	"version", "wd="}}

func wrapUnshare(c *wrapCall) {
	opts, rest := unshareSpec.scan(c.args)
	var in inner
	if d, ok := optValue(opts, "-w", "--wd"); ok {
		in.dir = c.dirOf(d)
	}
	if hasOpt(opts, "-R", "--root") {
		in.dir = unknownDir
	}
	c.runOrShell(rest, in)
}

var nsenterSpec = &optSpec{arg: "tSG", optArg: "muinpCUTrwW", long: []string{
	"all", "cgroup?", "env", "follow-context", "help", "ipc?", "join-cgroup", "keep-caps",
	"mount?", "net?", "no-fork", "pid?", "preserve-credentials", "root?", "setgid=", "setuid=",
	"target=", "time?", "user?", "user-parent", "uts?", "version", "wd?", "wdns="}}

func wrapNsenter(c *wrapCall) {
	opts, rest := nsenterSpec.scan(c.args)
	var in inner
	if hasOpt(opts, "-r", "-w", "-W", "--root", "--wd", "--wdns", "-m", "--mount", "-a", "--all") {
		in.dir = unknownDir
	}
	c.runOrShell(rest, in)
}

var straceSpec = &optSpec{arg: "abeEIoOpPsSuUX", long: []string{
	"absolute-timestamps?", "argv0=", "attach=", "columns=", "const-print-style=", "daemonize?",
	"debug", "decode-fds?", "decode-pids=", "detach-on=", "env=", "failed-only", "fault=",
	"follow-forks", "help", "inject=", "instruction-pointer", "kill-on-exit", "no-abbrev",
	"output=", "output-separately", "quiet?", "raw=", "read=", "relative-timestamps?",
	"seccomp-bpf", "signal=", "stack-trace?", "status=", "string-limit=", "successful-only",
	"summary", "summary-columns=", "summary-only", "summary-sort-by=", "summary-syscall-overhead=",
	"summary-wall-clock", "syscall-limit=", "syscall-number", "syscall-times?", "tips?",
	"timestamps?", "trace=", "trace-fds=", "trace-path=", "user=", "verbose=", "version",
	"write="}}

// strace [options] command: -E NAME=VALUE sets the command's environment; -p attaches to
// running processes instead.
func wrapStrace(c *wrapCall) {
	opts, rest := straceSpec.scan(c.args)
	var in inner
	for _, o := range opts {
		if (o.name == "-E" || o.name == "--env") && o.has {
			if k, v, ok := strings.Cut(o.val.val, "="); ok {
				if in.env == nil {
					in.env = map[string]string{}
				}
				in.env[k] = v
				in.envDyn = in.envDyn || o.val.dynamic
			} else {
				in.unset = append(in.unset, o.val.val)
			}
		}
	}
	c.run(rest, in)
}

var ltraceSpec = &optSpec{arg: "aADeFlnopsuwx", long: []string{
	"align=", "config=", "demangle", "help", "indent=", "library=", "output=", "version"}}

func wrapLtrace(c *wrapCall) {
	_, rest := ltraceSpec.scan(c.args)
	c.run(rest, inner{})
}

var chrtSpec = &optSpec{arg: "TPD", long: []string{
	"all-tasks", "batch", "deadline", "ext", "fifo", "help", "idle", "max", "other", "pid",
	"reset-on-fork", "rr", "sched-deadline=", "sched-period=", "sched-runtime=", "verbose",
	"version"}}

// chrt [options] PRIORITY command; -p acts on a running process, -m prints limits.
func wrapChrt(c *wrapCall) {
	opts, rest := chrtSpec.scan(c.args)
	if hasOpt(opts, "-p", "--pid", "-m", "--max") {
		return
	}
	if len(rest) > 0 && !rest[0].dynamic && isAdjustment("-"+rest[0].val) {
		rest = rest[1:]
	}
	c.run(rest, inner{})
}

var tasksetSpec = &optSpec{long: []string{"all-tasks", "cpu-list", "help", "pid", "version"}}

// taskset [options] MASK command; -p acts on a running process.
func wrapTaskset(c *wrapCall) {
	opts, rest := tasksetSpec.scan(c.args)
	if hasOpt(opts, "-p", "--pid") || len(rest) == 0 {
		return
	}
	c.run(rest[1:], inner{})
}

var suLong = []string{"command=", "fast", "group=", "help", "login", "preserve-environment",
	"pty", "session-command=", "shell=", "supp-group=", "version", "whitelist-environment="}

var suSpec = &optSpec{arg: "cCgGsw", long: suLong, permute: true}

var runuserSpec = &optSpec{arg: "cCgGswu", long: append([]string{"user="}, suLong...), permute: true}

// su [options] [-] [user [args]]: -c/--command (or -C) runs a given command through the
// user's shell, else that shell reads standard input; a login (-, -l) starts in the user's
// home.
func wrapSu(c *wrapCall) {
	suLike(c, suSpec)
}

// runuser: like su, plus -u USER [--] command, which runs the command directly.
func wrapRunuser(c *wrapCall) {
	suLike(c, runuserSpec)
}

func suLike(c *wrapCall, spec *optSpec) {
	opts, rest := spec.scan(c.args)
	var in inner
	login := hasOpt(opts, "-l", "--login")
	for _, r := range rest {
		if r.val == "-" {
			login = true
		}
	}
	if login {
		in.dir = unknownDir
	}
	if s, ok := optValue(opts, "-c", "--command", "-C", "--session-command"); ok {
		c.w.doc.Features.NestedShell = true
		c.script(s, in)
		return
	}
	if hasOpt(opts, "-u", "--user") {
		c.runOrShell(rest, in)
		return
	}
	c.shell(in)
}

var scriptSpec = &optSpec{arg: "cEIOBTmo", optArg: "t", long: []string{
	"append", "command=", "echo=", "flush", "force", "help", "log-in=", "log-io=", "log-out=",
	"log-timing=", "logging-format=", "output-limit=", "quiet", "return", "timing?", "version"},
	permute: true}

// script [options] [file]: -c runs a command through the shell.
func wrapScript(c *wrapCall) {
	opts, _ := scriptSpec.scan(c.args)
	if s, ok := optValue(opts, "-c", "--command"); ok {
		c.w.doc.Features.NestedShell = true
		c.script(s, inner{})
		return
	}
	c.shell(inner{})
}

var systemdRunSpec = &optSpec{arg: "CEHMpu", long: []string{
	"background=", "capsule=", "collect", "description=", "expand-environment=", "gid=", "help",
	"host=", "ignore-failure", "json=", "machine=", "nice=", "no-ask-password", "no-block",
	"on-active=", "on-boot=", "on-calendar=", "on-clock-change", "on-startup=",
	"on-timezone-change", "on-unit-active=", "on-unit-inactive=", "path-property=", "pipe",
	"property=", "pty", "quiet", "remain-after-exit", "same-dir", "scope", "send-sighup",
	"service-type=", "setenv=", "shell", "slice=", "slice-inherit", "socket-property=", "system",
	"timer-property=", "uid=", "unit=", "user", "verbose", "version", "wait",
	"working-directory="}}

// systemd-run [options] command: a service starts in / unless --same-dir, --scope or
// --working-directory; -E/--setenv NAME=VALUE sets its environment.
func wrapSystemdRun(c *wrapCall) {
	opts, rest := systemdRunSpec.scan(c.args)
	if hasOpt(opts, "-S", "--shell") {
		c.shell(inner{dir: unknownDir})
		return
	}
	in := inner{dir: unknownDir}
	if hasOpt(opts, "-d", "--same-dir", "--scope") {
		in.dir = nil
	}
	if d, ok := optValue(opts, "--working-directory"); ok {
		in.dir = c.dirOf(d)
	}
	for _, o := range opts {
		if (o.name == "-E" || o.name == "--setenv") && o.has {
			if k, v, ok := strings.Cut(o.val.val, "="); ok {
				if in.env == nil {
					in.env = map[string]string{}
				}
				in.env[k] = v
				in.envDyn = in.envDyn || o.val.dynamic
			}
		}
	}
	c.run(rest, in)
}

// sg [-] [GROUP [-c] COMMAND]: the command string runs through /bin/sh -c.
func wrapSg(c *wrapCall) {
	args := c.args
	if len(args) > 0 && args[0].val == "-" {
		args = args[1:]
	}
	if len(args) < 2 {
		c.shell(inner{})
		return
	}
	args = args[1:]
	if args[0].val == "-c" {
		args = args[1:]
	}
	if len(args) > 0 {
		c.w.doc.Features.NestedShell = true
		c.script(joinFields(args), inner{})
	}
}

// newgrp [-] [GROUP] starts a shell.
func wrapNewgrp(c *wrapCall) {
	c.shell(inner{})
}

var pkexecSpec = &optSpec{long: []string{"disable-internal-agent", "help", "keep-cwd", "user=", "version"}}

// pkexec [--user U] [--keep-cwd] program: it starts in the user's home unless --keep-cwd.
func wrapPkexec(c *wrapCall) {
	opts, rest := pkexecSpec.scan(c.args)
	in := inner{dir: unknownDir}
	if hasOpt(opts, "--keep-cwd") {
		in.dir = nil
	}
	c.run(rest, in)
}

var fakerootSpec = &optSpec{arg: "bils", long: []string{
	"faked=", "fd-base=", "help", "lib=", "unknown-is-real", "version"}}

func wrapFakeroot(c *wrapCall) {
	_, rest := fakerootSpec.scan(c.args)
	c.runOrShell(rest, inner{})
}

var prlimitSpec = &optSpec{arg: "op", optArg: "cdefilmnqrstuvxy", long: []string{
	"as?", "core?", "cpu?", "data?", "fsize?", "help", "locks?", "memlock?", "msgqueue?",
	"nice?", "nofile?", "noheadings", "nproc?", "output=", "pid=", "raw", "rss?", "rtprio?",
	"rttime?", "sigpending?", "stack?", "verbose", "version"}}

// prlimit [options] command; -p/--pid acts on a running process.
func wrapPrlimit(c *wrapCall) {
	opts, rest := prlimitSpec.scan(c.args)
	if hasOpt(opts, "-p", "--pid") {
		return
	}
	c.run(rest, inner{})
}

var setprivSpec = &optSpec{arg: "", long: []string{
	"ambient-caps=", "apparmor-profile=", "bounding-set=", "clear-groups", "dump", "egid=",
	"euid=", "groups=", "help", "inh-caps=", "init-groups", "keep-groups", "landlock-access=",
	"landlock-rule=", "list-caps", "nnp", "no-new-privs", "pdeathsig=", "regid=", "reset-env",
	"reuid=", "rgid=", "ruid=", "securebits=", "selinux-label=", "version"}}

// setpriv [options] command; -d/--dump and -L/--list-caps print only.
func wrapSetpriv(c *wrapCall) {
	opts, rest := setprivSpec.scan(c.args)
	if hasOpt(opts, "-d", "--dump", "-L", "--list-caps") {
		return
	}
	c.run(rest, inner{})
}

var setarchSpec = &optSpec{long: []string{
	"3gb", "4gb", "addr-compat-layout", "addr-no-randomize", "fdpic-funcptrs", "help",
	"list", "mmap-page-zero", "read-implies-exec", "short-inode", "sticky-timeouts",
	"uname-2.6", "verbose", "version", "whole-seconds"}, permute: true}

// setarch ARCH [options] [command] (linux32, linux64: ARCH implied); without a command, a
// shell.
func wrapSetarch(c *wrapCall) {
	opts, rest := setarchSpec.scan(c.args)
	if hasOpt(opts, "--list") {
		return
	}
	if c.name == "setarch" && len(rest) > 0 {
		rest = rest[1:]
	}
	c.runOrShell(rest, inner{})
}

var numactlSpec = &optSpec{arg: "CNPimpw", long: []string{
	"all", "balancing", "cpubind=", "cpunodebind=", "hardware", "huge", "interleave=", "length=",
	"localalloc", "membind=", "offset=", "physcpubind=", "preferred=", "preferred-many=",
	"shm=", "show", "shmid=", "shmmode=", "strict", "touch", "weighted-interleave="}}

func wrapNumactl(c *wrapCall) {
	_, rest := numactlSpec.scan(c.args)
	c.run(rest, inner{})
}

// bwrapArgs counts the values of bubblewrap's options: two for the listed ones, none for
// the flags, one for every other.
var bwrapTwo = " --bind --bind-try --dev-bind --dev-bind-try --ro-bind --ro-bind-try --symlink" +
	" --setenv --chmod --file --bind-data --ro-bind-data --overlay-src-pair "
var bwrapNone = " --unshare-all --share-net --unshare-user --unshare-user-try --unshare-ipc" +
	" --unshare-pid --unshare-net --unshare-uts --unshare-cgroup --unshare-cgroup-try" +
	" --die-with-parent --as-pid-1 --new-session --clearenv --disable-userns" +
	" --assert-userns-disabled --level-prefix --help --version --tmp-overlay --ro-overlay "

// bwrap [options] command: paths inside are those of the new mount namespace.
func wrapBwrap(c *wrapCall) {
	args := c.args
	i := 0
	for i < len(args) {
		a := args[i]
		if a.dynamic {
			break
		}
		v := a.val
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "--") {
			break
		}
		switch {
		case strings.Contains(bwrapNone, " "+v+" "):
			i++
		case strings.Contains(bwrapTwo, " "+v+" "):
			i += 3
		default:
			i += 2
		}
	}
	c.run(args[min(i, len(args)):], inner{dir: unknownDir})
}

var firejailSpec = &optSpec{}

// firejail [--opt[=value]]... command (options take values only with "=").
func wrapFirejail(c *wrapCall) {
	opts, rest := firejailSpec.scan(c.args)
	if len(rest) == 0 && !hasOpt(opts, "--list", "--tree", "--top", "--version", "--help") {
		c.shell(inner{})
		return
	}
	c.run(rest, inner{})
}

var xvfbRunSpec = &optSpec{arg: "efnpsw", long: []string{
	"auth-file=", "auto-display", "auto-servernum", "error-file=", "help", "listen-tcp",
	"server-args=", "server-num=", "wait=", "xauth-protocol="}}

var valgrindSpec = &optSpec{}

var unbufferSpec = &optSpec{}

var proxychainsSpec = &optSpec{arg: "f"}

var faketimeSpec = &optSpec{long: []string{"date-prog=", "exclude-monotonic", "help"}}

var run0Spec = &optSpec{arg: "gDu", long: []string{
	"background=", "chdir=", "description=", "group=", "help", "machine=", "nice=",
	"no-ask-password", "property=", "setenv=", "shell-prompt-prefix=", "slice=",
	"slice-inherit", "unit=", "user=", "version"}}

var sshAgentSpec = &optSpec{arg: "aEOPt"}

var atSpec = &optSpec{arg: "fqt", long: []string{}}

// Simple exec-wrappers: options (with their values) then the command.
func wrapSimple(spec *optSpec) wrapFunc {
	return func(c *wrapCall) {
		_, rest := spec.scan(c.args)
		c.run(rest, inner{})
	}
}

// faketime [options] TIMESTAMP command
func wrapFaketime(c *wrapCall) {
	_, rest := faketimeSpec.scan(c.args)
	if len(rest) > 0 {
		c.run(rest[1:], inner{})
	}
}

// run0 [options] [command]: systemd's sudo; without a command, a shell.
func wrapRun0(c *wrapCall) {
	opts, rest := run0Spec.scan(c.args)
	var in inner
	if d, ok := optValue(opts, "-D", "--chdir"); ok {
		in.dir = c.dirOf(d)
	}
	c.runOrShell(rest, in)
}

// ssh-agent [options] [command]: runs the command as its child.
func wrapSSHAgent(c *wrapCall) {
	opts, rest := sshAgentSpec.scan(c.args)
	if hasOpt(opts, "-k") {
		return
	}
	c.run(rest, inner{})
}

// at/batch [options] [TIME]: the job is read from standard input (a here-document or
// here-string is re-parsed, run later by sh); -f FILE reads a file instead.
func wrapAt(c *wrapCall) {
	opts, _ := atSpec.scan(c.args)
	if hasOpt(opts, "-f", "-l", "-d", "-r", "-c") {
		return
	}
	c.w.doc.Features.NestedShell = true
	if c.sc.stdin != nil {
		c.script(*c.sc.stdin, inner{dir: unknownDir})
	}
}

var gitSpec = &optSpec{arg: "Cc", long: []string{
	"attr-source=", "bare", "config-env=", "exec-path?", "git-dir=", "glob-pathspecs", "help",
	"html-path", "icase-pathspecs", "info-path", "list-cmds=", "literal-pathspecs", "man-path",
	"namespace=", "no-lazy-fetch", "no-optional-locks", "no-pager", "no-replace-objects",
	"noglob-pathspecs", "paginate", "super-prefix=", "version", "work-tree="}}

// gitRuns reports a git command line that may run another command (a cheap test that
// spares every other git command the unwrapping).
func gitRuns(fields []field) bool {
	for _, f := range fields[1:] {
		if f.val == "bisect" || f.val == "submodule" {
			return true
		}
	}
	return false
}

// git [options] bisect run COMMAND [ARGS] runs the command at each step of the bisection;
// git [options] submodule [--quiet] foreach [--recursive] SCRIPT runs the script with sh
// in each submodule. Both run from directories the walker does not follow (-C, the
// submodules).
func wrapGit(c *wrapCall) {
	opts, rest := gitSpec.scan(c.args)
	in := inner{}
	if hasOpt(opts, "-C", "--git-dir", "--work-tree") {
		in.dir = unknownDir
	}
	switch {
	case len(rest) > 2 && rest[0].val == "bisect" && rest[1].val == "run":
		c.run(rest[2:], in)
	case len(rest) > 1 && rest[0].val == "submodule":
		rest = rest[1:]
		for len(rest) > 0 && (rest[0].val == "--quiet" || rest[0].val == "-q") {
			rest = rest[1:]
		}
		if len(rest) < 2 || rest[0].val != "foreach" {
			return
		}
		rest = rest[1:]
		for len(rest) > 0 && rest[0].val == "--recursive" {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			c.w.doc.Features.NestedShell = true
			c.script(joinFields(rest), inner{dir: unknownDir})
		}
	}
}
