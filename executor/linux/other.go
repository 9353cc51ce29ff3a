//go:build !linux

package linux

import (
	"context"
	"errors"

	"github.com/cmdgate/cmdgate/executor"
)

// Executor is the linux backend; elsewhere it cannot be built.
type Executor struct{}

var _ executor.Executor = (*Executor)(nil)

// New refuses: the sandbox needs Linux namespaces, Landlock and seccomp.
func New(Options) (*Executor, error) {
	return nil, errors.New("sandbox: the linux backend runs on Linux only")
}

// Run refuses.
func (*Executor) Run(context.Context, executor.Spec) (executor.Result, error) {
	return executor.Result{}, executor.Internal("run in sandbox", errors.ErrUnsupported)
}

// Probe refuses.
func (*Executor) Probe(context.Context) (Status, error) {
	return Status{}, errors.New("sandbox: the linux backend runs on Linux only")
}

// KeepToOneCPU does nothing.
func KeepToOneCPU() []int { return nil }

// Close does nothing.
func (*Executor) Close() error { return nil }

// Workspace is empty.
func (*Executor) Workspace() string { return "" }
