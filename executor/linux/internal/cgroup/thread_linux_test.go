package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestStartIn: a process started by StartIn is in its group from its start, the
// starting thread is back in its own cgroups afterwards, and a failure on either way
// is reported for what it is. On v2 ThreadMove declines (a thread may not leave its
// process's cgroup there) and Add is the way.
func TestStartIn(t *testing.T) {
	m := manager(t)
	g := newGroup(t, m, Limits{Memory: 64 << 20, Pids: 10, CPU: 1})
	into, home, ok := g.ThreadMove()
	if m.Version() == 2 {
		if ok {
			t.Fatalf("ThreadMove() on cgroup v2 = %v, %v, true; want false", into, home)
		}
		return
	}
	if !ok {
		t.Fatalf("ThreadMove() on cgroup v1 as root = false (homes %q)", g.homes)
	}
	if !slices.Equal(into, g.dirs) || len(home) != len(into) {
		t.Fatalf("ThreadMove() = %q, %q; want the group's directories %q and as many homes", into, home, g.dirs)
	}
	sleep := testenv.NeedCommand(t, "sleep")

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadCgroups(t)

	// The process is in the group at once: no Add.
	cmd := exec.Command(sleep, "30")
	if err := StartIn(into, home, cmd.Start); err != nil {
		t.Fatalf("StartIn() error = %v", err)
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
