package linux_test

// The escape tests run real attacks inside the sandbox and check that each fails the way
// the sandbox makes it fail (the errno text on stderr, the signal, the exit code), and
// that the host is unchanged afterwards. A test that fails here has found a hole: keep
// it failing until the sandbox is fixed.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"golang.org/x/sys/unix"
)

// The errno texts the attempts fail with, as glibc and bash print them.
const (
	erofs        = "Read-only file system"
	enoent       = "No such file or directory"
	eperm        = "Operation not permitted"
	eacces       = "Permission denied"
	exdev        = "Invalid cross-device link"
	ebusy        = "Device or resource busy"
	esrch        = "No such process"
	econnrefused = "Connection refused"
	enetunreach  = "Network is unreachable"
	enospc       = "No space left on device"
)

// attempt is one thing a command must not manage to do. In script and host, {N} stands
// for a name unique to the attempt, and the other {KEY}s for the test's paths.
type attempt struct {
	name   string
	script string
	want   string   // the errno text on stderr
	host   []string // host paths that must not exist afterwards
}

// tryAll runs each attempt in e, in parallel, with dir as working directory, and checks
// that it failed with its errno text and left the host without its paths.
func tryAll(t *testing.T, e *linux.Executor, dir string, vars map[string]string, attempts []attempt) {
	t.Helper()
	trySpec(t, e, executor.Spec{Dir: dir}, vars, attempts)
}

// trySpec is tryAll with each attempt's script run as spec says (Dir, Network).
func trySpec(t *testing.T, e *linux.Executor, spec executor.Spec, vars map[string]string, attempts []attempt) {
	t.Helper()
	base := token()
	for i, a := range attempts {
		kv := []string{"{N}", base + "-" + strconv.Itoa(i)}
		for k, v := range vars {
			kv = append(kv, "{"+k+"}", v)
		}
		r := strings.NewReplacer(kv...)
		script := r.Replace(a.script)
		host := make([]string, len(a.host))
		for i, p := range a.host {
			host[i] = r.Replace(p)
		}
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			spec := spec
			spec.Script, spec.Timeout = script, 20*time.Second
			res, err := e.Run(context.Background(), spec)
			if err != nil {
				t.Fatalf("Run(%q, network %v): %v", script, spec.Network, err)
			}
			failsWith(t, script, res, a.want)
			for _, p := range host {
				absent(t, p)
			}
		})
	}
}

// failsWith checks that the command failed (a non-zero exit) with want on stderr.
func failsWith(t *testing.T, script string, res executor.Result, want string) {
	t.Helper()
	if res.ExitCode == 0 || res.TimedOut || !strings.Contains(res.Stderr, want) {
		t.Errorf("%s: exit %d (timed out %v), stderr %q, stdout %q; want a failure with %q",
			script, res.ExitCode, res.TimedOut, res.Stderr, res.Stdout, want)
	}
}

// absent fails the test when the host has path.
func absent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the host has %s (Lstat: %v): the sandbox wrote outside", path, err)
	}
}

// token is a name no host file has.
func token() string { return "cmdgate-escape-" + strings.ToLower(rand.Text()[:12]) }

// hostDir makes a directory on the host outside /tmp: the sandbox has a /tmp of its
// own, so a workspace under /tmp has a parent the sandbox may write (its own), one under
// /var/tmp a parent it sees read-only.
func hostDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "cmdgate-escape-")
	if err != nil {
		testenv.Skip(t, "no directory outside /tmp for a workspace: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	d, err = filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// homeDir is the host home of the user running the tests (the gateway's HOME).
func homeDir(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		testenv.Skip(t, "no home directory: %q, %v", home, err)
	}
	if _, err := os.Stat(home); err != nil {
		testenv.Skip(t, "home directory: %v", err)
	}
	return home
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// fileState is what a host file must keep: content and mode.
type fileState struct {
	content []byte
	mode    fs.FileMode
}

// snapshot records the host files of paths that exist.
func snapshot(paths ...string) map[string]fileState {
	m := map[string]fileState{}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		m[p] = fileState{b, fi.Mode()}
	}
	return m
}

func unchanged(t *testing.T, before map[string]fileState) {
	t.Helper()
	for p, st := range snapshot(slices.Collect(maps.Keys(before))...) {
		if !bytes.Equal(st.content, before[p].content) || st.mode != before[p].mode {
			t.Errorf("the host's %s changed (mode %v, was %v)", p, st.mode, before[p].mode)
		}
	}
	for p := range before {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the host's %s is gone: %v", p, err)
		}
	}
}

func TestEscapeWrite(t *testing.T) {
	t.Parallel()
	// The workspace is outside /tmp, so that its parent is the sandbox's read-only root
	// (TestEscapeWriteTmpParent has one under /tmp).
	e, ws := newExecutor(t, linux.Options{Workspace: hostDir(t)})
	outside := hostDir(t)     // beside the workspace
	tmpOutside := t.TempDir() // in the host's /tmp, which the sandbox replaces
	home := homeDir(t)
	symlink(t, outside, filepath.Join(ws, "out"))
	symlink(t, tmpOutside, filepath.Join(ws, "tmpout"))
	symlink(t, "/etc", filepath.Join(ws, "etc"))
	symlink(t, home, filepath.Join(ws, "home"))
	keep := snapshot("/etc/passwd", "/etc/hosts", "/etc/shadow", "/etc/hostname")
	corePattern, _ := os.ReadFile("/proc/sys/kernel/core_pattern")

	vars := map[string]string{"WS": ws, "OUT": outside, "TMPOUT": tmpOutside, "HOME": home}
	t.Run("attempts", func(t *testing.T) {
		tryAll(t, e, ws, vars, []attempt{
			{"redirect into /etc", "echo pwned > /etc/{N}", erofs, []string{"/etc/{N}"}},
			{"touch in /usr", "touch /usr/{N}", erofs, []string{"/usr/{N}"}},
			{"cp into /usr/local/bin", "cp /bin/sh /usr/local/bin/{N}", erofs, []string{"/usr/local/bin/{N}"}},
			{"tee into /etc", "echo pwned | tee /etc/{N}", erofs, []string{"/etc/{N}"}},
			{"mkdir in /", "mkdir /{N}", erofs, []string{"/{N}"}},
			{"redirect into /dev", "echo pwned > /dev/{N}", erofs, nil},
			{"redirect into the host home", "echo pwned > {HOME}/{N}", enoent, []string{"{HOME}/{N}"}},
			{"mkdir the host home", "mkdir -p {HOME}/{N}", erofs, []string{"{HOME}/{N}"}},
			{"redirect into /var/tmp", "echo pwned > /var/tmp/{N}", erofs, []string{"/var/tmp/{N}"}},
			{"redirect through ..", "echo pwned > ../{N}", erofs, []string{"{WS}/../{N}"}},
			{"cd .. and touch", "cd .. && touch {N}", erofs, []string{"{WS}/../{N}"}},
			{"redirect through a link to a host dir", "echo pwned > out/{N}", enoent, []string{"{OUT}/{N}"}},
			{"cp through a link to a host /tmp dir", "cp /etc/hostname tmpout/{N}", enoent, []string{"{TMPOUT}/{N}"}},
			{"redirect through a link to /etc", "echo pwned > etc/{N}", erofs, []string{"/etc/{N}"}},
			{"touch through a link to the host home", "touch home/{N}", enoent, []string{"{HOME}/{N}"}},
			{"link to /etc made inside", "ln -s /etc e-{N} && echo pwned > e-{N}/{N}", erofs, []string{"/etc/{N}"}},
			{"mv into /etc", "echo pwned > f-{N} && mv f-{N} /etc/{N}", erofs, []string{"/etc/{N}"}},
			{"mv through a link to a host dir", "echo pwned > g-{N} && mv g-{N} out/{N}", enoent, []string{"{OUT}/{N}"}},
			{"symlink in /etc", "ln -s /bin/sh /etc/{N}", erofs, []string{"/etc/{N}"}},
			{"hard link of /etc/passwd", "ln /etc/passwd {N}", exdev, []string{"{WS}/{N}"}},
			{"hard link through a link to /etc", "ln etc/passwd {N}", exdev, []string{"{WS}/{N}"}},
			{"rename the workspace", "mv {WS} {WS}-{N}", erofs, []string{"{WS}-{N}"}},
			{"truncate /etc/passwd", "truncate -s 0 /etc/passwd", erofs, nil},
			{"chmod /etc/passwd", "chmod 666 /etc/passwd", erofs, nil},
			{"overwrite /etc/shadow", "echo pwned > /etc/shadow", erofs, nil},
			{"overwrite through /proc/self/root", "echo pwned > /proc/self/root/etc/{N}", erofs, []string{"/etc/{N}"}},
			{"kernel core_pattern", `v=$(cat /proc/sys/kernel/core_pattern) && echo "$v" > /proc/sys/kernel/core_pattern`, erofs, nil},
			{"cgroup release_agent", "echo /bin/sh > /sys/fs/cgroup/release_agent", enoent, nil},
			{"oom_score_adj", "echo -1000 > /proc/self/oom_score_adj", eacces, nil},
		})
	})
	unchanged(t, keep)
	if b, _ := os.ReadFile("/proc/sys/kernel/core_pattern"); !bytes.Equal(b, corePattern) {
		t.Errorf("the host's core_pattern changed: %q, was %q", b, corePattern)
	}
	for _, l := range []string{"out", "tmpout", "etc", "home"} {
		if _, err := os.Lstat(filepath.Join(ws, l)); err != nil {
			t.Errorf("the workspace lost %s: %v", l, err)
		}
	}
}

// TestEscapeWriteTmpParent: a workspace under the host's /tmp has, in the sandbox, a
// parent on the sandbox's own /tmp: writing there works and stays in the sandbox.
func TestEscapeWriteTmpParent(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	sibling := t.TempDir()
	n := token()
	res := run(t, e, ws, fmt.Sprintf("echo contained > ../%[1]s && cat ../%[1]s && echo pwned > %[2]s/%[1]s", n, sibling))
	if res.Stdout != "contained\n" {
		t.Errorf("writing ../%s: stdout %q, stderr %q; want it written in the sandbox's /tmp", n, res.Stdout, res.Stderr)
	}
	failsWith(t, "echo pwned > sibling", res, enoent)
	absent(t, filepath.Join(filepath.Dir(ws), n))
	absent(t, filepath.Join(sibling, n))
	res = run(t, e, ws, "mv "+ws+" "+ws+"-"+n)
	failsWith(t, "mv ws", res, ebusy)
	absent(t, ws+"-"+n)
	if _, err := os.Stat(ws); err != nil {
		t.Errorf("the workspace: %v", err)
	}
}

func TestEscapeRead(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	secret := token()
	plant := func(dir string) string {
		f, err := os.CreateTemp(dir, ".cmdgate-escape-secret-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f.Name()) })
		if _, err := f.WriteString(secret + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return f.Name()
	}
	home := homeDir(t)
	tmpSecret := plant(t.TempDir())
	varSecret := plant(hostDir(t))
	homeSecret := plant(home)
	symlink(t, varSecret, filepath.Join(ws, "secret"))
	symlink(t, home, filepath.Join(ws, "home"))
	vars := map[string]string{"TMPSECRET": tmpSecret, "VARSECRET": varSecret, "HOMESECRET": homeSecret, "HOME": home}

	t.Run("attempts", func(t *testing.T) {
		tryAll(t, e, ws, vars, []attempt{
			{"secret in the host /tmp", "cat {TMPSECRET}", enoent, nil},
			{"secret beside the workspace", "cat {VARSECRET}", enoent, nil},
			{"secret in the host home", "cat {HOMESECRET}", enoent, nil},
			{"list the host home", "ls -a {HOME}", enoent, nil},
			{"secret through a planted link", "cat secret", enoent, nil},
			{"host home through a planted link", "ls -a home/", enoent, nil},
			{"/var/log", "ls /var/log", enoent, nil},
			{"/sys", "ls /sys/fs/cgroup", enoent, nil},
			{"kernel memory", "cat /proc/kcore", enoent, nil},
			{"physical memory", "cat /dev/mem", enoent, nil},
			{"kernel log", "cat /dev/kmsg", enoent, nil},
			{"environment of pid 1", "cat /proc/1/environ", eacces, nil},
			{"memory of pid 1", "cat /proc/1/mem", eacces, nil},
			{"root of pid 1", "ls /proc/1/root/", eacces, nil},
			{"controlling terminal", "echo pwned > /dev/tty", eacces, nil},
		})
	})

	t.Run("hidden", func(t *testing.T) {
		t.Parallel()
		// Each secret of the system configuration the host has shows empty.
		var script strings.Builder
		var want strings.Builder
		for _, p := range linux.DefaultHide {
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			if fi.IsDir() {
				fmt.Fprintf(&script, "echo %s $(ls -A %s | wc -l)\n", p, p)
			} else {
				fmt.Fprintf(&script, "echo %s $(wc -c < %s)\n", p, p)
			}
			fmt.Fprintf(&want, "%s 0\n", p)
		}
		if script.Len() == 0 {
			t.Skip("the host has none of linux.DefaultHide")
		}
		res := run(t, e, ws, script.String())
		if res.Stdout != want.String() || res.ExitCode != 0 {
			t.Errorf("sizes of the hidden files: exit %d, stdout\n%s\nstderr %q\nwant\n%s", res.ExitCode, res.Stdout, res.Stderr, want.String())
		}
	})

	t.Run("processes", func(t *testing.T) {
		t.Parallel()
		// pid 1 is the sandbox's init; the test process, and every other host process,
		// is not in /proc.
		res := run(t, e, ws, fmt.Sprintf(`tr '\0' ' ' < /proc/1/cmdline; echo
ls /proc | grep -c '^[0-9]'
[ -e /proc/%d ] && echo visible || echo invisible`, os.Getpid()))
		lines := strings.Split(res.Stdout, "\n")
		// A spawner's init is told the CPUs to go back to (this process's).
		var mine unix.CPUSet
		unix.SchedGetaffinity(0, &mine)
		init := linux.HelperName
		if mine.Count() > 1 {
			init += " " + linux.CPUsArg + " " + linux.FormatCPUs(&mine)
		}
		if len(lines) != 4 || strings.TrimSpace(lines[0]) != init || lines[2] != "invisible" {
			t.Fatalf("/proc: stdout %q, stderr %q; want pid 1 %q, the test process invisible", res.Stdout, res.Stderr, init)
		}
		// init, bash, ls, grep: a few more at most.
		if n, err := strconv.Atoi(lines[1]); err != nil || n > 6 {
			t.Errorf("/proc lists %q processes; want the sandbox's few", lines[1])
		}
	})

	t.Run("mounts", func(t *testing.T) {
		t.Parallel()
		// Every mount is the new root, a system directory, /tmp, the workspace, /proc
		// or /dev: no trace of the host's root nor of a host directory.
		res := run(t, e, ws, "cut -d' ' -f5 /proc/self/mountinfo")
		allowed := append([]string{"/tmp", "/proc", "/dev", ws}, linux.DefaultReadOnly...)
		for _, m := range strings.Fields(res.Stdout) {
			if m == "/" || slices.ContainsFunc(allowed, func(d string) bool { return m == d || strings.HasPrefix(m, d+"/") }) {
				continue
			}
			t.Errorf("mount point %s in the sandbox; want only %v", m, allowed)
		}
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, ws+"\n") {
			t.Errorf("mountinfo: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	})

	t.Run("sysv ipc", func(t *testing.T) {
		t.Parallel()
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
		if err != nil {
			t.Skipf("SysV shared memory: %v", err)
		}
		defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		res := run(t, e, ws, "tail -n +2 /proc/sysvipc/shm | wc -l")
		if res.Stdout != "0\n" {
			t.Errorf("the sandbox sees %q SysV segments (stderr %q); want none, not the host's %d", res.Stdout, res.Stderr, id)
		}
	})
}

// TestEscapeInheritedDescriptors gives the test process descriptors without close-on-exec,
// as a gateway may inherit them from whatever started it (a shell, a supervisor, a
// socket-activating service manager): a directory outside the workspace and a host file
// open for writing. The command must not get them. Not parallel: every process the test
// starts meanwhile inherits them.
func TestEscapeInheritedDescriptors(t *testing.T) {
	e, ws := newExecutor(t, linux.Options{})
	dir := hostDir(t)
	secret := token()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "log")
	dirFD, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirFD)
	logFD, err := unix.Open(logPath, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(logFD)

	script := fmt.Sprintf(`ls /proc/self/fd | tr '\n' ' '; echo
echo pwned >&%[2]d
cat /proc/self/fd/%[1]d/secret`, dirFD, logFD)
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		// A listing straight from the descriptor, which no path check sees.
		script += fmt.Sprintf("\n/usr/bin/python3 -c 'import os; print(os.listdir(%d))'", dirFD)
	}
	res := run(t, e, ws, script)
	if res.Stdout != "0 1 2 3 \n" {
		t.Errorf("the command inherits descriptors %q; want 0 1 2 (3 is ls's own)\nstderr %q", res.Stdout, res.Stderr)
	}
	if want := fmt.Sprintf("%d: Bad file descriptor", logFD); !strings.Contains(res.Stderr, want) {
		t.Errorf("writing to the inherited descriptor %d: stderr %q; want %q", logFD, res.Stderr, want)
	}
	if strings.Contains(res.Stdout, "secret") {
		t.Errorf("the command listed %s through the inherited descriptor %d: %q", dir, dirFD, res.Stdout)
	}
	if strings.Contains(res.Stdout+res.Stderr, secret) {
		t.Errorf("the command read %s/secret through the inherited descriptor %d", dir, dirFD)
	}
	if b, err := os.ReadFile(logPath); err != nil || len(b) != 0 {
		t.Errorf("the host file %s holds %q (%v): the command wrote through the inherited descriptor %d", logPath, b, err, logFD)
	}
}

// hostListener serves a greeting on the host's addr and counts connections.
func hostListener(t *testing.T, network, addr string) (net.Listener, func() int) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln, serve(t, ln, "hello from the host\n")
}

// serve answers every connection to ln with greeting, and counts them.
func serve(t *testing.T, ln net.Listener, greeting string) func() int {
	conns := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- struct{}{}:
			default:
			}
			io.WriteString(c, greeting)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return func() int { return len(conns) }
}

// hostAddress is an IPv4 address of one of the host's interfaces other than loopback.
func hostAddress() string {
	if a := hostAddresses(); len(a) > 0 {
		return a[0]
	}
	return ""
}

// hostAddresses are the addresses of the host's interfaces other than loopback and
// IPv6 link-local (which needs a zone to connect to), IPv4 first.
func hostAddresses() []string {
	addrs, _ := net.InterfaceAddrs()
	var v4, v6 []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		if ipn.IP.To4() != nil {
			v4 = append(v4, ipn.IP.String())
		} else {
			v6 = append(v6, ipn.IP.String())
		}
	}
	return append(v4, v6...)
}

func TestEscapeNetwork(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	ln, accepted := hostListener(t, "tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	abstractName := token()
	_, abstractAccepted := hostListener(t, "unix", "@"+abstractName)
	compileProbe(t, e, ws)

	connect := func(host string, port int) string {
		return fmt.Sprintf("exec 3<>/dev/tcp/%s/%d && head -n 1 <&3", host, port)
	}
	t.Run("off", func(t *testing.T) {
		attempts := []attempt{
			{"host loopback", connect("127.0.0.1", port), econnrefused, nil},
			{"documentation address", connect("192.0.2.1", 80), enetunreach, nil},
		}
		if a := hostAddress(); a != "" {
			attempts = append(attempts, attempt{"host address " + a, connect(a, port), enetunreach, nil})
		}
		tryAll(t, e, ws, nil, attempts)
	})
	if n := accepted(); n != 0 {
		t.Errorf("the host listener accepted %d connections from sandboxes without network", n)
	}

	t.Run("abstract socket", func(t *testing.T) {
		res := run(t, e, ws, "./probe abstract "+abstractName)
		if res.Stdout != "socket OK\nconnect ECONNREFUSED\n" {
			t.Errorf("connect to the host's abstract socket @%s: stdout %q, stderr %q; want ECONNREFUSED", abstractName, res.Stdout, res.Stderr)
		}
		if n := abstractAccepted(); n != 0 {
			t.Errorf("the host's abstract socket accepted %d connections", n)
		}
	})

	t.Run("interfaces", func(t *testing.T) {
		res := run(t, e, ws, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
		if res.Stdout != "lo\n" {
			t.Errorf("interfaces without network: %q (stderr %q); want lo only", res.Stdout, res.Stderr)
		}
	})

	// Granted network, the command keeps its own network namespace, joined to the
	// outside world by an uplink: it reaches the world (a namespace of the test's,
	// behind a veth pair, stands for it) and nothing of the host's: not its loopback,
	// not its addresses (where the gateway and every other local service listen, the
	// veth's host end among them), not link-local (cloud metadata services).
	t.Run("on", func(t *testing.T) {
		testenv.NeedCommand(t, linux.UplinkName)
		out := testenv.NewOutside(t)
		outLn := out.Listen(t)
		outAccepted := serve(t, outLn, "hello from outside\n")
		attempts := []attempt{
			{name: "host loopback", script: connect("127.0.0.1", port), want: econnrefused},
			{name: "link-local", script: connect("169.254.169.254", 80), want: eacces},
			{name: "uplink's alias of the host", script: connect("10.0.2.2", port), want: eacces},
		}
		counts := map[string]func() int{"127.0.0.1": accepted}
		for _, a := range hostAddresses() {
			ln, n := hostListener(t, "tcp", net.JoinHostPort(a, "0"))
			counts[a] = n
			want := eacces // a prohibit route
			if strings.Contains(a, ":") {
				want = enetunreach // the uplink carries no IPv6
			}
			attempts = append(attempts, attempt{name: "host address " + a, script: connect(a, ln.Addr().(*net.TCPAddr).Port), want: want})
		}
		if _, ok := counts[out.Host.String()]; !ok {
			t.Fatalf("the veth's host end %s is not among the host's addresses %v", out.Host, hostAddresses())
		}
		t.Run("host", func(t *testing.T) { trySpec(t, e, executor.Spec{Dir: ws, Network: true}, nil, attempts) })
		for a, n := range counts {
			if n() != 0 {
				t.Errorf("the host listener on %s accepted %d connections from a sandbox granted the network", a, n())
			}
		}

		script := connect(out.Addr.String(), outLn.Addr().(*net.TCPAddr).Port)
		res, err := e.Run(context.Background(), executor.Spec{Script: script, Dir: ws, Network: true, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("Run(%q, network): %v", script, err)
		}
		if res.ExitCode != 0 || res.Stdout != "hello from outside\n" {
			t.Errorf("with network: exit %d, stdout %q, stderr %q; want the outside server's greeting", res.ExitCode, res.Stdout, res.Stderr)
		}
		if n := outAccepted(); n != 1 {
			t.Errorf("the outside listener accepted %d connections; want 1", n)
		}
	})

	// Granted network, the host's abstract unix sockets (D-Bus, X11) stay out of reach:
	// they belong to the host's network namespace, and the sandbox has its own.
	t.Run("abstract socket with network", func(t *testing.T) {
		testenv.NeedCommand(t, linux.UplinkName)
		script := "./probe abstract " + abstractName
		res, err := e.Run(context.Background(), executor.Spec{Script: script, Dir: ws, Network: true, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("Run(%q, network): %v", script, err)
		}
		if res.Stdout != "socket OK\nconnect ECONNREFUSED\n" {
			t.Errorf("connect to the host's abstract socket @%s with network: stdout %q, stderr %q; want ECONNREFUSED", abstractName, res.Stdout, res.Stderr)
		}
		if n := abstractAccepted(); n != 0 {
			t.Errorf("the host's abstract socket accepted %d connections", n)
		}
	})
}

// compileProbe compiles testdata/probe.c into ws/probe inside the sandbox.
func compileProbe(t *testing.T, e *linux.Executor, ws string) {
	t.Helper()
	testenv.NeedCommand(t, "gcc")
	src, err := os.ReadFile("testdata/probe.c")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "probe.c"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(t, e, ws, "gcc -Wall -Werror -O1 -o probe probe.c"); res.ExitCode != 0 {
		t.Fatalf("gcc probe.c in the sandbox: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func TestEscapeSyscalls(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	compileProbe(t, e, ws)
	hostname, _ := os.Hostname()

	res := run(t, e, ws, "./probe syscalls")
	got := map[string]string{}
	var order []string
	for line := range strings.Lines(res.Stdout) {
		name, errno, _ := strings.Cut(strings.TrimSpace(line), " ")
		got[name] = errno
		order = append(order, name)
	}
	want := map[string]string{"getpid": "OK", "clone": "OK", "personality_query": "OK", "clone3_user": "ENOSYS"}
	for _, name := range order {
		if _, ok := want[name]; !ok {
			want[name] = "EPERM"
		}
	}
	if len(order) < 50 || res.ExitCode != 0 {
		t.Fatalf("./probe syscalls: exit %d, %d probes, stderr %q", res.ExitCode, len(order), res.Stderr)
	}
	for _, name := range order {
		if got[name] != want[name] {
			t.Errorf("%s in the sandbox: %s, want %s", name, got[name], want[name])
		}
	}
	if h, _ := os.Hostname(); h != hostname {
		t.Errorf("the host name changed: %q, was %q", h, hostname)
	}

	t.Run("tools", func(t *testing.T) {
		attempts := []attempt{
			{"mount tmpfs", "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m", "permission denied", nil},
			{"unshare -U", "unshare -U true", "unshare failed: " + eperm, nil},
			{"unshare -r", "unshare -r true", "unshare failed: " + eperm, nil},
			{"unshare -m", "unshare -m true", "unshare failed: " + eperm, nil},
			{"chroot", "chroot /tmp /bin/true", eperm, nil},
		}
		if _, err := os.Stat("/usr/bin/strace"); err == nil {
			attempts = append(attempts, attempt{"strace", "strace -f true", "PTRACE_TRACEME: " + eperm, nil})
		}
		tryAll(t, e, ws, nil, attempts)
	})

	t.Run("foreign convention", func(t *testing.T) {
		if runtime.GOARCH != "amd64" {
			t.Skip("i386 system calls through int 0x80 exist on amd64 only")
		}
		// What the host's kernel does with the i386 convention decides what the sandbox
		// can show: the same probe, outside the sandbox, first.
		outside := hostRun(t, filepath.Join(ws, "probe"), "int80")
		res := run(t, e, ws, "./probe int80")
		verdict, err := foreignVerdict(outside, probeRun{exit: res.ExitCode, stdout: res.Stdout})
		if err != nil {
			t.Error(err)
		}
		t.Log(verdict)
	})
}

// probeRun is how one run of the int80 probe ended.
type probeRun struct {
	exit   int // 128+N when killed by signal N
	stdout string
}

// hostRun runs a program on the host, outside any sandbox.
func hostRun(t *testing.T, path string, args ...string) probeRun {
	t.Helper()
	cmd := exec.Command(path, args...)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s on the host: %v", path, err)
	}
	exit := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit = 128 + int(ws.Signal())
	}
	return probeRun{exit: exit, stdout: string(out)}
}

// foreignVerdict judges the int80 probe. Where the host runs i386 system calls
// (IA32 emulation), the probe returns outside the sandbox, and inside the filter's
// architecture check must kill it with SIGSYS. Where the host has no IA32 emulation
// (CONFIG_IA32_EMULATION off, or ia32_emulation=0 at boot) the kernel refuses the
// convention itself and the probe dies (SIGSEGV) on the host too: what the sandbox
// must show then is that the probe does not make the call there either; the filter's
// architecture check itself is proven on every host by the seccomp package's
// TestFilterEmulated, which runs the program on i386 and other foreign arches.
func foreignVerdict(outside, inside probeRun) (string, error) {
	returned := func(r probeRun) bool { return strings.Contains(r.stdout, "int80 returned") }
	switch {
	case returned(outside) && outside.exit == 0:
		if inside.exit != 128+int(unix.SIGSYS) || returned(inside) {
			return "", fmt.Errorf("host with IA32 emulation: int 0x80 in the sandbox: exit %d, stdout %q; want killed by SIGSYS (the filter's architecture check)", inside.exit, inside.stdout)
		}
		return "host with IA32 emulation: the filter killed the i386 call with SIGSYS", nil
	case !returned(outside) && outside.exit > 128:
		if returned(inside) || inside.exit <= 128 {
			return "", fmt.Errorf("host without IA32 emulation (the probe dies with signal %d on the host): in the sandbox exit %d, stdout %q; want the probe killed without making the call", outside.exit-128, inside.exit, inside.stdout)
		}
		return fmt.Sprintf("host without IA32 emulation: the kernel refuses the i386 convention (signal %d on the host, signal %d in the sandbox); the filter's architecture check is proven by TestFilterEmulated", outside.exit-128, inside.exit-128), nil
	}
	return "", fmt.Errorf("cannot tell what the host does with int 0x80: on the host exit %d, stdout %q", outside.exit, outside.stdout)
}

// TestForeignVerdict: the judgement of both kinds of host. A host without IA32
// emulation cannot be made at run time (the kernel decides at boot), so its outcome
// is written down as such hosts give it: SIGSEGV on the host and in the sandbox.
func TestForeignVerdict(t *testing.T) {
	t.Parallel()
	sigsys, sigsegv := 128+int(unix.SIGSYS), 128+int(unix.SIGSEGV)
	returned := probeRun{exit: 0, stdout: "int80 returned 42\n"}
	for _, tc := range []struct {
		name            string
		outside, inside probeRun
		ok              bool
	}{
		{"ia32 host, filter kills", returned, probeRun{exit: sigsys}, true},
		{"ia32 host, call made in the sandbox", returned, returned, false},
		{"ia32 host, killed otherwise", returned, probeRun{exit: sigsegv}, false},
		{"no ia32 host, killed in the sandbox", probeRun{exit: sigsegv}, probeRun{exit: sigsegv}, true},
		{"no ia32 host, killed by the filter", probeRun{exit: sigsegv}, probeRun{exit: sigsys}, true},
		{"no ia32 host, call made in the sandbox", probeRun{exit: sigsegv}, returned, false},
		{"unknown host", probeRun{exit: 1}, probeRun{exit: sigsys}, false},
	} {
		if _, err := foreignVerdict(tc.outside, tc.inside); (err == nil) != tc.ok {
			t.Errorf("%s: foreignVerdict = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestEscapeCapabilities(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	res := run(t, e, ws, "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status")
	want := "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" +
		"CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
	if res.Stdout != want {
		t.Errorf("/proc/self/status:\n%s\nstderr %q\nwant\n%s", res.Stdout, res.Stderr, want)
	}
}

func TestEscapeSignal(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	// Long enough to outlast the attempts on a loaded machine (a run of 60 s once ended
	// by itself under CI load): the cleanup kills it.
	sleep := exec.Command("sleep", "3600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { sleep.Wait(); close(exited) }()
	t.Cleanup(func() {
		sleep.Process.Kill()
		<-exited
	})
	pid := strconv.Itoa(sleep.Process.Pid)
	t.Run("attempts", func(t *testing.T) {
		tryAll(t, e, ws, map[string]string{"PID": pid}, []attempt{
			{"kill -9", "kill -9 {PID}", esrch, nil},
			{"kill -STOP", "kill -STOP {PID}", esrch, nil},
			{"kill -9 -1", "kill -9 -1; kill -9 {PID}", esrch, nil},
			{"proc of the host process", "cat /proc/{PID}/status", enoent, nil},
		})
	})
	select {
	case <-exited:
		t.Fatalf("the host's sleep %s ended: %v", pid, sleep.ProcessState)
	default:
	}
	if st, err := os.ReadFile("/proc/" + pid + "/stat"); err != nil || !bytes.Contains(st, []byte(") S ")) {
		t.Errorf("the host's sleep %s is not sleeping: %q, %v", pid, st, err)
	}
}

// pidNamespace is the inode of a host process's pid namespace, 0 once it is gone.
func pidNamespace(pid int) uint64 {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// inNamespace lists the host processes in the pid namespace ino.
func inNamespace(ino uint64) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err == nil && pidNamespace(pid) == ino {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sandboxNamespace waits (bounded) for the command to write its pid namespace's inode
// to ws/ns and holds that namespace open for the rest of the test: a namespace's inode is
// handed to the next namespace made once it is gone, and other tests make them all the
// time; held, it names this sandbox only. running must be true for as long as the run
// has not returned.
func sandboxNamespace(t *testing.T, ws string, running func() bool) uint64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var ino uint64
	for ino == 0 {
		if b, err := os.ReadFile(filepath.Join(ws, "ns")); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			if ino, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
				t.Fatalf("ns: %q", b)
			}
			break
		}
		if !running() || time.Now().After(deadline) {
			t.Fatal("the command did not write its pid namespace to ns")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for time.Now().Before(deadline) && running() {
		for _, pid := range inNamespace(ino) {
			f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/pid")
			if err != nil {
				continue
			}
			if fi, err := f.Stat(); err == nil && fi.Sys().(*syscall.Stat_t).Ino == ino && running() {
				t.Cleanup(func() { f.Close() })
				return ino
			}
			f.Close()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process of the pid namespace %d found on the host while the command ran", ino)
	return 0
}

// noSurvivors waits (bounded) until no host process is left in the pid namespace ino.
func noSurvivors(t *testing.T, ino uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := inNamespace(ino)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, pid := range pids {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				desc = append(desc, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
			}
			t.Errorf("%d processes of the sandbox survive on the host after %v: %s", len(pids), within, strings.Join(desc, ", "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runAsync runs spec in e in the background.
func runAsync(e *linux.Executor, spec executor.Spec) (running func() bool, wait func() (executor.Result, error)) {
	type outcome struct {
		res executor.Result
		err error
	}
	ch := make(chan outcome, 1)
	done := make(chan struct{})
	go func() {
		res, err := e.Run(context.Background(), spec)
		close(done)
		ch <- outcome{res, err}
	}()
	running = func() bool {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	wait = func() (executor.Result, error) { o := <-ch; return o.res, o.err }
	return running, wait
}

// needLimit skips (fails under CI) unless the cgroup limit is in force: a bomb without
// it would reach the host.
func needLimit(t *testing.T, e *linux.Executor, limit string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := e.Probe(ctx)
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if !slices.Contains(st.Limits, limit) {
		testenv.Skip(t, "the %s cgroup limit is not in force here: %+v", limit, st)
	}
}

const nsScript = "stat -L -c %i /proc/self/ns/pid > ns\n"

func TestEscapeForkBomb(t *testing.T) {
	t.Parallel()
	const pids = 64
	e, ws := newExecutor(t, linux.Options{Limits: linux.Limits{Pids: pids},
		Config: executor.Config{KillGrace: 500 * time.Millisecond}})
	needLimit(t, e, "pids")
	running, wait := runAsync(e, executor.Spec{Script: nsScript + "b() { b | b & wait; }; b", Dir: ws, Timeout: 3 * time.Second})
	ino := sandboxNamespace(t, ws, running)
	most := 0
	for running() {
		most = max(most, len(inNamespace(ino)))
		time.Sleep(20 * time.Millisecond)
	}
	res, err := wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.TimedOut && res.ExitCode == 0 {
		t.Errorf("the fork bomb ended well: %+v", res)
	}
	if res.DurationMS > 10_000 {
		t.Errorf("the fork bomb took %d ms to stop; want the 3 s timeout and the grace", res.DurationMS)
	}
	if !strings.Contains(res.Stderr, "fork: ") || !strings.Contains(res.Stderr, "Resource temporarily unavailable") {
		t.Errorf("stderr %.300q; want fork failures (the pids limit)", res.Stderr)
	}
	if most > pids {
		t.Errorf("%d processes in the sandbox at once; want at most the pids limit %d", most, pids)
	}
	if most < pids/4 {
		t.Errorf("at most %d processes in the sandbox: the bomb did not go off", most)
	}
	noSurvivors(t, ino, 5*time.Second)
	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("the host cannot fork after the bomb: %v", err)
	}
	t.Logf("fork bomb: at most %d processes, %d ms, exit %d, timed out %v", most, res.DurationMS, res.ExitCode, res.TimedOut)
}

func TestEscapeMemoryBomb(t *testing.T) {
	t.Parallel()
	build, ws := newExecutor(t, linux.Options{})
	compileProbe(t, build, ws)
	e, _ := newExecutor(t, linux.Options{Workspace: ws, Limits: linux.Limits{Memory: 64 << 20}})
	needLimit(t, e, "memory")
	res := run(t, e, ws, "./probe hog")
	if res.ExitCode != 128+int(unix.SIGKILL) || strings.Contains(res.Stdout, "not killed") {
		t.Errorf("./probe hog under a 64 MiB limit: exit %d, stdout %q, stderr %q; want killed (137)", res.ExitCode, res.Stdout, res.Stderr)
	}
	last := 0
	for line := range strings.Lines(res.Stdout) {
		fmt.Sscanf(line, "%d MiB", &last)
	}
	if last > 64 {
		t.Errorf("the hog held %d MiB under a 64 MiB limit", last)
	}
	// The sandbox is still usable, the host still runs programs.
	if res := run(t, build, ws, "echo fine"); res.Stdout != "fine\n" {
		t.Errorf("after the bomb: %+v", res)
	}
}

func TestEscapeDiskFill(t *testing.T) {
	t.Parallel()
	const size = 16 << 20
	e, ws := newExecutor(t, linux.Options{TmpSize: size})
	n := token()
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			p := dir + "/" + n
			res := run(t, e, ws, fmt.Sprintf("dd if=/dev/zero of=%[1]s bs=1M count=64 2>&1 >/dev/null | grep -o '%[2]s'; stat -c %%s %[1]s", p, enospc))
			lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
			if len(lines) != 2 || lines[0] != enospc {
				t.Fatalf("filling %s: stdout %q, stderr %q; want %q and the size", dir, res.Stdout, res.Stderr, enospc)
			}
			if got, err := strconv.ParseInt(lines[1], 10, 64); err != nil || got > size || got < size/2 {
				t.Errorf("%s filled up to %s bytes; want at most %d", dir, lines[1], size)
			}
			absent(t, p)
		})
	}
}

func TestEscapeTimeout(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{Config: executor.Config{KillGrace: 500 * time.Millisecond}})
	// Everything ignores SIGTERM: the grace runs out and SIGKILL ends the sandbox.
	script := nsScript + "trap '' TERM; sleep 100 & (trap '' TERM; sleep 100) & sleep 100"
	running, wait := runAsync(e, executor.Spec{Script: script, Dir: ws, Timeout: time.Second})
	ino := sandboxNamespace(t, ws, running)
	res, err := wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.TimedOut || res.ExitCode != 124 {
		t.Errorf("timed out %v, exit %d; want true, 124", res.TimedOut, res.ExitCode)
	}
	if res.DurationMS > 6_000 {
		t.Errorf("the run took %d ms; want the 1 s timeout, the 0.5 s grace and the wait", res.DurationMS)
	}
	noSurvivors(t, ino, 2*time.Second)
}

// TestEscapeGatewayCrash kills a gateway in miniature (testdata/crashparent) while its
// command runs: the sandbox dies with it.
func TestEscapeGatewayCrash(t *testing.T) {
	t.Parallel()
	_, ws := newExecutor(t, linux.Options{}) // the probe: skips where no sandbox can be built
	gateway := filepath.Join(t.TempDir(), "crashparent")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", gateway, "./testdata/crashparent").CombinedOutput(); err != nil {
		t.Fatalf("go build crashparent: %v\n%s", err, out)
	}
	// direct: the gateway starts the init itself; spawner: a probed gateway's spawner does.
	for _, mode := range []string{"direct", "spawner"} {
		t.Run(mode, func(t *testing.T) {
			ws := filepath.Join(ws, mode)
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{helper, ws, nsScript + "sleep 100"}
			if mode == "spawner" {
				args = append(args, "probe")
			}
			var stderr bytes.Buffer
			cmd := exec.Command(gateway, args...)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })
			running := func() bool {
				select {
				case <-exited:
					return false
				default:
					return true
				}
			}
			ino := sandboxNamespace(t, ws, running)
			// Wait (bounded) for the sleep to show in the host's /proc.
			for deadline := time.Now().Add(10 * time.Second); ; {
				if slices.ContainsFunc(inNamespace(ino), func(pid int) bool {
					comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
					return string(comm) == "sleep\n"
				}) {
					break
				}
				if time.Now().After(deadline) || !running() {
					t.Fatalf("no sleep in the sandbox; crashparent: %s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			noSurvivors(t, ino, 5*time.Second)
		})
	}
}

// TestNetworkWithoutUplink: where slirp4netns is missing, a command granted the network
// is refused, never run with the host's network, and the status says why.
func TestNetworkWithoutUplink(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{Uplink: filepath.Join(t.TempDir(), "no-such-uplink")})
	st, err := e.Probe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Uplink != "" || !strings.Contains(st.Unavailable["network"], "slirp4netns") {
		t.Errorf("status: uplink %q, unavailable %q; want no uplink and the reason", st.Uplink, st.Unavailable["network"])
	}
	marker := filepath.Join(ws, "ran")
	res, err := e.Run(context.Background(), executor.Spec{Script: "touch " + marker, Dir: ws, Network: true, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "slirp4netns") {
		t.Errorf("Run with network and no uplink: %+v, %v; want an error naming slirp4netns", res, err)
	}
	absent(t, marker)
	// Without network the same executor still runs commands.
	if res := run(t, e, ws, "touch "+marker); res.ExitCode != 0 {
		t.Errorf("without network: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
}
