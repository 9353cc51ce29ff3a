package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestStartIn: a process started by StartIn is in its group from its start, the
// starting thread is back in its own cgroups afterwards, and a failure on either way
// is reported for what it is. On v2 a thread may not leave its process's cgroup: Birth
// is the group's directory to clone into (TestStartInto).
func TestStartIn(t *testing.T) {
	m := manager(t)
	g := newGroup(t, m, Limits{Memory: 64 << 20, Pids: 10, CPU: 1})
	b := g.Birth()
	if m.Version() == 2 {
		if len(b.Into) > 0 || b.Dir != g.dirs[0] {
			t.Fatalf("Birth() on cgroup v2 = %+v; want Dir %s only", b, g.dirs[0])
		}
		return
	}
	into, home := b.Into, b.Home
	if len(into) == 0 || b.Dir != "" {
		t.Fatalf("Birth() on cgroup v1 as root = %+v; want Into and Home (homes %q)", b, g.homes)
	}
	if !slices.Equal(into, g.dirs) || len(home) != len(into) {
		t.Fatalf("Birth() = %q, %q; want the group's directories %q and as many homes", into, home, g.dirs)
	}
	sleep := testenv.NeedCommand(t, "sleep")

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadCgroups(t)

	// The process is in the group at once: no Add.
	cmd := exec.Command(sleep, "30")
	if err := b.Start(func(fd int) error {
		if fd != -1 {
			t.Errorf("Birth{Into}.Start passed cgroup descriptor %d, want -1", fd)
		}
		return cmd.Start()
	}); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !g.Holds(cmd.Process.Pid) {
		t.Errorf("Holds(the started process) = false; its cgroups: %q", readFile(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/cgroup"))
	}
	if after := threadCgroups(t); after != before {
		t.Errorf("the starting thread's cgroups after StartIn:\n%s\nwant as before:\n%s", after, before)
	}
	if g.Holds(os.Getpid()) {
		t.Error("Holds(this process) = true")
	}

	// A group it cannot move into: start is not called, the thread stays home.
	called := false
	err := StartIn(append(slices.Clone(into[:1]), filepath.Join(into[0], "missing")), home[:2], func() error { called = true; return nil })
	if err == nil || errors.Is(err, ErrStranded) || called {
		t.Errorf("StartIn(into a missing group) = %v, start called %v; want an error, not stranded, start not called", err, called)
	}
	if after := threadCgroups(t); after != before {
		t.Errorf("the thread's cgroups after a failed move in:\n%s\nwant as before:\n%s", after, before)
	}

	// A home it cannot move back to: ErrStranded, and the thread is still in the group
	// (the test takes it home itself).
	err = StartIn(into[:1], []string{filepath.Join(home[0], "missing")}, func() error { return nil })
	if !errors.Is(err, ErrStranded) {
		t.Errorf("StartIn(back to a missing home) = %v, want ErrStranded", err)
	}
	if after := threadCgroups(t); after == before {
		t.Error("the thread left the group though StartIn reported it stranded")
	}
	if err := write(home[0], "tasks", "0"); err != nil {
		t.Fatalf("take the thread home: %v", err)
	}
	if after := threadCgroups(t); after != before {
		t.Errorf("the thread's cgroups after the test took it home:\n%s\nwant as before:\n%s", after, before)
	}
}

// TestStartInto: a process started by StartInto is cloned into the cgroup v2 directory
// (with the namespaces of a sandbox's init), and where the clone cannot be done (a
// directory that is no cgroup, one that does not exist) it is started where its
// starter is, by a second call without the descriptor. On a host whose controllers are
// on cgroup v1, the cgroup2 mount (with no controller) has the same clone.
func TestStartInto(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "creating cgroups needs root (or a delegated cgroup, not tested)")
	}
	dir, rel := v2Dir(t)
	sleep := testenv.NeedCommand(t, "sleep")
	var fds []int
	var cmd *exec.Cmd
	start := func(fd int) error {
		fds = append(fds, fd)
		cmd = exec.Command(sleep, "30")
		uid, gid := os.Getuid(), os.Getgid()
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET,
			Pdeathsig:   syscall.SIGKILL,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		}
		if fd >= 0 {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		}
		return cmd.Start()
	}
	stop := func() {
		if cmd != nil && cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	own := v2Cgroup(t, os.Getpid())

	if err := (Birth{Dir: dir}).Start(start); err != nil {
		t.Fatalf("Birth{Dir: %s}.Start() error = %v", dir, err)
	}
	got := v2Cgroup(t, cmd.Process.Pid)
	stop()
	if len(fds) != 1 || fds[0] < 0 || got != rel {
		t.Errorf("Birth{Dir}.Start: start called with %v, process in cgroup %q; want once with a descriptor, in %q", fds, got, rel)
	}

	for _, c := range []struct {
		name, dir string
		fds       int // calls of start
	}{
		{"not a cgroup", t.TempDir(), 2},
		{"missing", filepath.Join(dir, "missing"), 1},
	} {
		fds = nil
		if err := StartInto(c.dir, start); err != nil {
			t.Errorf("%s: StartInto() error = %v", c.name, err)
			continue
		}
		got := v2Cgroup(t, cmd.Process.Pid)
		stop()
		if len(fds) != c.fds || fds[len(fds)-1] != -1 || got != own {
			t.Errorf("%s: start called with %v, process in cgroup %q; want %d calls, the last with -1, in this process's %q", c.name, fds, got, c.fds, own)
		}
	}
}

// v2Dir is a cgroup v2 directory this process may clone processes into, removed when the
// test ends, and its path as /proc/<pid>/cgroup shows it: a group of its Manager where
// Detect chose v2, else a child of this process's cgroup in the cgroup2 mount.
func v2Dir(t *testing.T) (dir, rel string) {
	if m := Detect(); m.Version() == 2 && len(m.Unavailable()) == 0 {
		g := newGroup(t, m, Limits{Pids: 10})
		return g.Birth().Dir, g.rels[0]
	}
	mounts, err := readMounts("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	own := v2Cgroup(t, os.Getpid())
	for _, mt := range mounts {
		if mt.fstype != "cgroup2" {
			continue
		}
		if parent := dirOf(mt, own); parent != "" {
			name := groupName(t)
			dir = filepath.Join(parent, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := os.Remove(dir); err != nil {
					t.Errorf("remove %s: %v", dir, err)
				}
			})
			return dir, joinRel(own, name)
		}
	}
	testenv.Skip(t, "no cgroup2 mount shows this process's cgroup v2 cgroup %s", own)
	return "", ""
}

// v2Cgroup is process pid's cgroup v2 path, from its "0::" line of /proc/<pid>/cgroup.
func v2Cgroup(t *testing.T, pid int) string {
	t.Helper()
	own, err := readOwn("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range own {
		if o.id == "" {
			return o.path
		}
	}
	t.Fatalf("process %d is in no cgroup v2 cgroup", pid)
	return ""
}

// threadCgroups is the calling thread's /proc/thread-self/cgroup.
func threadCgroups(t *testing.T) string {
	t.Helper()
	return readFile(t, "/proc/thread-self/cgroup")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
