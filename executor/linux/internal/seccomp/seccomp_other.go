//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// errUnsupported refuses: seccomp is a Linux facility.
var errUnsupported = fmt.Errorf("seccomp filters on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// SockFilter stands in for unix.SockFilter, which golang.org/x/sys/unix defines on
// Linux only.
type SockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

// Filter refuses.
func Filter() ([]SockFilter, error) { return nil, errUnsupported }

// Install refuses.
func Install(prog []SockFilter) error { return errUnsupported }

// Denied returns nil: no filter exists on this platform.
func Denied() []string { return nil }
