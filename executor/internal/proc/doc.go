// Package proc holds the raw operating-system calls of the executor: starting a command
// as the leader of its own process tree, waiting for the leader's exit without releasing
// it, signalling, killing and awaiting the whole tree, and applying rlimits. A Unix tree
// is a process group in a new session; a Windows tree is a job object. Platforms other
// than Linux, macOS and Windows get a stub that refuses to start anything.
package proc
