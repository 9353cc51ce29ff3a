package executor

import (
	"context"
	"io"
	"time"
)

// Executor runs one command to completion. Implementations are safe for concurrent use:
// each Run is independent.
//
// Run returns a *Error when the command could not be run (invalid spec, missing
// directory, unknown command, failure to start). Once the command has started, a
// non-zero exit, a signal or a timeout is a Result, not an error. When ctx ends before
// the command does, Run stops the command's tree as for a timeout and returns the partial
// Result together with an error wrapping the context's cause (errors.Is(err,
// context.Canceled) or context.DeadlineExceeded).
type Executor interface {
	Run(ctx context.Context, spec Spec) (Result, error)
}

// ShellMode says how a Spec's command reaches the operating system (exec_command's parameters).
type ShellMode string

const (
	// ShellDefault runs the command through the platform shell: `bash -c` on Linux
	// (`sh -c` where bash is absent), `zsh -lc` on macOS, `pwsh.exe -NoLogo -NoProfile
	// -Command` on Windows. The empty ShellMode means ShellDefault.
	ShellDefault ShellMode = "default"
	// ShellDirect executes Argv as is: Argv[0] is resolved through PATH (PATHEXT on
	// Windows) and no shell is involved.
	ShellDirect ShellMode = "direct"
)

// Spec is one command to run. Exactly one of Argv and Script is set.
//
// The zero values of Timeout, MaxOutputChars and the Resources fields mean the
// configured defaults (see Config); Config.Prepare fills them in and validates the rest.
type Spec struct {
	// Argv is the command as an argument vector (exec_command's `command`). In ShellDirect
	// mode it is executed as is; in ShellDefault mode it is joined with shell quoting
	// (each word single-quoted where needed) and run through the shell, so that the
	// shell's word splitting gives back exactly Argv.
	Argv []string
	// Script is shell source, run in ShellDefault mode as the single argument after
	// `-c` (`-Command` on Windows), byte for byte as given: it runs exactly as the
	// policy saw it.
	Script string
	// ShellMode is ShellDefault ("" too) or ShellDirect. ShellDirect requires Argv.
	ShellMode ShellMode
	// Dir is the working directory: an absolute path to an existing directory.
	Dir string
	// Stdin is written to the command's standard input, then closed. Empty means an
	// empty standard input (never the gateway's own).
	Stdin string
	// Timeout bounds the run; 0 means Config.DefaultTimeout.
	Timeout time.Duration
	// MaxOutputChars caps stdout and stderr each, in characters (Unicode code points);
	// 0 means Config.DefaultOutputChars.
	MaxOutputChars int
	// Keep says which characters of a stream longer than MaxOutputChars the Result
	// holds: its head (the default), its tail, or both ends.
	Keep Keep
	// Network is whether the policy granted network access. Only backends that can
	// isolate the network enforce it (linux, docker); the process backend cannot and
	// runs the command with the gateway's network either way.
	Network bool
	// Resources are the rlimits for the command's processes.
	Resources Resources
	// Stdout and Stderr, when set, receive every byte of the command's output as it
	// arrives, beyond MaxOutputChars too (a background job's logs); the Result still
	// holds the capped text. A tee that fails is dropped; the command goes on.
	Stdout, Stderr io.Writer
	// OnStart, when set, is called once the command has been started (handed to its
	// sandbox), before Run waits for it: a Run that fails without calling it started
	// nothing.
	OnStart func()
}

// Inherit, as a Resources limit, leaves that limit as the gateway's own.
const Inherit int64 = -1

// Resources are per-process resource limits (rlimits) applied to the command where the
// platform allows (see the backend's documentation). Each limit sets both the soft and
// the hard value, so the command cannot raise it again; a limit never raises what the
// gateway itself has. A zero field takes Config.Resources' value, and a zero there the
// package default; Inherit leaves the limit alone.
type Resources struct {
	// CoreDumps allows core dumps; false (the default) sets RLIMIT_CORE to 0, so a
	// crashing command writes no memory image into the workspace.
	CoreDumps bool
	// FileSize is the largest file a process may write, in bytes (RLIMIT_FSIZE); a
	// larger write fails and the writer gets SIGXFSZ. Default DefaultFileSize.
	FileSize int64
	// OpenFiles is the number of file descriptors per process (RLIMIT_NOFILE). Default
	// DefaultOpenFiles.
	OpenFiles int64
	// Processes is RLIMIT_NPROC: the number of processes of the gateway's user, counted
	// across the whole machine, beyond which fork fails. It is not a per-command count
	// and root ignores it, so the default is Inherit.
	Processes int64
}

// Default resource limits.
const (
	DefaultFileSize  int64 = 8 << 30 // 8 GiB
	DefaultOpenFiles int64 = 8192
	DefaultProcesses       = Inherit
)

// Result is the outcome of a command that ran (exec_command's result), plus the byte counts.
type Result struct {
	// Cwd is the absolute directory the command ran in (Spec.Dir, cleaned).
	Cwd string `json:"cwd"`
	// Command echoes the request: Spec.Argv as given, or for a script a one-element
	// slice holding Spec.Script.
	Command []string `json:"command"`
	// ExitCode is the command's exit status: 124 on timeout, 128+N when the command
	// was ended by signal N (the shells' convention).
	ExitCode int `json:"exit_code"`
	// Stdout and Stderr hold at most the Spec's MaxOutputChars characters each, always
	// valid UTF-8: bytes that are not valid UTF-8 appear as U+FFFD, one per byte.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// StdoutTruncated and StderrTruncated say the stream had more characters than kept.
	StdoutTruncated bool `json:"stdout_truncated"`
	StderrTruncated bool `json:"stderr_truncated"`
	// TimedOut says the timeout stopped the command.
	TimedOut bool `json:"timed_out"`
	// DurationMS is the wall time from start until the last process was gone and the
	// output read, in milliseconds (monotonic clock).
	DurationMS int64 `json:"duration_ms"`
	// StdoutBytes and StderrBytes count every byte the command wrote to each stream,
	// kept or not.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	// StdoutChars and StderrChars count every character of each stream, kept or not
	// (an invalid byte is one character).
	StdoutChars int64 `json:"stdout_total_chars"`
	StderrChars int64 `json:"stderr_total_chars"`
	// OutputID names the whole output kept for paging when a stream was cut; backends
	// leave it empty, the gateway that kept the output sets it.
	OutputID string `json:"output_id,omitempty"`
}
