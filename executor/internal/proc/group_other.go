//go:build !linux && !darwin && !windows

package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// errUnsupported refuses: on this platform the executor cannot stop a whole process
// tree, so it starts nothing.
var errUnsupported = fmt.Errorf("containing a process tree on this platform: %w", errors.ErrUnsupported)

// Supported reports that this platform cannot contain a process tree.
func Supported() error { return errUnsupported }

// SysProcAttr has nothing to set on this platform.
func SysProcAttr() *syscall.SysProcAttr { return nil }

// Group is not available on this platform; every method refuses.
type Group struct{}

// NewGroup refuses.
func NewGroup(pid int) (*Group, error) { return nil, errUnsupported }

// Terminate refuses.
func (g *Group) Terminate() error { return errUnsupported }

// Kill refuses.
func (g *Group) Kill() error { return errUnsupported }

// WaitExit refuses.
func (g *Group) WaitExit() error { return errUnsupported }

// WaitGone reports that nothing is known to be gone.
func (g *Group) WaitGone(timeout time.Duration) bool { return false }

// Close does nothing.
func (g *Group) Close() error { return nil }

// ExitCode is the process's exit code.
func ExitCode(state *os.ProcessState) int { return state.ExitCode() }
