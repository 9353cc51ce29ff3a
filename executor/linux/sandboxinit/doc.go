// Package sandboxinit is the init of the linux executor's sandbox: the first process of
// its namespaces, which builds the sandbox and runs one command in it.
//
// The executor starts the small cmdgate-sandbox program (cmd/cmdgate-sandbox, whose main
// is Main) in new user, mount, pid, ipc, uts and network namespaces (with an uplink
// attached to the last when the decision grants the network). It is not the cmdgate binary re-executed: that one links the
// policy engine, whose package initialisers cost several milliseconds on every command.
//
// Main reads a wire.Config on descriptor 3, then, in this order: takes a new cgroup
// namespace (the executor has put it in the command's cgroup by then), sets the host
// name, brings up the loopback, assembles a new root on a tmpfs (system directories
// bound read-only with secrets hidden, the workspace read-write at its own path, a
// private size-bounded /tmp, a fresh /proc with its kernel-wide parts read-only, a
// minimal /dev) and pivots into it, enters the working directory, applies the rlimits,
// drops every capability for good (bounding and ambient sets, locked securebits,
// no_new_privs), applies Landlock (ABI 3 at least, never weaker) and a seccomp filter,
// and starts the command. It stays as pid 1: it reaps orphans, passes the SIGTERM or
// SIGINT the executor asks for (a wire.Stop after the command on descriptor 3) on to
// every process of the sandbox, ignores the stop signals sent to itself, and exits with
// the command's status, which ends every process left in the pid namespace. It writes a
// wire.Report on descriptor 4 before it exits.
//
// Run with the single argument "spawn" (wire.SpawnArg), the program is the spawner of a
// long-running executor instead: it starts an init for each request on its socket and
// reports each one's exit (see package wire).
package sandboxinit
