//go:build linux || darwin

package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Supported reports whether this platform can contain a process tree: it can.
func Supported() error { return nil }

// SysProcAttr starts the command as the leader of a new session, hence of a new process
// group whose ID is its PID, and without a controlling terminal: a non-interactive
// command cannot read from or write to the gateway's terminal, and every process it
// starts stays in its group unless it leaves on purpose (setsid, job control).
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// Group is the process group of a started command.
type Group struct {
	pid int
}

// NewGroup takes control of the tree of the just-started leader pid.
func NewGroup(pid int) (*Group, error) {
	return &Group{pid: pid}, nil
}

// Terminate sends SIGTERM to every process of the group. Call it only while the leader
// is unreleased (running or a zombie): its PID is then still the group's ID and cannot
// name another group.
func (g *Group) Terminate() error { return g.signal(unix.SIGTERM) }

// Interrupt sends SIGINT to every process of the group, under the same condition as
// Terminate.
func (g *Group) Interrupt() error { return g.signal(unix.SIGINT) }

// Kill sends SIGKILL to every process of the group, under the same condition as
// Terminate. The kernel delivers a group signal atomically with respect to fork: no
// process of the group can start a child that misses it.
func (g *Group) Kill() error { return g.signal(unix.SIGKILL) }

func (g *Group) signal(sig unix.Signal) error {
	err := unix.Kill(-g.pid, sig)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("signal process group %d with %v: %w", g.pid, sig, err)
}

// WaitGone waits, for at most timeout, until no process of the group is alive, and
// reports whether none is. Call it after the leader has been reaped and the group
// killed: processes still exiting from SIGKILL take a moment to disappear. A zombie is
// not alive: orphans are reaped by init, or by nobody under a container's PID 1 that
// does not reap. It only probes (signal 0, then the process table), so a group ID reused
// meanwhile cannot be harmed, at worst waited for.
func (g *Group) WaitGone(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		if err := unix.Kill(-g.pid, 0); errors.Is(err, unix.ESRCH) {
			return true
		}
		if live, err := liveMembers(g.pid); err == nil && !live {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// Close releases the group's resources (none on Unix).
func (g *Group) Close() error { return nil }

// ExitCode is the shells' exit status of a finished process: its exit code, or 128+N
// when signal N ended it.
func ExitCode(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}
