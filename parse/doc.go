// Package parse turns a shell script or an argv array into the command document that
// cmdgate's policy decides on (contract 1 of docs/architecture.md).
//
// # The document
//
// Script parses bash (mvdan.cc/sh/v3/syntax, LangBash) and Argv takes words run without a
// shell; both return a *Document, never nil. Its Commands list every simple command in
// source order wherever it hides: `&&`/`||`/`;` lists, pipelines, subshells, `{ }` blocks,
// if/while/until/for/select/case bodies and conditions, function bodies, coproc, `time`,
// and command and process substitutions in any word (double quotes, unquoted here-document
// bodies, assignments and arrays, redirection targets, `[[ ]]`, `(( ))`, case words and
// patterns, for items, `${x:-$(cmd)}` defaults, let). Declarations (export, local, declare,
// readonly, typeset) are commands named so; statements made only of assignments give no
// command but are listed in Assignments; statements made only of redirections give a
// command with an empty argv. Each command has its evaluated argv, name, flags, options
// (canonical, with their values), operands
// with lexically resolved paths, redirections, environment, context (pipeline and stage,
// subshell, substitution, background, condition, function), the wrappers it was found
// through (via), its position, the directory its relative paths were resolved against, and
// whether it calls a function of the script (function_call). Evaluations lists where bash
// evaluates values as code. Features summarises the shell features used. The fields are documented in document.go;
// testdata/*.txtar holds the expected document of every construct.
//
// # Wrappers
//
// A command that runs another keeps its entry, and the command it runs follows with via
// extended by the wrapper's base name, the same context and position, the wrapper's
// redirections, and the environment and directory the wrapper gives it. Each wrapper's
// real option syntax is followed, so option values are not taken for the command:
//
//   - sudo (NAME=VALUE, -u/-g/-C/-D/-h/… values, -e runs nothing, -s/-i re-parse the words
//     as a shell command), doas, env (-i, -, -u NAME, -C DIR, -S STRING re-split, NAME=VALUE,
//     --), nice (-n N, -N, --adjustment), nohup, time (the bash keyword, and GNU time -p -f
//     FMT -o FILE), timeout (-s SIG, -k DUR, --preserve-status, --foreground, DURATION),
//     stdbuf (-i/-o/-e MODE), ionice (-c/-n/-t; -p/-P/-u act on processes), setsid, command
//     (-p; -v/-V run nothing), builtin, exec (-a NAME, -c, -l);
//   - xargs (-0 -a -d -E -e -I -i -L -l -n -P -r -s … and their long forms; the command,
//     echo by default, gets arguments at run time: it is dynamic, as is every word holding
//     the -I/-i replace string), find -exec/-execdir/-ok/-okdir COMMAND … `;` or `{} +`
//     (each an inner command, dynamic, with `{}` words dynamic), watch (the words joined and
//     re-parsed as a sh -c script; -x runs them directly), busybox APPLET;
//   - shells sh, bash, rbash, zsh, dash, ksh, ksh93, mksh, lksh, pdksh, oksh, ash, yash, posh:
//     the -c script (options before it or clustered: -lc, -ec, -o OPT, +O OPT, --norc,
//     --rcfile FILE) is re-parsed; without -c and without a script file (or with -s, or
//     with /dev/stdin as the file), a here-document or here-string on standard input is;
//     eval ARGS (joined with spaces) and `source /dev/stdin` (or `.`) fed a here-document
//     are re-parsed in the same shell; a trap action is re-parsed;
//   - chroot [--userspec/--groups] NEWROOT, flock [-w/-E] FILE (command, or -c SCRIPT),
//     unshare, nsenter, strace (-E NAME=VALUE), ltrace, chrt [PRIORITY], taskset MASK,
//     su/runuser -c SCRIPT (runuser -u USER command), script -c SCRIPT, systemd-run (-E,
//     --setenv), run0, sg GROUP [-c] COMMAND, newgrp, pkexec, fakeroot, prlimit, setpriv,
//     setarch ARCH / linux32 / linux64, numactl, bwrap (its one- and two-value options),
//     firejail, toybox APPLET, dbus-run-session, xvfb-run, valgrind, unbuffer, torsocks,
//     proxychains, catchsegv, faketime TIMESTAMP, ssh-agent, and at/batch, whose job read
//     from a here-document on standard input is re-parsed;
//   - git bisect run COMMAND, and git submodule foreach SCRIPT (re-parsed as sh -c).
//
// Wrappers that start an interactive shell when given no command (sudo -s/-i, doas -s, su,
// runuser, chroot DIR, unshare, nsenter, fakeroot, script, systemd-run --shell, sg GROUP,
// newgrp) have that shell re-parse a here-document or here-string on standard input.
//
// Re-parsing and unwrapping nest, up to Options.MaxDepth levels. A wrapper argument known
// only at run time (`sudo $CMD`) gives an inner command with a dynamic name. Text re-parsed
// from a string with run-time parts (`bash -c "$X"`, `eval "rm $F"`) cannot be trusted: all
// its commands are dynamic with dynamic names.
//
// # Options
//
// Command.Options reads the words with the option syntax of the tool named (options.go,
// optables.go): getopt_long for the GNU tools (which short options take a value, attached
// or as the next word; long options with "=" or the next word; unique prefixes of long
// names, an ambiguous prefix naming every candidate; options after operands unless the
// tool stops at its first operand, as env, xargs, timeout and awk do), tar's old style
// (cIf PROG a.tar), git's own options then its subcommand's, find's and Go's single-dash
// words (find -exec's command is skipped), zip's two-letter options (-TT), BSD getopt for
// ssh, scp and sftp, and the wrappers' specs. Each option gets one canonical name (the
// long name when there is one) and its value, so that a rule about an option meets every
// spelling of it: tar -Iprog, tar -cvI prog, tar cIf prog, tar --use-compress-prog=prog,
// /usr/bin/tar --use-compress-program prog.
//
// # Evaluations
//
// Some expansions turn data into code (evaluate.go): ${x@P} decodes prompt escapes (\140
// is a backquote) and then runs the command substitutions of the result; arithmetic
// evaluates the values of the variables it names as expressions, and an array subscript
// in them runs `$(cmd)` (x='a[$(id)]'; echo $((x))); ${!x}, namerefs and the variable
// names of read, printf -v, wait -p, test -v and declare evaluate subscripts too.
// Document.Evaluations records each such construct (prompt, escape, indirect, arithmetic,
// nameref, name) with the variables whose values it evaluates, and resolves those from
// every assignment of the document (order and shell ignored: a union): standalone and
// prefix assignments, declarations, loop items, arithmetic assignments (numbers), read
// from a static here-string, printf -v with static words (escapes decoded). A variable
// the script never assigns, or assigns a run-time value, makes the evaluation dynamic.
// Arrays declared -A have string subscripts (not evaluated); variables declared -i
// evaluate what they are assigned; ${x@Q} and the other transformations evaluate
// nothing; test and [ compare numbers without evaluating. evaluate_test.go checks each
// kind, in both directions, against bash.
//
// # Functions
//
// A function definition's body is walked where it is defined (its commands have
// context.function), and the calls of the function are commands named so. Such a call
// has function_call when bash certainly runs the function there: the name has no
// slash, is a POSIX name and not a special builtin, and a definition of it has run in
// this shell on every path to the call (earlier, in the same or an enclosing shell, not
// in a branch, loop, right side of && or ||, subshell, pipeline stage, substitution or
// background job that has ended, nor in another shell), while nothing in the shell may
// unset it (`unset NAME`, `unset -f NAME`, anywhere) or replace functions unseen
// (source, mapfile -C, eval or trap text with run-time parts, a run-time command name).
// Function bodies, trap actions and eval'd text see the functions defined before them.
// `command NAME`, `builtin NAME` and `exec NAME` bypass functions; a call is not
// unwrapped (a function named sudo is not the sudo wrapper) and changes the directory
// only as its body may. funcs_test.go checks the marks against bash. (mvdan.cc/sh reads
// `f() { :; } && g` as a function whose body is `{ :; } && g`; the walker splits it the
// way bash runs it: f is defined, then g runs.)
//
// # Static evaluation
//
// Words are evaluated the way bash would without running anything: quotes and backslash
// escapes are removed (inside double quotes and here-documents only before $ ` " \ and a
// newline), line continuations joined, $'…' decoded (\a \b \e \E \f \n \r \t \v \\ \' \" \?,
// octal \NNN, \xHH, \uHHHH, \UHHHHHHHH as UTF-8, \cX; a NUL ends the string), $"…" read as
// "…", and brace expansion done ({a,b}, nested, {1..10..2}, {a..e}, {01..10}; unquoted empty
// results dropped). A word that decodes to invalid UTF-8 refuses the script: the JSON form
// would show the policy something else than what runs. bash_test.go checks all of this
// against bash itself. Parameter expansions, command and process substitutions and
// arithmetic need run-time state: they keep their source text in the word (`$HOME/x`) and
// make the command dynamic (dynamic_name in argv[0]). Unquoted glob characters (* ? […],
// extglob) are kept unexpanded and set glob; a glob in argv[0] also sets dynamic_name.
// Unquoted tilde prefixes stay as written and make a path unknown.
//
// Paths are resolved lexically (no file system access, no symlinks) against the directory
// the command runs in: the request cwd, changed by static `cd DIR`/`pushd DIR` in the same
// shell (not across subshells, pipelines or background jobs) and by wrappers (`env -C`). A
// failed cd leaves the previous directory, so inside_workspace must hold for every directory
// the command may run in. Where the directory is unknown, relative paths are "" and outside.
//
// # Limits
//
// The package is pure: no I/O, no policy. Script refuses (Document.Error with a position,
// no commands) a script larger than Options.MaxBytes (DefaultMaxBytes, 64 KiB), containing a
// NUL byte or invalid UTF-8, that does not parse, or nested deeper than Options.MaxDepth
// (DefaultMaxDepth, 16: compound commands, substitutions, wrappers and re-parsed scripts each
// add a level); also nested scripts (each at most MaxBytes, 4 × MaxBytes in all), brace
// expansions past 16384 words and documents past 65536 words in all. Argv refuses an empty
// argv, NUL bytes, invalid UTF-8 and words over MaxBytes. The work per input is bounded.
//
// Some things are beyond static analysis and left to the policy and the sandbox: the
// commands a script file, `source`, a function called by a run-time name, or a shell
// reading from a pipe would run; what `$VAR` holds; globs matching; aliases (off in
// non-interactive bash); CDPATH set in the environment rather than the script; $'\u…' in a
// non-UTF-8 locale; what a value evaluated at run time holds when it comes from outside
// the script (Evaluation.Dynamic says so).
//
// Script and Argv are safe for concurrent use; parsers are pooled.
package parse
