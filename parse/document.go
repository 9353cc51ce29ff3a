package parse

// Document is the policy input of contract 1 of docs/architecture.md: what Rego rules see as `input`.
// It is an API for the security teams who write rules, so fields are only ever added.
//
// Parse functions fill Request.Source, Request.ShellMode, Request.Raw, Request.Cwd,
// Request.Workspace, Commands, Assignments, Evaluations, Features and Error; the caller
// (gateway or CLI) fills Principal and the remaining Request fields. Slices and maps are
// never nil, so every array and object is present in the JSON form.
type Document struct {
	Principal Principal `json:"principal"`
	Request   Request   `json:"request"`
	Commands  []Command `json:"commands"`
	// Assignments lists every shell variable assignment that is not a prefix of a command
	// (prefix assignments are in Command.Env): bare `A=b` statements, `A+=b`, array
	// assignments, the NAME=VALUE words of export/declare/typeset/local/readonly (which also
	// stay operands of those commands), for/select loop variables (one entry per item) and
	// `${A:=b}`/`${A=b}` defaults. Additive field (not in the first version of contract 1).
	Assignments []Assignment `json:"assignments"`
	// Evaluations lists every place where bash evaluates text as more than a word:
	// prompt and escape expansion (${x@P}, ${x@E}), indirect expansion (${!x}),
	// arithmetic ($(( )), $[ ], (( )), let, for (( )), [[ A -eq B ]] and the other
	// arithmetic comparisons, array subscripts, substring offsets, assignments to
	// integer variables), namerefs, and variable names given to builtins that evaluate
	// their subscripts (read NAME, printf -v NAME, test -v NAME, wait -p NAME, declare
	// NAME=VALUE), in the order the walk finds them. Additive field.
	Evaluations []Evaluation `json:"evaluations"`
	Features    Features     `json:"features"`
	Error       *Error       `json:"error"`
	// Sandbox is what the backend that will run the command guarantees; the caller
	// fills it. The zero value guarantees nothing, and the default rules are then as
	// strict as for the process backend. Additive field.
	Sandbox Sandbox `json:"sandbox"`
	// Readonly is what a request of the read-only language (seed 004's execute) reads;
	// nil for every other request. Additive field.
	Readonly *Readonly `json:"readonly,omitempty"`
}

// Readonly is the file and pipeline of a read-only language request: Commands hold the
// pipeline's stages as commands (`cat REAL_PATH`, `grep -n X`, …), nothing of which
// reaches a shell or starts a process.
type Readonly struct {
	// Command is the pipeline, normalised (`head -n 5 F` is `cat F | head -n 5`).
	Command string `json:"command"`
	// File is the file as written; Path its real path (symbolic links followed), which
	// the allowlist allowed.
	File string `json:"file"`
	Path string `json:"path"`
}

// Sandbox describes the isolation a command will run in, so that rules can allow what
// the sandbox makes harmless and nothing else.
type Sandbox struct {
	// Backend names the executor: "linux", "process", "docker", "custom" (an embedder's),
	// or "" when unknown (the offline CLI).
	Backend string `json:"backend"`
	// Isolated is true when the command sees only the workspace, the system directories
	// (read-only) and what the fields below name: the host's home directories, /var,
	// /run and the rest of its files are not there, and nothing outside the workspace
	// is writable but PrivateTmp and Home.
	Isolated bool `json:"isolated"`
	// PrivateTmp is true when /tmp (and /dev/shm) are the command's own, empty at its
	// start and gone at its end.
	PrivateTmp bool `json:"private_tmp"`
	// Home is the command's HOME when the sandbox gives it one of its own (the
	// workspace's persistent home with its tool caches), "" otherwise. With Isolated,
	// `~` and paths under Home name that directory and nothing of the host's.
	Home string `json:"home"`
}

// Principal is who asked.
type Principal struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// Request describes the request as a whole.
type Request struct {
	ID        string `json:"id"`
	Source    string `json:"source"`     // "script" or "argv"
	ShellMode string `json:"shell_mode"` // Options.ShellMode, else "default" (script) or "direct" (argv)
	Profile   string `json:"profile"`
	// Raw is the script as given, or for argv the words joined with bash quoting.
	Raw string `json:"raw"`
	// Cwd and Workspace are Options.Cwd and Options.Workspace, lexically cleaned.
	Cwd       string `json:"cwd"`
	Workspace string `json:"workspace"`
	Task      string `json:"task"`
}

// Command is one simple command found anywhere in the script, or the inner command a wrapper
// (sudo, env, xargs, bash -c, ...) runs.
type Command struct {
	// Index is the command's position in Document.Commands.
	Index int `json:"index"`
	// Name is the base name of argv[0] (`/usr/bin/sudo` → `sudo`; "" when argv[0] ends in a
	// slash). When DynamicName is true Name equals Path: a base name cut out of run-time text
	// would mean nothing.
	Name string `json:"name"`
	// Path is argv[0] as evaluated.
	Path string `json:"path"`
	// Argv is every word after static evaluation (quotes removed, braces expanded). Words
	// that need run-time state keep their source text (`$HOME/x`). A statement made only of
	// redirections (`> f`, `A=1 > f`) gives a command with an empty Argv, Name and Path so
	// that its redirections are seen.
	Argv []string `json:"argv"`
	// Flags holds every word of Argv[1:] that starts with "-" (a lone "-" excepted) up to the
	// first "--", wherever it stands (`rm foo -rf` has flags -r and -f). A word starting with
	// "--" is kept whole with any `=value` (`--output=x`). Any other word is a cluster of
	// short options split into one flag per character: `-rf` → `-r`,`-f`; `-n5` → `-n`,`-5`;
	// so single-dash long options are split too: find's `-name` → `-n`,`-a`,`-m`,`-e` and
	// `go test -run` → `-r`,`-u`,`-n`. Rules about such tools read Argv or Options. In a
	// word with a run-time part, the characters before that part are split and the rest is
	// one flag: `-rf$X` → `-r`,`-f`,`-$X`.
	Flags []string `json:"flags"`
	// Options holds every option of Argv[1:] up to "--" with its value, however it was
	// written, read with the syntax of the tool named (see Option): `tar -Iprog`,
	// `tar -cI prog`, `tar cIf prog a.tar` (tar's old style), `tar --use-compress-prog=prog`
	// and `/usr/bin/tar --use-compress-program prog` all give {name:
	// "--use-compress-program", value: "prog"}. For a tool parse has no table for, a
	// long option keeps its "=value" as value and a short cluster gives one value-less
	// option per letter (as Flags). Additive field.
	Options []Option `json:"options"`
	// Operands are the words of Argv[1:] that are not flags, and every word after "--".
	// "--" itself is neither.
	Operands []Operand `json:"operands"`
	// Redirects are the command's own redirections in source order, followed by those of
	// the compound commands around it (`{ a; b; } > f` gives both a and b the `> f`),
	// innermost first. The inner command of a wrapper carries the wrapper's redirections.
	Redirects []Redirect `json:"redirects"`
	// Env holds the leading assignments (`FOO=bar cmd`), those a wrapper makes (`env A=1
	// cmd`, `sudo A=1 cmd`) and those inherited from an outer command (`A=1 bash -c cmd`).
	Env map[string]string `json:"env"`
	// Dynamic is true when any word, env value or redirection target of the command needs
	// run-time state ($VAR, ${…}, $(…), `…`, $((…)), <(…)), when the command is the inner
	// command of xargs or find -exec (they add arguments at run time), and for every command
	// of a script re-parsed from text that had run-time parts (`bash -c "$X"`, `eval "$X"`).
	Dynamic bool `json:"dynamic"`
	// DynamicName is true when argv[0] needs run-time state or is an unquoted glob
	// (`/bin/r?`), and for every command of a script re-parsed from text that had run-time
	// parts: the command actually run cannot be known statically.
	DynamicName bool `json:"dynamic_name"`
	// Glob is true when any word or redirection target holds an unquoted glob character
	// (`*`, `?`, `[…]`, extglob), which is kept unexpanded in the text.
	Glob bool `json:"glob"`
	// Via names the wrappers the command was found through, outermost first, by base name:
	// `sudo bash -c "rm x"` gives rm the via ["sudo","bash"]. [] for a command of the script
	// itself. The bash `time` keyword counts as a wrapper ("time").
	Via     []string `json:"via"`
	Context Context  `json:"context"`
	// Pos is where the command starts. Inner commands of wrappers and commands of re-parsed
	// scripts (bash -c, eval, here-doc-fed shells) have the position of the outer command;
	// the commands timed by the `time` keyword keep their own.
	Pos Pos `json:"pos"`
	// Cwd is the directory the command's relative paths were resolved against: the request
	// cwd, or the directory of the last static `cd DIR`/`pushd DIR` before it in the same
	// shell (assuming it succeeded), or the directory a wrapper sets (`env -C DIR`,
	// `sudo -D DIR`). "" when unknown: after `cd $X`, `cd -`, a bare `cd`, `popd`, `source`,
	// a command with a dynamic name, inside loops and functions that change directory, for
	// find -execdir, chroot and the like. Additive field.
	Cwd string `json:"cwd"`
	// FunctionCall is true when bash certainly runs a shell function the script defined,
	// not a program or builtin: the name has no slash and, at this point, a definition
	// of it has run in this shell on every path (earlier in source order, in the same or
	// an enclosing shell; not inside an if/case branch, a loop, the right side of && or
	// ||, a subshell, a pipeline stage, a substitution or a background job that ends
	// before this point, nor in a nested `bash -c` unless defined there), and nothing in
	// the shell may remove or replace it unseen (`unset NAME` or `unset -f NAME`
	// anywhere, source, mapfile -C, eval or trap text with run-time parts, a command
	// with a run-time name). Function bodies, trap actions and eval'd text see the
	// functions defined before them (a body also sees itself). False when unsure, and
	// always for path names (./run), the inner commands of wrappers (`command run`,
	// `builtin run` and `exec run` bypass functions), the special builtins a POSIX shell
	// finds before functions (eval, exec, export, set, trap, unset, ...), names that
	// are not POSIX names (bash in POSIX mode does not define `run-tests`), and for the
	// program of an Argv document (no shell runs it; a `bash -c` script it runs may
	// call its own functions). A function call is not unwrapped (a function named sudo runs its
	// body, not another command) and has its body's effect on the directory, not a
	// builtin's. The body's commands are in Commands where the function is defined.
	// Additive field.
	FunctionCall bool `json:"function_call"`
}

// Option is one option of a command, normalised: the name every spelling of the option
// gets, and its value wherever it was written. Which options take a value, and the long
// names a prefix abbreviates, come from the tool's own syntax (getopt_long for the GNU
// tools, git's parse-options, Go's flag package, find's expression, zip's two-letter
// options), for: tar (gtar, bsdtar), git (its own options and those of clone, fetch,
// pull, ls-remote, archive, push, send-pack, fetch-pack, grep, rebase, difftool, init),
// find, sort, split, zip, sed, awk (gawk, mawk, nawk), xargs, env, timeout, nice, make,
// curl, wget, rsync, ssh, scp, sftp, man, rg, go, cargo, npm, the shells and the
// wrappers parse unwraps.
type Option struct {
	// Name is the option's canonical name: its first long name when it has one (tar's -I,
	// --use-compress-prog and --use-compress-program are all "--use-compress-program";
	// git clone's -u is "--upload-pack"), else its short name ("-o" for ssh). A unique
	// prefix of a long name gives that name; an ambiguous prefix (which the tool refuses)
	// gives one entry per candidate; an unknown long name is kept as written, without
	// its "=value". Options of single-dash tools (find, go) keep their one dash
	// (`-exec`, `-toolexec`; go's `--toolexec` is "-toolexec"). A word whose option
	// letters are known only at run time (`-$X`, `--$X`) is one entry named as written,
	// Dynamic.
	Name string `json:"name"`
	// Value is the option's value as evaluated: attached (-Iprog, -oProxyCommand=x), after
	// "=" (--rsh=sh), or the next word (-e sh, --rsh sh); for find's -exec family, the
	// command it runs. "" when the option takes none.
	Value string `json:"value"`
	// Argi is the index in Command.Argv of the word holding the option (its value may be
	// the next word).
	Argi int `json:"argi"`
	// Dynamic is true when the option's name or value needs run-time state.
	Dynamic bool `json:"dynamic"`
}

// Evaluation is one place where bash evaluates text (see Document.Evaluations): the
// construct, and what it evaluates. bash_test.go checks each kind against bash.
type Evaluation struct {
	// Kind is what bash does:
	//   - "prompt": ${x@P} decodes the prompt escapes of x's value (\NNN octal included)
	//     and then expands it, command substitutions included;
	//   - "indirect": ${!x} (and ${!x[i]}, ${!x:-d}, ...) uses x's value as a variable
	//     name, whose array subscript is evaluated as arithmetic (a[$(cmd)] runs cmd);
	//     ${!x[@]}, ${!x*} and ${!x@} (keys and names) are not evaluations;
	//   - "arithmetic": the text is an arithmetic expression, whose variables' values
	//     are arithmetic expressions too, whose array subscripts run command
	//     substitutions: $(( )), $[ ], (( )), let, for (( ; ; )), the operands of
	//     [[ -eq -ne -lt -le -gt -ge ]] (not those of test and [), the subscripts of
	//     indexed arrays (${a[i]}, a[i]=v, a=([i]=v); not of arrays declared -A),
	//     substring offsets and lengths (${x:o:l}), and values assigned to variables
	//     declared -i and to RANDOM, SRANDOM, OPTIND and HISTCMD;
	//   - "nameref": the target of a variable declared -n (declare -n r=TARGET, or any
	//     assignment to such a variable), a name whose subscript is evaluated when r is
	//     used;
	//   - "name": a word a builtin takes as a variable name, whose subscript it evaluates:
	//     read NAME, printf -v NAME, wait -p NAME, test -v NAME / [ -v NAME ] / [[ -v
	//     NAME ]], declare/local/typeset NAME=VALUE; recorded when NAME is only known at
	//     run time or has a subscript;
	//   - "escape": ${x@E} decodes x's backslash escapes (as $'…' does) without running
	//     anything: recorded because it turns text the script shows into other text.
	// The other transformations (@Q @A @K @k @a @U @u @L) evaluate nothing.
	Kind string `json:"kind"`
	// Text is the construct's source text: `${x@P}`, `$((a + 1))`, `$v -eq 1`, the
	// value assigned to an integer variable or nameref, the NAME word.
	Text string `json:"text"`
	// Names are the variables whose values bash evaluates there, and, through static
	// values that are evaluated in turn, the variables those name (`x=y; y=z; $((x))`
	// gives x, y and z), sorted. Numeric specials ($#, $?, $$, $!, RANDOM, SECONDS,
	// LINENO, ...) are left out.
	Names []string `json:"names"`
	// Values are the static texts evaluated there: every value the script assigns to the
	// names anywhere (the same shell or another, in any order), and quoted text of the
	// construct itself (`[[ 'a[$(id)]' -eq 1 ]]`, `read 'a[$(id)]'`), sorted, without
	// duplicates. The value of `printf -v NAME FORMAT ARGS` with static words is its
	// words with printf's escapes (\NNN, \xHH, \uHHHH) decoded; that of `read NAME`
	// fed a static here-string or here-document is its text.
	Values []string `json:"values"`
	// Dynamic is true when what bash evaluates cannot be known statically: a name the
	// script never assigns (the environment), or assigns a run-time value (x=$(cmd),
	// read x from a file or pipe, mapfile, getopts, a for item with run-time parts), a
	// positional parameter, the output of a command substitution in the construct, a
	// variable name known only at run time, or anything after an assignment the parser
	// cannot see (source, eval of run-time text, a command with a run-time name, a
	// builtin given a run-time variable name). When false, Values holds everything
	// evaluated there, but for the numbers arithmetic assignments, for (( )) counters,
	// values made only of arithmetic expansions and lengths (i=$((i + 1)), n=${#a[@]})
	// and the numeric specials give.
	Dynamic bool `json:"dynamic"`
	// Command is the index of the command whose words hold the construct, -1 when none
	// does (((  )), [[ ]], for (( )), case words, a standalone assignment).
	Command int `json:"command"`
	// Via and Context are those a command at the same place would have.
	Via     []string `json:"via"`
	Context Context  `json:"context"`
	Pos     Pos      `json:"pos"`
}

// Operand is a non-flag word of a command, resolved lexically against the command's cwd.
type Operand struct {
	// Text is the word as evaluated.
	Text string `json:"text"`
	// Path is Text resolved lexically (no symlinks) against Command.Cwd: absolute words are
	// cleaned, relative words joined to the cwd and cleaned, so `..` is resolved. Path is ""
	// when it cannot be known statically: a dynamic word, a word starting with an unquoted
	// tilde (`~/x`), an empty word, or a relative word when the cwd is unknown.
	Path string `json:"path"`
	// InsideWorkspace is true when Path equals the workspace or lies under it, for every
	// directory the command may run in (a failed `cd` leaves the previous one). Always false
	// when Path is "" or the workspace is unset, and for a glob whose components could match
	// `..` (`.*`).
	InsideWorkspace bool `json:"inside_workspace"`
	Dynamic         bool `json:"dynamic"`
	Glob            bool `json:"glob"`
	// Argi is the operand's index in Command.Argv. Additive field.
	Argi int `json:"argi"`
}

// Redirect is one redirection of a command.
type Redirect struct {
	// Op is the operator as written: `>`, `>>`, `<`, `<<`, `<<-`, `<<<`, `>&`, `<&`, `&>`,
	// `&>>`, `>|`, `<>`. `<<` and `<<-` are here-documents, `<<<` a here-string.
	Op string `json:"op"`
	// Fd is the descriptor redirected: as written, else 1 for output operators (`&>` and
	// `&>>` also redirect 2) and 0 for input ones; -1 for a variable descriptor (`{fd}>f`).
	Fd int `json:"fd"`
	// Target is the evaluated word after the operator; for a here-document, its delimiter.
	Target string `json:"target"`
	// Path is Target resolved like Operand.Path for file redirections; "" for descriptor
	// duplications (`2>&1`, `>&2`, `<&0`, `>&-`), here-documents and here-strings.
	Path            string `json:"path"`
	InsideWorkspace bool   `json:"inside_workspace"`
	// Write is true when a file is written: `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, and `>&WORD`
	// when WORD is not a descriptor number or `-` (or is dynamic).
	Write bool `json:"write"`
	// Dynamic is true when the target, or the body of a here-document with an unquoted
	// delimiter, needs run-time state.
	Dynamic bool `json:"dynamic"`
	// Body is the text fed to the command's input: the here-document body (static text with
	// run-time parts kept as source, leading tabs removed for `<<-`, taken literally when the
	// delimiter is quoted) or the here-string word. "" for other redirections. Additive field.
	Body string `json:"body"`
}

// Context says where in the script a command sits. The flags are inherited by every command
// nested inside, and by the inner commands of wrappers.
type Context struct {
	Pipeline     bool `json:"pipeline"`     // a stage of a pipeline with 2+ stages
	Subshell     bool `json:"subshell"`     // inside ( )
	Substitution bool `json:"substitution"` // inside $( ), backquotes, <( ) or >( )
	Background   bool `json:"background"`   // run with & (or coproc)
	Condition    bool `json:"condition"`    // in an if/elif/while/until condition list
	Function     bool `json:"function"`     // inside a function body
	// PipelineID identifies the innermost pipeline the command is part of (-1 when none);
	// commands of one pipeline share it and ids are unique within the document. Stage is
	// the command's 0-based position in it (0 when none).
	PipelineID int `json:"pipeline_id"`
	Stage      int `json:"stage"`
}

// Pos is a 1-based source position; columns count bytes.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Assignment is one shell variable assignment (see Document.Assignments).
type Assignment struct {
	// Name is the variable assigned; for an element (`a[1]=x`), the array's name.
	Name string `json:"name"`
	// Value is the evaluated value; for an array assignment, its source text `(a b)`.
	Value string `json:"value"`
	// Dynamic is true when the value needs run-time state (including a tilde or a glob).
	Dynamic bool `json:"dynamic"`
	Append  bool `json:"append"` // +=
	// Via and Context are those a command at the same place would have.
	Via     []string `json:"via"`
	Context Context  `json:"context"`
	Pos     Pos      `json:"pos"`
}

// Features summarises the shell features the script uses anywhere, re-parsed scripts included.
type Features struct {
	CommandSubstitution bool `json:"command_substitution"` // $( ) or backquotes
	ProcessSubstitution bool `json:"process_substitution"` // <( ) or >( )
	Background          bool `json:"background"`           // & or coproc
	Heredoc             bool `json:"heredoc"`              // <<, <<- or <<<
	FunctionDefinition  bool `json:"function_definition"`
	// Eval: eval, a trap action re-parsed as a script, or `source /dev/stdin` fed a
	// here-document.
	Eval bool `json:"eval"`
	// NestedShell: a shell binary (sh, bash, zsh, dash, ksh, mksh, ash, ...) runs, or a
	// wrapper hands a string to a shell (watch, su -c, runuser -c, script -c, flock -c, sg,
	// sudo -s/-i), or starts one (su, sudo -s, chroot DIR, unshare, newgrp, ... without a
	// command).
	NestedShell bool `json:"nested_shell"`
}

// Error reports why a script could not be turned into commands. A document with an
// Error has no commands, no assignments and no evaluations, its features are all false,
// and it must be denied.
type Error struct {
	Message string `json:"message"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
}
