//go:build unix && !linux

package jobs

import (
	"errors"
	"os"
	"syscall"
)

func signalPID(j *Job, sig syscall.Signal) error {
	if j.PID <= 0 || !Alive(j) {
		return errors.New("the job's supervisor is gone")
	}
	p, err := os.FindProcess(j.PID)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}
