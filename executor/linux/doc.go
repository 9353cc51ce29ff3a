// Package linux is the linux executor backend: every command runs in a fresh sandbox of
// Linux namespaces, Landlock, seccomp and cgroups, the real security boundary behind the
// policy. It must contain what the policy cannot see: `make`, `npm test` and `go test`
// run arbitrary project code.
//
// # The sandbox
//
// Each command gets its own init, the cmdgate-sandbox program (package sandboxinit),
// started in new user, mount, pid, ipc, uts, cgroup and network namespaces. The network
// namespace holds only a loopback unless Spec.Network (the decision's sandbox.network)
// is set; then an uplink is attached to it (see Network below). The user namespace
// maps the gateway's user and group to themselves. The init builds a new root on a
// tmpfs: the host's system directories (Options.ReadOnly, by default /usr,
// /bin, /sbin, /lib*, /etc and /opt) read-only with secrets hidden (DefaultHide), the
// workspace read-write at its own path, a private size-bounded /tmp and /dev/shm, a fresh
// /proc showing the sandbox's processes only, and a /dev of null, zero, full, random,
// urandom and tty. Nothing else of the host is there: not its home directories, /var,
// /run, /srv or /mnt. With the workspace's tool caches (executor.Caches), their area is
// bound read-write at its own path after the workspace and HOME lies in it, so caches
// and ~ persist between commands; without them HOME is /tmp/home (SandboxHome), new for
// every command (unless the workspace is /tmp itself: then it is the workspace's, and
// kept). TMPDIR outside what the command may write is dropped.
//
// The init then drops every capability for good (bounding and ambient sets, locked
// securebits, no_new_privs), applies Landlock (ABI 3 or later, or it refuses: read and
// execute on the system directories, /proc and /dev; write only to the workspace, the
// tool caches, /tmp, /dev/shm and the harmless devices; where the kernel has ABI 6, no abstract unix socket
// and no signal outside the sandbox) and a seccomp filter (mount family, ptrace,
// process_vm_*, bpf, keyctl, kexec, modules, perf_event_open, userfaultfd, setns, new
// user namespaces, io_uring and more: see internal/seccomp), and only then starts the
// command, with no descriptor but its standard streams. It stays as pid 1: it reaps,
// passes the executor's stops on, and once the command has ended kills and reaps
// whatever the command left behind before it reports the exit status.
//
// # Limits
//
// rlimits from executor.Resources (core dumps off, file size, open files, processes),
// plus RLIMIT_CPU as a backstop (the timeout's worth of CPU time on every CPU). Where the
// gateway may create cgroups (v2, or v1 as on hybrid hosts), each command gets one with
// Options.Limits: memory (swap included), pids and CPU; Status says which are in force
// and why the others are not. The init is born in it, which costs the kernel no global
// lock, where moving a process in afterwards waits, after an idle moment, for an RCU
// grace period (8 to 10 ms on a 2-core VM with cgroup v1, 4.5 to 20 ms on its cgroup2
// mount: every `cmdgate sandbox run` paid it). On v1 the thread that starts the init moves
// itself into the cgroup for the start and back; on v2, where a thread may not leave its
// process's cgroup, the init is cloned into it (clone3's CLONE_INTO_CGROUP, Linux 5.7).
// Where neither can be done (an older kernel, a tasks file this process may not write),
// the init is moved in once started, before it gets its layout. RLIMIT_NPROC counts a
// user's processes machine-wide and not at all for root: the pids cgroup is the
// fork-bomb limit.
//
// # Network
//
// A command the decision grants the network keeps its own network namespace: the
// executor attaches an uplink to it before the init builds the sandbox, slirp4netns
// (Options.Uplink, else from PATH), a user-mode network stack that gives the namespace
// a tap device with an address, a default route and a resolver, and makes the
// command's connections with ordinary sockets of the host. It refuses the host's
// loopback itself (--disable-host-loopback), and the init adds a prohibit route for
// each of the host's own IPv4 addresses (listed when the sandbox is built), the
// link-local range (cloud metadata services) and the uplink's alias of the host, so a
// connection to the gateway, a database or anything else listening on the host fails
// at once with EACCES; the uplink carries no IPv6. /etc/resolv.conf shows the uplink's
// resolver, which forwards to the host's. The uplink ends with the sandbox. A root
// gateway starts slirp4netns in a mount namespace of its own whose mounts are all
// private: its sandbox (--enable-sandbox) makes only its root mount private before it
// detaches the host's tree, which in the host's mount namespace unmounted, on the host,
// every mount under a shared one (Docker's container file systems among them). Where
// slirp4netns is missing, Status.Unavailable["network"] says so and a command granted
// the network is refused: it never gets the host's network instead.
//
// # Stopping
//
// A timeout asks the init, by a message on its config pipe, to pass SIGTERM on to every
// process of the sandbox (an interrupted job: SIGINT); after the grace it kills the init,
// and the kernel kills every process of a pid namespace whose init dies. The init
// catches no signal itself: the Go runtime's signal handling would cost every sandbox
// three threads and 0.17 ms of its start; it ignores the stop signals sent to it
// directly once the command runs. The init dies with the gateway (parent-death signal,
// tied to a thread the Executor keeps, or to the spawner's, which dies with the gateway
// the same way), so a gateway crash leaves no command running.
//
// # Start time
//
// The init is a small program of its own, not the cmdgate binary re-executed: cmdgate
// links the policy engine, whose package initialisers cost several milliseconds per
// start (measured: 8.5 ms to start cmdgate against 1.6 ms for a minimal Go program), on
// every command. A process that starts a child in a new user namespace cannot share its
// memory with it (no vfork: the child waits for its ID maps), so the kernel copies the
// parent's page tables and the parent pays a copy-on-write fault for every page it
// writes until the child has exec'd: from a process with 100 MB of heap that is 7 ms
// per start, 25 ms with 400 MB, against 2 ms with none. So once Probe has succeeded the
// inits of an Executor come from a spawner, cmdgate-sandbox started once (with vfork)
// with a few megabytes of heap, which starts each init on request and reports its exit;
// it dies with the gateway and its inits with it. Each such fault also flushes the page
// from every other CPU the parent's threads run on, by an interprocessor interrupt,
// which a virtual machine pays dearly (a fifth of the spawner's time on a 2-core VM), so
// the spawner keeps its threads on one CPU, and each init moves back to the gateway's
// CPUs before it builds anything: commands run on all of them. The Executor also keeps Options.Pool
// sandboxes without network built ahead, so a command waits only for its own start, and
// empty cgroups made ahead (creating one costs milliseconds on cgroup v1). A command
// that finds the pool empty while a sandbox is being built ahead waits for that one
// rather than building its own beside it (as many commands wait as builds are under
// way); a sandbox built for one command gets the command with its layout. The init takes the
// namespaces down after it has reported, off the command's path. An Executor that is
// not probed (cmdgate sandbox run, one command) starts its init itself, from one CPU
// too when the caller keeps to one (KeepToOneCPU, Options.InitCPUs).
//
// Every build is timed step by step (BuildTiming: the cgroup, the init's start, each step
// of the init's build, on one monotonic clock for both processes): Probe's Status holds
// the probe's, the debug log each build's. On a 2-core VM with cgroup v1 a cold build
// takes about 3.4 ms, of which the init's start (the clone into the namespaces, the exec,
// the Go runtime) is 2 ms, the mounts 0.5 ms, the privileges and Landlock 0.15 to 0.2 ms
// each, and seccomp 0.1 ms.
//
// # Availability
//
// New checks the options; Probe builds one complete sandbox and runs nothing in it: where
// it fails (no user namespaces, no Landlock, no cmdgate-sandbox program), the backend
// cannot be honoured and the gateway says so (--sandbox linux refuses to start; auto
// falls back to the process backend with a loud warning in the logs and /healthz). On
// other systems New refuses.
package linux
