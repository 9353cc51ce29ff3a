package sandboxinit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cmdgate/cmdgate/executor/linux/internal/seccomp"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// The init's namespace and mount calls act on the calling thread (unshare of the cgroup
// namespace) or must come from the thread that forks the command: the main goroutine
// keeps the main thread from the start.
func init() {
	started = wire.Now()
	runtime.LockOSThread()
}

// started is when this package was initialised (wire.Now), once the Go runtime had
// started: the ready report says so, and the executor counts the start up to there.
var started int64

// stepTimer records how long each step of the build takes, for the ready report: the
// measure of where a sandbox's start goes on a host (`cmdgate sandbox check`, the
// benchmarks).
type stepTimer struct {
	last  int64
	steps []wire.Step
}

// done ends the step name, which began when the previous one ended.
func (t *stepTimer) done(name string) {
	now := wire.Now()
	t.steps = append(t.steps, wire.Step{Name: name, NS: now - t.last})
	t.last = now
}

// Main is the whole init: it never returns. Its exit status is the command's (128+N for
// signal N), 0 when no command came, 125 when the sandbox could not be built, 127 when
// the command could not start; the Reports on descriptor 4 say which. With the single
// argument wire.SpawnArg it is the spawner instead, which starts inits for a
// long-running executor. Started from one CPU (by the spawner, or by cmdgate sandbox
// run), its arguments are wire.CPUsArg and the CPUs to go back to.
func Main() {
	if len(os.Args) == 2 && os.Args[1] == wire.SpawnArg {
		spawn()
	}
	// Both are pipes from the executor. Started by hand, the descriptors are missing,
	// or are files the Go runtime opened meanwhile (it reads the cgroup's CPU limit).
	pipe := func(fd int) bool {
		var st unix.Stat_t
		return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
	}
	if !pipe(wire.ConfigFD) || !pipe(wire.ReportFD) {
		fmt.Fprintln(os.Stderr, "cmdgate-sandbox: started without its descriptors: it is run by cmdgate, not by hand")
		os.Exit(125)
	}
	rep := os.NewFile(wire.ReportFD, "report")
	cfgPipe := &configPipe{r: os.NewFile(wire.ConfigFD, "config")}
	// Nothing but the standard streams reaches the command: not the two descriptors of
	// the executor, not whatever the gateway leaked without close-on-exec (a descriptor
	// of a host directory would walk around the new root).
	if err := unix.CloseRange(wire.ConfigFD, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintln(os.Stderr, "cmdgate-sandbox: close-on-exec:", err)
		os.Exit(125)
	}
	send := func(r wire.Report) {
		if err := wire.WriteReport(rep, r); err != nil {
			os.Exit(125)
		}
	}
	if len(os.Args) == 3 && os.Args[1] == wire.CPUsArg {
		if err := restoreCPUs(os.Args[2]); err != nil {
			send(errorReport(fail("restore the CPU affinity", err)))
			os.Exit(125)
		}
	}
	// The executor writes the config once the init is in its cgroup: reading it first
	// keeps everything below inside the limits.
	steps := &stepTimer{last: started}
	dec := wire.NewDecoder(cfgPipe)
	cfg, err := dec.Config()
	if err != nil {
		send(errorReport(fail("read config", err)))
		os.Exit(125)
	}
	steps.done("layout")
	abi, err := build(cfg, steps)
	if err != nil {
		send(errorReport(err))
		os.Exit(125)
	}
	// What every command needs is done before the sandbox reports ready: a sandbox
	// built ahead then starts its command at once.
	if err := makeHome(); err != nil {
		send(errorReport(fail("create "+home, err)))
		os.Exit(125)
	}
	steps.done("home")
	send(wire.Report{Event: wire.EventReady, Landlock: abi, Started: started, Steps: steps.steps})
	cmd, err := dec.Command()
	if errors.Is(err, io.EOF) {
		os.Exit(0)
	}
	if err != nil {
		send(errorReport(fail("read command", err)))
		os.Exit(125)
	}
	code, report := runCommand(cfg, cmd, dec, cfgPipe)
	send(report)
	os.Exit(code)
}

// configPipe is descriptor 3, from which the init reads the executor's messages. Up to
// the command it is read blocking, by this thread, which wakes the moment the command
// comes (a sandbox built ahead waits for it); poll then moves it to the runtime's
// poller, so that waiting for the stops while the command runs holds no thread.
type configPipe struct{ r *os.File }

func (p *configPipe) Read(b []byte) (int, error) { return p.r.Read(b) }

// poll makes further reads go through the runtime's poller: a non-blocking duplicate
// of the descriptor (O_NONBLOCK is the pipe's, shared with the original, which is not
// read again). Where it fails, reads stay as they were.
func (p *configPipe) poll() error {
	fd, err := unix.FcntlInt(uintptr(wire.ConfigFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	p.r = os.NewFile(uintptr(fd), "config")
	return nil
}

// stepError is a failed step of building the sandbox.
type stepError struct {
	code string
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }

func fail(step string, err error) *stepError {
	return &stepError{code: wire.CodeInternal, step: step, err: err}
}

func errorReport(err error) wire.Report {
	var se *stepError
	if errors.As(err, &se) {
		return wire.Report{Event: wire.EventError, Code: se.code, Message: se.Error()}
	}
	return wire.Report{Event: wire.EventError, Code: wire.CodeInternal, Message: err.Error()}
}

// build turns this process, pid 1 of fresh user, mount, pid, ipc, uts and network
// namespaces, into the sandbox: the new root, the working directory, the limits, no
// privileges, Landlock and seccomp, timing each step. It returns the Landlock ABI in
// force. Order matters: mounts need the capabilities that are dropped after them, and
// seccomp, which refuses mount, comes last.
func build(cfg wire.Config, steps *stepTimer) (int, error) {
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return 0, fail("new cgroup namespace", err)
	}
	if cfg.Hostname != "" {
		if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
			return 0, fail("set host name", err)
		}
	}
	if err := loopbackUp(); err != nil {
		return 0, fail("bring up loopback", err)
	}
	if cfg.Network {
		if err := prohibitRoutes(cfg.Unreachable); err != nil {
			return 0, fail("close the host's addresses to the network", err)
		}
	}
	steps.done("namespaces")
	if err := buildRoot(cfg); err != nil {
		return 0, err
	}
	steps.done("root")
	if err := dropPrivileges(); err != nil {
		return 0, fail("drop privileges", err)
	}
	steps.done("privileges")
	abi, err := restrictPaths(cfg)
	if err != nil {
		return 0, fail("landlock", err)
	}
	steps.done("landlock")
	prog, err := seccomp.Filter()
	if err == nil {
		err = seccomp.Install(prog)
	}
	if err != nil {
		return 0, fail("seccomp", err)
	}
	steps.done("seccomp")
	return abi, nil
}

// loopbackUp brings up lo in the new network namespace: a command may talk to itself
// over 127.0.0.1, and, unless the decision granted the network, to nothing else.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// oldRoot is where the host's root stays visible while the new root is assembled.
const oldRoot = "/oldroot"

// Mount attributes of every bind: nothing set-user-ID, no devices.
const (
	attrRO    = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	attrRW    = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	tmpfsOpts = unix.MS_NOSUID | unix.MS_NODEV
)

// buildRoot assembles the new root on a tmpfs and pivots into it, bwrap's way: the tmpfs
// is mounted on the host's /tmp of this mount namespace only and becomes the root, the
// host's root moves to /oldroot (where its own /tmp shows again, for a workspace that
// lives there), the sandbox's directories are bound from it, and it is detached.
func buildRoot(cfg wire.Config) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("make mounts private", err)
	}
	if err := unix.Mount("cmdgate", "/tmp", "tmpfs", tmpfsOpts, "mode=0755,size=1m"); err != nil {
		return fail("mount the new root", err)
	}
	if err := os.Mkdir("/tmp"+oldRoot, 0o700); err != nil {
		return fail("mount the new root", err)
	}
	if err := unix.PivotRoot("/tmp", "/tmp"+oldRoot); err != nil {
		return fail("pivot to the new root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fail("pivot to the new root", err)
	}

	for _, p := range cfg.ReadOnly {
		if err := bindSystem(p); err != nil {
			return fail("bind "+p, err)
		}
	}
	if err := hide(cfg.Hide); err != nil {
		return err
	}
	if err := mountTmpfs("/tmp", 0o1777, cfg.TmpSize); err != nil {
		return fail("mount /tmp", err)
	}
	// The workspace comes after the system directories and /tmp: it may lie under one
	// of them, and their read-only attribute is recursive.
	if err := bind(cfg.Workspace, attrRW); err != nil {
		return fail("bind the workspace "+cfg.Workspace, err)
	}
	if cfg.Caches != "" {
		if err := bind(cfg.Caches, attrRW); err != nil {
			return fail("bind the tool caches "+cfg.Caches, err)
		}
	}
	if cfg.Nameserver != "" {
		if err := resolvConf(cfg.Nameserver); err != nil {
			return fail("show the uplink's resolver in /etc/resolv.conf", err)
		}
	}
	if err := mountProc(); err != nil {
		return fail("mount /proc", err)
	}
	if err := mountDev(cfg.TmpSize); err != nil {
		return fail("mount /dev", err)
	}
	if err := unix.Unmount(oldRoot, unix.MNT_DETACH); err != nil {
		return fail("detach the host's root", err)
	}
	if err := os.Remove(oldRoot); err != nil {
		return fail("detach the host's root", err)
	}
	if err := unix.MountSetattr(-1, "/", 0, &unix.MountAttr{Attr_set: attrRO}); err != nil {
		return fail("make the root read-only", err)
	}
	return nil
}

// bindSystem binds the host's p read-only, or recreates it when it is a symbolic link
// (/bin -> usr/bin). A path the host lacks is skipped.
func bindSystem(p string) error {
	fi, err := os.Lstat(oldRoot + p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(oldRoot + p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.Symlink(target, p)
	}
	return bind(p, attrRO)
}

// bind mounts the host's p (and everything mounted under it) at p with attrs.
func bind(p string, attrs uint64) error {
	src := oldRoot + p
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := mountpoint(p, fi.IsDir()); err != nil {
		return err
	}
	if err := unix.Mount(src, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return unix.MountSetattr(-1, p, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrs})
}

// mountpoint makes p exist as a directory or an empty file to mount on. It may already
// exist, inside a read-only bind: then nothing is written.
func mountpoint(p string, dir bool) error {
	if dir {
		return os.MkdirAll(p, 0o755)
	}
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// hide covers each existing path with an empty read-only file or directory.
func hide(paths []string) error {
	const emptyDir, emptyFile = "/.cmdgate-empty-dir", "/.cmdgate-empty-file"
	if len(paths) == 0 {
		return nil
	}
	if err := os.Mkdir(emptyDir, 0o555); err != nil {
		return fail("hide", err)
	}
	if err := mountpoint(emptyFile, false); err != nil {
		return fail("hide", err)
	}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail("hide "+p, err)
		}
		src := emptyFile
		if fi.IsDir() {
			src = emptyDir
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// A link cannot be mounted over; its target is either inside a read-only
			// bind (and hidden in its own right if listed) or not in the sandbox.
			continue
		}
		if err := unix.Mount(src, p, "", unix.MS_BIND, ""); err != nil {
			return fail("hide "+p, err)
		}
		if err := unix.MountSetattr(-1, p, 0, &unix.MountAttr{Attr_set: attrRO}); err != nil {
			return fail("hide "+p, err)
		}
	}
	// The binds keep their sources alive; the names can go.
	if err := os.Remove(emptyDir); err != nil {
		return fail("hide", err)
	}
	if err := os.Remove(emptyFile); err != nil {
		return fail("hide", err)
	}
	return nil
}

func mountTmpfs(p string, mode os.FileMode, size int64) error {
	if err := os.MkdirAll(p, 0o755); err != nil {
		return err
	}
	opts := fmt.Sprintf("mode=%o", mode)
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	return unix.Mount("tmpfs", p, "tmpfs", tmpfsOpts, opts)
}

// procReadOnly are the parts of a fresh /proc whose writes reach beyond the sandbox's
// namespaces and need no capability: kernel settings and magic SysRq. Landlock makes all
// of /proc read-only as well; each mount here costs every command a mount and an unmount.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger"}

// mountProc mounts a /proc of the new pid namespace: it shows the sandbox's processes
// only.
func mountProc() error {
	if err := os.Mkdir("/proc", 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	for _, p := range procReadOnly {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		if err := unix.MountSetattr(-1, p, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrRO}); err != nil {
			return err
		}
	}
	return nil
}

// devices are the host's device nodes a command may use: user namespaces cannot create
// device nodes, so they are bound from the host.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// mountDev builds a minimal /dev: the devices above, the fd links, a private /dev/shm.
func mountDev(shmSize int64) error {
	if err := os.Mkdir("/dev", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, d := range devices {
		p := "/dev/" + d
		if _, err := os.Stat(oldRoot + p); err != nil {
			continue
		}
		if err := mountpoint(p, false); err != nil {
			return err
		}
		if err := unix.Mount(oldRoot+p, p, "", unix.MS_BIND, ""); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, "/dev/"+name); err != nil {
			return err
		}
	}
	if err := mountTmpfs("/dev/shm", 0o1777, shmSize); err != nil {
		return err
	}
	return unix.MountSetattr(-1, "/dev", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
}

// dropPrivileges leaves the init with no capability now or after any exec. The thread
// that starts the command (this one, locked) gets the per-thread settings: bounding and
// ambient sets emptied, securebits that stop uid 0 from regaining capabilities at exec
// (locked), no_new_privs. Every other thread of the init loses its capabilities in one
// all-threads capset: they run only the Go runtime and never exec. The init also becomes
// non-dumpable, so no process of the sandbox may open its memory through /proc.
//
// The per-thread calls are plain prctl(2): on every thread they would cost a signal
// round-trip each, milliseconds for the bounding set alone.
func dropPrivileges() error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	// linux/securebits.h: each bit and its lock.
	const (
		noRoot, noRootLocked            = 1 << 0, 1 << 1
		noSetuidFixup, noSetuidLocked   = 1 << 2, 1 << 3
		keepCapsLocked                  = 1 << 5
		noAmbientRaise, noAmbientLocked = 1 << 6, 1 << 7
		secure                          = noRoot | noRootLocked | noSetuidFixup | noSetuidLocked |
			keepCapsLocked | noAmbientRaise | noAmbientLocked
	)
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secure, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("non-dumpable: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // all zero: no capability in any set
	_, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, err
	}
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &n); err != nil {
		return 0, err
	}
	return n, nil
}

// landlockABI is the Landlock version the rules need: 3, for file truncation, which
// earlier versions leave unrestricted. An older kernel is refused, never used weaker.
var landlockABI = landlock.V3

// restrictPaths applies Landlock on every thread: reading and executing the system
// directories, /proc and /dev; writing only the workspace, /tmp, /dev/shm and the
// harmless devices; listing the root. Where the kernel has ABI 6, the sandbox is also
// scoped: no connecting to abstract unix sockets of the host (D-Bus, X11: reachable when
// the decision grants the host's network) and no signals to processes outside it. It
// returns the kernel's ABI version.
func restrictPaths(cfg wire.Config) (int, error) {
	var ro []string
	for _, p := range cfg.ReadOnly {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			ro = append(ro, p)
		}
	}
	ro = append(ro, "/proc", "/dev")
	rules := []landlock.Rule{
		landlock.RODirs(ro...),
		landlock.PathAccess(landlock.AccessFSSet(unix.LANDLOCK_ACCESS_FS_READ_DIR), "/"),
		landlock.RWDirs(rwDirs(cfg)...).WithRefer(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full").IgnoreIfMissing(),
		landlock.ROFiles("/dev/random", "/dev/urandom").IgnoreIfMissing(),
	}
	if cfg.Nameserver != "" {
		// resolvConf bound the uplink's resolv.conf where /etc/resolv.conf leads, which
		// may lie outside /etc (/run/systemd/resolve/stub-resolv.conf).
		if p, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
			rules = append(rules, landlock.ROFiles(p))
		}
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("Landlock is not available: %w", err)
	}
	// One ruleset, one all-threads restriction: each costs every thread a signal.
	ll := landlockABI
	if abi >= 6 {
		ll.Scoped = landlock.V6.Scoped
	}
	if err := ll.Restrict(rules...); err != nil {
		return 0, fmt.Errorf("Landlock ABI %d: %w", abi, err)
	}
	return abi, nil
}

// runCommand starts the command as this init's child and stays as pid 1, reaping every
// orphan, and passes the stop signals the executor asks for (dec's Stops) on to every
// process. When the command has ended it kills and reaps whatever the command left
// running, closes its standard streams and reports: the executor may answer at once,
// while the kernel takes the namespaces down with this process.
//
// The init catches no signal: the Go runtime's signal handling (os/signal.Notify) would
// start its signal goroutine and three threads in every sandbox, and hold the build up
// while they start (0.17-0.19 ms of each start measured on a 2-core VM, and every later
// all-threads round has them to signal). The executor sends its stops as messages
// instead, and once the command runs the init ignores the stop signals sent to it
// directly (from the command, or by hand on the host): pid 1 of a pid namespace drops
// an ignored signal, so they stop nothing. Before that, the runtime's default (exit)
// would end the sandbox: the executor signals an init only with SIGKILL.
func runCommand(cfg wire.Config, c wire.Command, dec *wire.Decoder, pipe *configPipe) (int, wire.Report) {
	if err := unix.Chdir(c.Dir); err != nil {
		return 125, errorReport(&stepError{code: wire.CodeNotDirectory, step: "working directory " + c.Dir, err: err})
	}
	for _, l := range c.Rlimits {
		var old unix.Rlimit
		if err := unix.Getrlimit(l.Resource, &old); err != nil {
			return 125, errorReport(fail(fmt.Sprintf("get rlimit %d", l.Resource), err))
		}
		v := min(l.Value, old.Max)
		if err := unix.Setrlimit(l.Resource, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return 125, errorReport(fail(fmt.Sprintf("set rlimit %d to %d", l.Resource, v), err))
		}
	}
	path, argv, err := command(c)
	if err != nil {
		return 127, errorReport(err)
	}
	stdin := uintptr(0)
	if !c.Stdin {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return 125, errorReport(fail("open "+os.DevNull, err))
		}
		defer null.Close()
		stdin = null.Fd()
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   c.Dir,
		Env:   environ(cfg, c.Env),
		Files: []uintptr{stdin, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		code := wire.CodeInternal
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOEXEC) {
			code = wire.CodeCommandNotFound
		}
		return 127, wire.Report{Event: wire.EventError, Code: code,
			Message: fmt.Sprintf("start %s: %v", argv[0], err)}
	}
	// Ignored only now: an ignored signal stays ignored across exec, and the command
	// starts with every signal at its default.
	signal.Ignore(unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT)
	stops := make(chan unix.Signal, 4)
	go func() {
		pipe.poll() // where it cannot, the blocking reads go on, on a thread of their own
		for {
			st, err := dec.Stop()
			if err != nil {
				return // end of file: the executor is done with the sandbox
			}
			if sig := unix.Signal(st.Signal); sig == unix.SIGTERM || sig == unix.SIGINT {
				stops <- sig
			}
		}
	}()
	// Reaping happens on another thread; signals are passed on from this one. Landlock
	// gives each thread of this process a domain of its own (the ruleset is applied
	// thread by thread), and with signal scoping (ABI 6) a process may signal only
	// processes of its own domain or below: the command's is this thread's, the one
	// that forked it. kill(-1) from any other thread fails for the command, silently.
	type waited struct {
		status unix.WaitStatus
		err    error
	}
	done := make(chan waited, 1)
	go func() {
		var status unix.WaitStatus
		for {
			wpid, err := unix.Wait4(-1, &status, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || wpid == pid && (status.Exited() || status.Signaled()) {
				done <- waited{status, err}
				return
			}
		}
	}()
	var status unix.WaitStatus
wait:
	for {
		select {
		case sig := <-stops:
			unix.Kill(-1, sig) // every process of the namespace but this one
		case w := <-done:
			if w.err != nil {
				return 125, errorReport(fail("wait for the command", w.err))
			}
			status = w.status
			break wait
		}
	}
	// Nothing the command started outlives it. kill(-1) from pid 1 reaches every other
	// process of the namespace, atomically with respect to fork; reaping until ECHILD
	// waits for each to be gone.
	unix.Kill(-1, unix.SIGKILL)
	for {
		_, err := unix.Wait4(-1, nil, 0, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
	}
	unix.Close(0)
	unix.Close(1)
	unix.Close(2)
	if status.Signaled() {
		return 128 + int(status.Signal()), wire.Report{Event: wire.EventExit, Signal: int(status.Signal())}
	}
	return status.ExitStatus(), wire.Report{Event: wire.EventExit, ExitCode: status.ExitStatus()}
}

// command resolves what to execute inside the sandbox.
func command(cfg wire.Command) (string, []string, error) {
	lookPath := func(name string) (string, error) {
		if strings.Contains(name, "/") {
			if !filepath.IsAbs(name) {
				name = filepath.Join(cfg.Dir, name)
			}
			return exec.LookPath(name)
		}
		return lookIn(pathOf(cfg.Env), name)
	}
	if cfg.Script != "" || len(cfg.Argv) == 0 {
		for _, sh := range cfg.Shells {
			if p, err := lookPath(sh); err == nil {
				return p, []string{p, "-c", cfg.Script}, nil
			}
		}
		return "", nil, fail("find the shell", fmt.Errorf("none of %v is in the sandbox", cfg.Shells))
	}
	p, err := lookPath(cfg.Argv[0])
	if err != nil {
		return "", nil, &stepError{code: wire.CodeCommandNotFound,
			step: fmt.Sprintf("command %q not found in the sandbox", cfg.Argv[0]), err: err}
	}
	return p, cfg.Argv, nil
}

// pathOf is the command's PATH: the one of its environment, else the shells' default.
func pathOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
}

// lookIn finds name in the directories of path, as exec.LookPath does with $PATH.
func lookIn(path, name string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// rwDirs are the directories the command may write: the workspace, the tool caches,
// /tmp and /dev/shm.
func rwDirs(cfg wire.Config) []string {
	dirs := []string{cfg.Workspace, "/tmp", "/dev/shm"}
	if cfg.Caches != "" {
		dirs = append(dirs, cfg.Caches)
	}
	return dirs
}

// home is HOME in the sandbox when neither the tool caches nor the workspace hold the
// one the command was given: the host's home is not in the sandbox, and tools (go, npm,
// cargo, pip) keep caches under it.
const home = wire.DefaultHome

// makeHome creates home, or keeps it where it is a directory already: a workspace bound
// over the private /tmp (the workspace is /tmp itself) may have one from an earlier
// command, and a workspace under home (/tmp/home/proj) has had it made as its mount
// point. Anything else there (a file, a symbolic link) is an error.
func makeHome() error {
	err := os.Mkdir(home, 0o700)
	if errors.Is(err, fs.ErrExist) {
		fi, lerr := os.Lstat(home)
		if lerr == nil && fi.IsDir() {
			return nil
		}
		if lerr == nil {
			return fmt.Errorf("%s exists and is not a directory", home)
		}
	}
	return err
}

// environ is the command's environment: env with HOME and TMPDIR moved inside the
// sandbox when they point outside what it may write.
func environ(cfg wire.Config, env []string) []string {
	inside := func(p string) bool {
		for _, d := range rwDirs(cfg) {
			if p == d || strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	out := make([]string, 0, len(env)+1)
	hasHome := false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME":
			if !inside(filepath.Clean(v)) {
				continue
			}
			hasHome = true
		case "TMPDIR":
			if !inside(filepath.Clean(v)) {
				continue
			}
		}
		out = append(out, kv)
	}
	if !hasHome {
		out = append(out, "HOME="+home)
	}
	return out
}
