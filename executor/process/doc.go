// Package process is the portable executor backend: each command runs as a plain child
// process of the gateway, leading its own process tree, with rlimits where the platform
// allows. It implements the semantics of package executor on Linux, macOS and Windows;
// it is no security boundary (no file system, network or PID isolation: see the linux
// and docker backends).
//
// # Shells
//
// ShellDefault uses `bash -c` on Linux (`sh -c` where PATH has no bash), `zsh -lc` on
// macOS (as exec_command specifies; a login shell, so /etc/zprofile and ~/.zprofile run first), and
// `pwsh.exe -NoLogo -NoProfile -Command` on Windows (`powershell.exe` where PowerShell 7
// is absent). The shell is looked up in the gateway's PATH at each run, unless
// Options.Shell names one. An argv in ShellDefault mode is joined with single-quote
// quoting (PowerShell: `& 'name' 'arg'`), chosen over mvdan.cc/sh's syntax.Quote because
// its $'\u…' escapes depend on the shell's locale and are not POSIX; the tests check the
// round trip against the real shells.
//
// # Process tree
//
// On Unix the command starts as the leader of a new session (setsid), so of a new process
// group, and without a controlling terminal: it cannot prompt on the gateway's terminal.
// Its pipelines and background jobs stay in the group. The backend waits for the leader
// to exit without reaping it (waitid WNOWAIT on Linux, a kqueue NOTE_EXIT on macOS): the
// zombie keeps the group ID reserved, so the group signals that follow cannot reach a
// recycled ID. On timeout or context end the group gets SIGTERM, then SIGKILL after the
// grace (cut short once the leader has exited and the output pipes are closed). When the
// leader exits by itself, the group gets SIGKILL at once: a background job left behind
// does not outlive the run (its output after that moment is lost). The leader is reaped
// only then, and Run returns once no live process has the group ID (zombies left to a
// PID 1 that does not reap count as gone).
//
// On Windows the command starts suspended, is put in a job object that allows no
// breakaway and kills its processes when closed, then resumed; stopping the tree
// terminates the job (as exec_command specifies: the equivalent of `taskkill /T /F`).
//
// Escapes: a process that starts its own session (setsid) or, under `set -m` job
// control, its own group, leaves the tree and is neither stopped nor waited for; Run
// stops reading a pipe such a process still holds after Config.WaitDelay, so it cannot
// hang Run.
//
// # Output and input
//
// Stdout and stderr are read through pipes by one goroutine each into an
// executor.Capture (pooled 64 KiB buffers; past the cap bytes are only counted). Stdin,
// when given, is written from another goroutine through a third pipe and closed; the
// command gets the null device otherwise.
//
// # Resource limits
//
// Go's os/exec has no hook between fork and exec, and Linux's SysProcAttr has no rlimit
// field, so the limits cannot be set inside the child before it executes. The two sound
// choices were:
//
//   - prlimit(2) on the child right after it started (chosen, Linux only). The limits
//     land within microseconds of execve, but not before it: the window is a race in
//     principle (a process forked in it keeps the gateway's limits), in practice shorter
//     than the dynamic loader's start-up. The backend guarantees one ordering: stdin is
//     written only after the limits are in place, so a command that reads its input
//     first runs entirely under them (the tests rely on this).
//   - re-executing the gateway as a small launcher that sets the limits and then
//     execve's the command (runc style): race-free, but a second execve of a large Go
//     binary per command, measured at 3.4 times the cost of starting /bin/true, against
//     this backend's budget of 1.3 times.
//
// The linux backend, whose re-executed init exists anyway, applies limits race-free.
// A limit never raises the gateway's own hard limit. When prlimit fails the command is
// killed and Run reports INTERNAL: that happens when a gateway that is not root starts a
// set-user-ID or set-group-ID program directly (ShellDirect), whose limits it may not
// touch. macOS has no prlimit and Windows no rlimits: there the command
// inherits the gateway's limits.
//
// # Network
//
// This backend cannot isolate the network: a command runs with the gateway's network
// whatever Spec.Network says. A deployment that needs network:false enforced uses the
// linux or docker backend.
package process
