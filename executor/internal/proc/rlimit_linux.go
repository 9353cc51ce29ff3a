package proc

import (
	"errors"
	"fmt"

	"github.com/cmdgate/cmdgate/executor"
	"golang.org/x/sys/unix"
)

var rlimitResources = map[executor.RlimitResource]struct {
	res  int
	name string
}{
	executor.RlimitCore:      {unix.RLIMIT_CORE, "RLIMIT_CORE"},
	executor.RlimitFileSize:  {unix.RLIMIT_FSIZE, "RLIMIT_FSIZE"},
	executor.RlimitOpenFiles: {unix.RLIMIT_NOFILE, "RLIMIT_NOFILE"},
	executor.RlimitProcesses: {unix.RLIMIT_NPROC, "RLIMIT_NPROC"},
}

// SetRlimits applies lims to the running process pid with prlimit(2), each as soft and
// hard value, never above the process's current hard value. A process that has already
// exited is left alone.
func SetRlimits(pid int, lims []executor.Rlimit) error {
	for _, l := range lims {
		r, ok := rlimitResources[l.Resource]
		if !ok {
			return fmt.Errorf("unknown resource %d", l.Resource)
		}
		var old unix.Rlimit
		err := unix.Prlimit(pid, r.res, nil, &old)
		if err == nil {
			v := min(l.Value, old.Max)
			err = unix.Prlimit(pid, r.res, &unix.Rlimit{Cur: v, Max: v}, nil)
		}
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("set %s of process %d to %d: %w", r.name, pid, l.Value, err)
		}
	}
	return nil
}
