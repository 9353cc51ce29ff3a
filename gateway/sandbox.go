package gateway

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/process"
)

// SandboxStatus is what /healthz and the start-up log say of the sandbox: the backend in
// use, what it enforces, and warnings when it is weaker than the best.
type SandboxStatus struct {
	Backend string `json:"backend"`
	// Linux is the linux backend's protections and limits in force.
	Linux *linux.Status `json:"linux,omitempty"`
	// Caches are the workspace's tool caches (sandbox.caches).
	Caches *CachesStatus `json:"caches,omitempty"`
	// Warnings say what is not enforced, and why.
	Warnings []string `json:"warnings,omitempty"`
}

// CachesStatus says whether commands keep their tool caches between runs, and where.
type CachesStatus struct {
	Enabled bool `json:"enabled"`
	// Dir is the workspace's cache area; Home the HOME commands get inside it.
	Dir  string `json:"dir,omitempty"`
	Home string `json:"home,omitempty"`
}

// processWarning is the loud warning of the process backend.
const processWarning = "the process backend isolates neither the file system nor the network: the policy is the only boundary"

// probeTimeout bounds the start-up check of the linux sandbox.
const probeTimeout = 30 * time.Second

// newRunner chooses the executor backend: auto takes linux where the sandbox can be built
// here and process otherwise, with a warning; linux refuses to start where it cannot be
// honoured. Never a silent downgrade.
func newRunner(ctx context.Context, opts Options, workspace string) (executor.Executor, SandboxStatus, error) {
	if opts.Runner != nil {
		return opts.Runner, SandboxStatus{Backend: "custom"}, nil
	}
	switch opts.Sandbox {
	case SandboxProcess:
		opts.Logger.Warn("sandbox: " + processWarning)
		return process.New(process.Options{Config: opts.Executor}),
			SandboxStatus{Backend: SandboxProcess, Warnings: []string{processWarning}}, nil
	case SandboxAuto, SandboxLinux:
		e, st, err := newLinux(ctx, opts, workspace)
		if err == nil {
			var buildUS int64
			if st.Build != nil {
				buildUS = st.Build.TotalUS
			}
			opts.Logger.Info("sandbox: linux", "landlock_abi", st.Landlock, "rlimits", st.Rlimits,
				"cgroup", st.Cgroup, "cgroup_limits", st.Limits, "pool", st.Pool, "probe_build_us", buildUS)
			// /healthz says what is enforced; how long the probe took is for the log (and
			// each build's steps for the debug log, from the backend).
			st.Build = nil
			status := SandboxStatus{Backend: SandboxLinux, Linux: &st}
			for ctl, why := range st.Unavailable {
				w := fmt.Sprintf("cgroup controller %s unavailable: %s", ctl, why)
				if ctl == "network" {
					w = "no network for commands the policy grants it: " + why
				}
				status.Warnings = append(status.Warnings, w)
				opts.Logger.Warn("sandbox: " + w)
			}
			return e, status, nil
		}
		if opts.Sandbox == SandboxLinux {
			return nil, SandboxStatus{}, fmt.Errorf("sandbox linux cannot be honoured here: %w", err)
		}
		w := fmt.Sprintf("the linux sandbox is unavailable (%v): falling back to the process backend, which %s", err, processWarning[len("the process backend "):])
		opts.Logger.Warn("sandbox: " + w)
		return process.New(process.Options{Config: opts.Executor}),
			SandboxStatus{Backend: SandboxProcess, Warnings: []string{w}}, nil
	case SandboxDocker:
		// Every command runs in a task's container (tasks.go): nothing runs here.
		return taskOnly{}, SandboxStatus{Backend: SandboxDocker}, nil
	}
	return nil, SandboxStatus{}, fmt.Errorf("unknown sandbox %q (want auto, process, linux or docker)", opts.Sandbox)
}

// newLinux builds the linux backend and proves it by building one sandbox.
func newLinux(ctx context.Context, opts Options, workspace string) (*linux.Executor, linux.Status, error) {
	if runtime.GOOS != "linux" {
		return nil, linux.Status{}, fmt.Errorf("not Linux")
	}
	lo := opts.Linux
	lo.Workspace, lo.Config, lo.Logger = workspace, opts.Executor, opts.Logger
	e, err := linux.New(lo)
	if err != nil {
		return nil, linux.Status{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	st, err := e.Probe(ctx)
	if err != nil {
		e.Close()
		return nil, linux.Status{}, err
	}
	return e, st, nil
}

// taskOnly is the host runner of sandbox docker: commands run only in task containers,
// and a request that names no task is refused before it gets here.
type taskOnly struct{}

func (taskOnly) Run(context.Context, executor.Spec) (executor.Result, error) {
	return executor.Result{}, &executor.Error{Code: executor.CodeInvalidArgument,
		Message: "this gateway runs commands in task containers only: name a task"}
}
