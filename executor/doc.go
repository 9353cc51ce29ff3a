// Package executor runs what the policy allowed: one command, to completion, with its
// output captured under a cap. It defines the interface every sandbox backend implements
// (Executor, Spec, Result, the typed Error) and the parts they share: validation of a
// Spec against the server's Config, output capture, environment filtering and the
// Watchdog that stops a command's process tree on timeout. The backends live in
// sub-packages: process (portable), linux and docker. exec_command is the
// reference for the semantics below.
//
// # Commands and shells
//
// A Spec carries either an argv or a script. In ShellDefault mode the command goes
// through the platform shell: Linux `bash -c SCRIPT` (`sh -c` where bash is absent),
// macOS `zsh -lc SCRIPT`, Windows `pwsh.exe -NoLogo -NoProfile -Command SCRIPT`. A
// script is that single argument, byte for byte as given, so it runs exactly as the
// policy saw it; an argv is first joined with the shell's quoting so that the shell's
// word splitting gives back exactly the argv. In ShellDirect mode the argv is executed as
// is: argv[0] is looked up in PATH (with PATHEXT on Windows) when it is a bare name,
// resolved against the working directory when it is a relative path.
//
// # Limits and their defaults
//
// Config holds the server-side bounds; its zero value is exec_command's defaults:
//
//	timeout           default 30 s,          1 ms .. 120 s (Config.MaxTimeout; long builds need 30 min)
//	max_output_chars  default 200 000,       1000 .. 1 000 000 per stream (Config.MaxOutputChars)
//	kill grace        2 s between SIGTERM and SIGKILL
//	wait delay        1 s for the last output and processes after a kill
//
// Config.Prepare fills a Spec's zero fields with the defaults and rejects what is out of
// range as INVALID_ARGUMENT; Config.TimeoutMS and Config.OutputChars convert the optional
// wire fields, where an explicit 0 is out of range. Prepare also rejects NUL bytes and
// invalid UTF-8 in argv, script, cwd and stdin (what reaches the process must be the text
// the policy saw) and a cwd that is empty or relative. A missing or non-directory cwd is
// NOT_DIRECTORY, an unresolvable direct-mode command COMMAND_NOT_FOUND with the name in
// the message, an argument list beyond the operating system's limit (a single argument,
// hence a script, above 128 KiB on Linux) INVALID_ARGUMENT, anything unexpected INTERNAL.
// All are *Error, matched with errors.Is against ErrInvalidArgument, ErrNotDirectory,
// ErrCommandNotFound, ErrInternal, or taken apart with errors.As.
//
// # Exit codes
//
// Result.ExitCode is the command's exit status; 128+N when signal N ended it (the
// shells' convention: 137 for SIGKILL, 143 for SIGTERM); 124 when the timeout stopped it,
// with TimedOut set. A non-zero exit is a Result, never an error.
//
// # Timeouts and process trees
//
// A command runs as the leader of its own process tree (a process group in a new
// session on Unix, a job object on Windows). When the timeout passes, or the caller's
// context ends, the whole tree is asked to stop (SIGTERM to the group) and killed
// (SIGKILL) once Config.KillGrace has passed, or as soon as the leader has exited and the
// output pipes are closed. Windows has no gentle stop: the job is terminated at once. The
// Result keeps the output captured until then. When the command ends by itself, whatever
// it left running in its tree (a background job) is killed too: nothing a run started
// outlives it. Run returns only when no process of the tree is alive any more, or
// reports INTERNAL. Processes that leave the tree on purpose (setsid, `set -m` job
// control) escape the process backend; the linux backend's PID namespace holds them.
//
// # Output
//
// Each stream is captured by a Capture: the first MaxOutputChars characters (Unicode
// code points) are kept, a multi-byte sequence is never split, invalid UTF-8 is replaced
// by U+FFFD (one per byte), and everything past the cap is counted and discarded without
// being buffered, so memory stays bounded however much a command prints.
// Result.StdoutBytes and StderrBytes are the observed byte counts.
//
// # Environment
//
// The command's environment is built from an allowlist, never the gateway's whole
// environment (Config.Environ): PATH, the locale, TERM and TZ of the gateway's, the names
// Config.EnvPass matches, the workspace's tool caches and persistent HOME (Caches), and
// Config.EnvSet. Config.EnvMode "inherit" passes the gateway's environment instead, but
// never a variable that looks like a credential (CredentialLike) unless EnvPass names
// it. Whatever the mode, the variables matching DefaultEnvDeny and Config.EnvDeny never
// reach a command: CMDGATE_* (the gateway's own settings and token) and the shell
// start-up variables that would make bash run something other than the script
// (BASH_ENV, BASH_FUNC_*, SHELLOPTS, BASHOPTS). Patterns use path.Match syntax,
// case-insensitive on Windows.
//
// # Tool caches
//
// Caches is a workspace's cache area on the host (CacheDir names one per workspace):
// Go's build and module caches, npm, yarn, pip, cargo, Maven and Gradle, and a HOME kept
// between commands. The linux sandbox binds it read-write at its own path; the process
// backend points the same variables at it. ClearCaches empties it.
//
// # Standard input
//
// Spec.Stdin is written to the command and then closed; an empty Stdin gives the command
// an empty standard input, never the gateway's.
//
// # Resources
//
// Spec.Resources sets rlimits on the command's processes where the backend can: core
// dumps off, file size 8 GiB, 8192 open files by default, the process count left alone
// (RLIMIT_NPROC counts all processes of the user, machine-wide). Each is configurable.
//
// # Network
//
// Spec.Network records whether the decision granted network access. Only backends that
// isolate the network enforce it; the process backend does not, and says so. The linux
// backend gives a command granted the network a way to the outside world only: its own
// network namespace with a user-mode uplink (slirp4netns), through which the host's
// loopback, the host's own addresses and link-local addresses stay unreachable.
package executor
