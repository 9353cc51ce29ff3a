package jobs

import "errors"

// SignalSupervisor is not supported on Windows yet: jobs need a Unix supervisor.
func SignalSupervisor(j *Job, sig string) error { return errors.ErrUnsupported }
