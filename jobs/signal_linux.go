package jobs

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

func signalPID(j *Job, sig syscall.Signal) error {
	if j.PID <= 0 {
		return errors.New("the job has no supervisor yet")
	}
	fd, err := unix.PidfdOpen(j.PID, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// The pidfd names this process whatever happens to the pid now: check it is still
	// the job's supervisor, then signal through it.
	if !Alive(j) {
		return errors.New("the job's supervisor is gone")
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}
