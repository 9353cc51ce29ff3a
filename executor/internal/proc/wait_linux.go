package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// WaitExit blocks until the leader has exited, leaving it a zombie (WNOWAIT): its PID,
// and so the group ID, stays reserved until os.Process.Wait reaps it.
func (g *Group) WaitExit() error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, g.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for process %d: %w", g.pid, err)
		}
		return nil
	}
}
