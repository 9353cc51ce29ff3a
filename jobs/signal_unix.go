//go:build unix

package jobs

import "syscall"

// SignalSupervisor passes a kill on to the job's supervisor: SIGTERM for TERM, SIGINT
// for INT, SIGUSR1 for KILL (the supervisor then kills the tree at once; SIGKILL would
// kill the supervisor before it records the end). On Linux the process is held by a
// pidfd and checked to be this job's supervisor before it is signalled, so a reused
// pid is never signalled.
func SignalSupervisor(j *Job, sig string) error {
	s := syscall.SIGUSR1
	switch sig {
	case SigTerm:
		s = syscall.SIGTERM
	case SigInt:
		s = syscall.SIGINT
	}
	return signalPID(j, s)
}
