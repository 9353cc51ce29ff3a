package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/internal/proc"
)

// Options configure an Executor. The zero value is the seed defaults on the platform
// shell.
type Options struct {
	// Config holds the limits, the environment denylist and the default resources.
	Config executor.Config
	// Shell replaces the platform shell of ShellDefault: the program and the arguments
	// that come before the script, e.g. {"/bin/bash", "-c"}. It must be a POSIX shell on
	// Unix and PowerShell on Windows (argv requests are quoted for it). Nil means the
	// platform shell, looked up in PATH at each run.
	Shell []string
}

// Executor is the portable backend: each command runs as a plain child process leading
// its own process tree. It is safe for concurrent use.
type Executor struct {
	cfg   executor.Config
	shell []string
}

var _ executor.Executor = (*Executor)(nil)

// New returns an Executor with opts.
func New(opts Options) *Executor {
	return &Executor{cfg: opts.Config, shell: slices.Clone(opts.Shell)}
}

// Run runs spec to completion; see the package documentation for the semantics.
func (e *Executor) Run(ctx context.Context, spec executor.Spec) (executor.Result, error) {
	spec, err := e.cfg.Prepare(spec)
	if err != nil {
		return executor.Result{}, err
	}
	if err := proc.Supported(); err != nil {
		return executor.Result{}, executor.Internal("start command", err)
	}
	if err := executor.CheckDir(spec.Dir); err != nil {
		return executor.Result{}, err
	}
	path, argv, err := e.command(spec)
	if err != nil {
		return executor.Result{}, err
	}
	env, err := e.cfg.Environ()
	if err != nil {
		return executor.Result{}, executor.Internal("environment", err)
	}
	if err := e.cfg.Caches.Prepare(); err != nil {
		return executor.Result{}, executor.Internal("tool caches", err)
	}
	if ctx.Err() != nil {
		return executor.Result{}, fmt.Errorf("run %s: not started: %w", argv[0], context.Cause(ctx))
	}
	return e.run(ctx, spec, path, argv, env)
}

// command returns the program to execute and its argv.
func (e *Executor) command(spec executor.Spec) (string, []string, error) {
	if spec.ShellMode == executor.ShellDirect {
		path, err := lookPath(spec.Argv[0], spec.Dir)
		if err != nil {
			return "", nil, &executor.Error{Code: executor.CodeCommandNotFound,
				Message: fmt.Sprintf("command %q not found", spec.Argv[0]), Err: err}
		}
		return path, spec.Argv, nil
	}
	sh := e.shell
	if sh == nil {
		var err error
		if sh, err = platformShell(); err != nil {
			return "", nil, executor.Internal("find the shell", err)
		}
	}
	path, err := exec.LookPath(sh[0])
	if err != nil {
		return "", nil, executor.Internal(fmt.Sprintf("find the shell %q", sh[0]), err)
	}
	script := spec.Script
	if script == "" {
		script = quote(spec.Argv)
	}
	return path, append(slices.Clip(sh), script), nil
}

// lookPath resolves a direct-mode command name: through PATH (and PATHEXT on Windows)
// when it is a bare name, against dir when it is a relative path, as is when absolute.
func lookPath(name, dir string) (string, error) {
	if !hasDir(name) {
		return exec.LookPath(name)
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	return exec.LookPath(name)
}

// echo is the Result's Command: the request as given.
func echo(spec executor.Spec) []string {
	if spec.Script != "" {
		return []string{spec.Script}
	}
	return slices.Clone(spec.Argv)
}

// run starts the command and sees it through.
func (e *Executor) run(ctx context.Context, spec executor.Spec, path string, argv, env []string) (executor.Result, error) {
	res := executor.Result{Cwd: spec.Dir, Command: echo(spec)}
	streams, err := executor.NewStreams(spec.Stdin != "")
	if err != nil {
		return executor.Result{}, executor.Internal("create pipes", err)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Dir:         spec.Dir,
		Stdout:      streams.ChildStdout(),
		Stderr:      streams.ChildStderr(),
		SysProcAttr: proc.SysProcAttr(),
	}
	if in := streams.ChildStdin(); in != nil {
		cmd.Stdin = in // else os/exec gives the command the null device
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		streams.Abort()
		return executor.Result{}, startError(err, spec)
	}

	group, err := proc.NewGroup(cmd.Process.Pid)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		streams.Abort()
		return executor.Result{}, executor.Internal("contain the command's process tree", err)
	}
	defer group.Close()
	// The limits are set on the running leader: see "Resource limits" in doc.go.
	if err := proc.SetRlimits(cmd.Process.Pid, spec.Resources.Rlimits()); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		group.Kill()
		cmd.Wait()
		group.WaitGone(e.cfg.Delay())
		streams.Abort()
		return executor.Result{}, executor.Internal("apply resource limits", err)
	}
	// Stdin starts flowing only now, after the limits are in place.
	streams.Started(spec.Stdin, spec.MaxOutputChars, spec.Keep, spec.Stdout, spec.Stderr)
	if spec.OnStart != nil {
		spec.OnStart()
	}

	wd := executor.Watch(ctx, group, spec.Timeout, e.cfg.Grace())
	waitErr := group.WaitExit()
	out := wd.Exited(streams.Drained())
	// The leader is released only now that the whole group has been killed.
	waitErr = errors.Join(waitErr, ignoreExit(cmd.Wait()))
	gone := group.WaitGone(e.cfg.Delay())

	// Every writer of the pipes is dead, unless a process left the group (setsid): its
	// output is not waited for beyond WaitDelay.
	streams.Finish(e.cfg.Delay(), &res)
	res.DurationMS = time.Since(start).Milliseconds()
	if cmd.ProcessState != nil {
		res.ExitCode = proc.ExitCode(cmd.ProcessState)
	}
	if out.TimedOut {
		res.TimedOut = true
		res.ExitCode = 124
	}

	errs := []error{waitErr, out.Err}
	if !gone {
		errs = append(errs, fmt.Errorf("processes of the command still run %v after it was killed", e.cfg.Delay()))
	}
	if err := errors.Join(errs...); err != nil {
		return res, executor.Internal("stop the command's processes", err)
	}
	if out.Cause != nil {
		return res, fmt.Errorf("run %s: stopped: %w", argv[0], out.Cause)
	}
	return res, nil
}

// ignoreExit drops the error that only reports a non-zero exit: that is a result.
func ignoreExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

// startError classifies a failure of exec.Cmd.Start.
func startError(err error, spec executor.Spec) error {
	notFound := errors.Is(err, fs.ErrNotExist)
	switch {
	case errors.Is(err, syscall.E2BIG):
		return &executor.Error{Code: executor.CodeInvalidArgument,
			Message: "command is too long for the operating system", Err: err}
	case notFound, errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrPermission):
		// The child reports a failed chdir and a failed exec alike: look again at the
		// directory, which may have gone since it was checked.
		if derr := executor.CheckDir(spec.Dir); derr != nil {
			return derr
		}
	}
	if spec.ShellMode != executor.ShellDirect {
		return executor.Internal("start the shell", err)
	}
	switch {
	case notFound:
		return &executor.Error{Code: executor.CodeCommandNotFound,
			Message: fmt.Sprintf("command %q not found", spec.Argv[0]), Err: err}
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return &executor.Error{Code: executor.CodeCommandNotFound,
			Message: fmt.Sprintf("command %q cannot be executed", spec.Argv[0]), Err: err}
	}
	return executor.Internal("start command", err)
}
