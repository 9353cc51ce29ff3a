package linux

import (
	"log/slog"
	"path/filepath"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"github.com/cmdgate/cmdgate/internal/handover"
)

// HelperName is the sandbox init program (cmd/cmdgate-sandbox).
const HelperName = handover.HelperName

// SandboxHome is HOME inside a sandbox without tool caches: a directory of its private
// /tmp (of the workspace when the workspace is /tmp). With caches, HOME is
// executor.Caches.Home.
const SandboxHome = wire.DefaultHome

// DefaultReadOnly are the host directories every sandbox sees, read-only: the programs,
// their libraries and the system configuration. The host's home directories, /root,
// /var, /run, /srv, /mnt and /media are not among them.
var DefaultReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// DefaultHide are the secrets of the system configuration that the sandbox sees as
// empty: password hashes, sudo rules, SSH host keys, TLS private keys, Kerberos keys.
var DefaultHide = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private",
	"/etc/security/opasswd", "/etc/krb5.keytab", "/etc/cmdgate",
}

// Defaults of Options.
const (
	DefaultTmpSize int64 = 1 << 30 // 1 GiB for /tmp, and as much for /dev/shm
	DefaultMemory  int64 = 4 << 30 // 4 GiB
	DefaultPids    int64 = 1024
	DefaultPool          = 2
)

// Options configure an Executor. Workspace is required; the zero value of every other
// field is its default.
type Options struct {
	// Config holds the limits, the environment denylist and the rlimits.
	Config executor.Config
	// Workspace is the directory bound read-write at its own path; commands run in it or
	// below. It must not be / nor contain a read-only directory, nor lie in /proc or
	// /dev, which the sandbox mounts afresh.
	Workspace string
	// Helper is the path of the cmdgate-sandbox program; empty means FindHelper.
	Helper string
	// Uplink is the slirp4netns program that connects the network namespace of a
	// command granted the network; empty means slirp4netns in PATH. Without one, such
	// a command is refused (never run with the host's network).
	Uplink string
	// ReadOnly replaces DefaultReadOnly; ExtraReadOnly adds to it (a toolchain under
	// /root, say).
	ReadOnly, ExtraReadOnly []string
	// ExtraHide adds to DefaultHide: paths under a read-only directory shown empty.
	ExtraHide []string
	// TmpSize bounds the private /tmp and /dev/shm each, in bytes; 0 means
	// DefaultTmpSize.
	TmpSize int64
	// Limits are the cgroup limits of each command; zero fields take the defaults, and
	// a negative field turns that limit off.
	Limits Limits
	// Pool is how many sandboxes without network wait built ahead, so that a command
	// only waits for its own start; 0 means DefaultPool, negative none. Up to two
	// builders refill it, and each holds the sandbox it has built while the pool is
	// full, so Pool+min(Pool, 2) inits are ready (four by default) and a burst of as
	// many commands finds its sandboxes built. The pool starts after the first
	// successful Probe.
	Pool int
	// Logger receives what fails in the background (building ahead, removing a cgroup);
	// nil means slog.Default().
	Logger *slog.Logger
	// InitCPUs are the CPUs an init this process starts itself (an Executor without a
	// spawner: cmdgate sandbox run) goes back to, when the process keeps its own
	// threads on one CPU (KeepToOneCPU, which returns them). Nil leaves the inits on
	// the process's CPUs. The spawner's inits go back to the spawner's, always.
	InitCPUs []int
}

// Limits are per-command cgroup limits.
type Limits struct {
	// Memory in bytes (swap included where the host accounts it); 0 means DefaultMemory.
	Memory int64
	// Pids is the number of processes and threads; 0 means DefaultPids.
	Pids int64
	// CPU is the CPU time per wall-clock second, in CPUs (1.5 = one and a half); 0
	// means no limit.
	CPU float64
}

func (l Limits) zero() bool { return l.Memory <= 0 && l.Pids <= 0 && l.CPU <= 0 }

func (l Limits) cgroup() cgroup.Limits {
	return cgroup.Limits{Memory: max(l.Memory, 0), Pids: max(l.Pids, 0), CPU: max(l.CPU, 0)}
}

func (o Options) withDefaults() Options {
	if o.ReadOnly == nil {
		o.ReadOnly = DefaultReadOnly
	}
	o.ReadOnly = cleanAll(append(append([]string(nil), o.ReadOnly...), o.ExtraReadOnly...))
	o.ExtraHide = cleanAll(o.ExtraHide)
	if o.TmpSize == 0 {
		o.TmpSize = DefaultTmpSize
	}
	if o.Limits.Memory == 0 {
		o.Limits.Memory = DefaultMemory
	}
	if o.Limits.Pids == 0 {
		o.Limits.Pids = DefaultPids
	}
	if o.Pool == 0 {
		o.Pool = DefaultPool
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

func cleanAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, filepath.Clean(p))
	}
	return out
}

// FindHelper looks for cmdgate-sandbox beside the running program, then in PATH.
func FindHelper() (string, error) { return handover.FindHelper() }
