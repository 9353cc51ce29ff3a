package cgroup

import "errors"

var (
	// ErrInvalidName is returned by Manager.New for a group name that is empty, "." or
	// "..", longer than 255 bytes, or holds a "/" or a NUL byte.
	ErrInvalidName = errors.New("invalid cgroup name")

	// ErrInvalidLimits is returned by Manager.New for a negative or non-finite limit.
	ErrInvalidLimits = errors.New("invalid cgroup limits")

	// ErrUnavailable is returned by Manager.New when Detect found no usable controller.
	ErrUnavailable = errors.New("no usable cgroup controller")
)
