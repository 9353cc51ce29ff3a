//go:build !linux

package proc

import (
	"errors"

	"github.com/cmdgate/cmdgate/executor"
)

// SetRlimits is not possible here: only Linux sets the limits of another process
// (prlimit(2)). It returns errors.ErrUnsupported.
func SetRlimits(pid int, lims []executor.Rlimit) error {
	return errors.ErrUnsupported
}
