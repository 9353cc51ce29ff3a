package proc

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// WaitExit blocks until the leader has exited, leaving it a zombie: a kqueue NOTE_EXIT
// event reports the exit without reaping, so the PID, and the group ID, stays reserved
// until os.Process.Wait reaps it.
func (g *Group) WaitExit() error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("wait for process %d: kqueue: %w", g.pid, err)
	}
	defer unix.Close(kq)
	var change unix.Kevent_t
	unix.SetKevent(&change, g.pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change.Fflags = unix.NOTE_EXIT
	events := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, []unix.Kevent_t{change}, events, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ESRCH):
			return nil // already exited
		case err != nil:
			return fmt.Errorf("wait for process %d: %w", g.pid, err)
		case n == 1 && events[0].Flags&unix.EV_ERROR != 0:
			if errno := syscall.Errno(events[0].Data); errno != unix.ESRCH {
				return fmt.Errorf("wait for process %d: %w", g.pid, errno)
			}
			return nil // already exited
		case n == 1:
			return nil
		}
	}
}
