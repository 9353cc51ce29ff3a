//go:build unix

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/jobs"
)

// The supervisor: the process (`cmdgate job supervise`) that runs one job, in the
// sandbox of the gateway that decided it, writing its output to the job's logs and its
// state to job.json, and appending its end to the audit log. It decides nothing: the
// decision was recorded before it started. It reports on fd 3 (ready) once the command
// started, or why it could not, then runs on alone.

// noRunLimit is a job's timeout when it has no maximum run time.
const noRunLimit = 10 * 365 * 24 * time.Hour

// errJobTerm is the cause of a job stopped with TERM.
var errJobTerm = errors.New("terminated")

// observedEvery is how often a running job's observed byte counts are stored.
const observedEvery = time.Second

// Supervise runs job id of the job root to its end. opts are the gateway's (the
// configuration it was started with); Sandbox must name the backend the gateway used
// (linux or process). ready, when not nil, receives one JSON line,
// {"ok":true} once the command started or {"ok":false,"message":...}, and is closed.
func Supervise(ctx context.Context, opts Options, root, id string, ready *os.File) error {
	var reportOnce sync.Once
	report := func(err error) {
		reportOnce.Do(func() {
			if ready == nil {
				return
			}
			rep := map[string]any{"ok": err == nil}
			if err != nil {
				rep["message"] = err.Error()
			}
			b, _ := json.Marshal(rep)
			ready.Write(append(b, '\n'))
			ready.Close()
		})
	}
	defer report(errors.New("the supervisor stopped before the command started"))

	store := &jobs.Store{Root: root}
	j, err := store.Get(id)
	if err != nil {
		report(err)
		return err
	}
	if j.State != jobs.Running || j.PID != 0 {
		err := fmt.Errorf("job %s is %s, with supervisor %d: not a new job", id, j.State, j.PID)
		report(err)
		return err
	}
	dir := store.Dir(id)
	logf, err := os.OpenFile(filepath.Join(dir, jobs.SupervisorLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		defer logf.Close()
		opts.Logger = slog.New(slog.NewTextHandler(logf, nil))
	}
	// fail ends a job that could not start.
	fail := func(err error) error {
		now := time.Now().UTC()
		j.State, j.Reason, j.FinishedAt, j.PID = jobs.Failed, err.Error(), &now, os.Getpid()
		store.Save(j)
		store.Unmark(id)
		report(err)
		return err
	}

	if opts, err = opts.withDefaults(); err != nil {
		return fail(fmt.Errorf("gateway options: %w", err))
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: newMetrics()}
	if s.ws, err = NewWorkspace(opts.Workspace); err != nil {
		return fail(fmt.Errorf("workspace %s: %w", opts.Workspace, err))
	}
	if err := s.prepareCaches(); err != nil {
		return fail(err)
	}
	runner, err := jobRunner(s.opts, s.ws.Root())
	if err != nil {
		return fail(err)
	}
	defer closeRunner(runner)
	if s.store, err = audit.Open(ctx, opts.DataDir, opts.Audit); err != nil {
		return fail(fmt.Errorf("audit log: %w", err))
	}
	defer s.store.Close(context.Background())
	stdout, err := jobs.OpenLog(filepath.Join(dir, jobs.StdoutFile), opts.Jobs.LogCap)
	if err != nil {
		return fail(err)
	}
	stderr, err := jobs.OpenLog(filepath.Join(dir, jobs.StderrFile), opts.Jobs.LogCap)
	if err != nil {
		stdout.Close()
		return fail(err)
	}
	j.PID = os.Getpid()
	if err := store.Save(j); err != nil {
		return fail(err)
	}

	// A kill reaches the supervisor as a signal (jobs.SignalSupervisor).
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for sig := range sigs {
			switch sig {
			case syscall.SIGTERM:
				cancel(errJobTerm)
			case syscall.SIGINT:
				cancel(executor.ErrInterrupt)
			case syscall.SIGUSR1:
				cancel(executor.ErrKillNow)
			}
		}
	}()

	// The observed byte counts go on growing past the caps: store them now and then.
	var mu sync.Mutex // j
	stopTick := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(observedEvery)
		defer t.Stop()
		for {
			select {
			case <-stopTick:
				return
			case <-t.C:
				o1, c1 := stdout.Observed()
				o2, c2 := stderr.Observed()
				mu.Lock()
				if o1 != j.StdoutObservedBytes || o2 != j.StderrObservedBytes {
					j.StdoutObservedBytes, j.StdoutCapped, j.StderrObservedBytes, j.StderrCapped = o1, c1, o2, c2
					store.Save(j)
				}
				mu.Unlock()
			}
		}
	}()

	timeout := noRunLimit
	if j.MaxRunTimeMS > 0 {
		timeout = time.Duration(j.MaxRunTimeMS) * time.Millisecond
	}
	started := false
	spec := executor.Spec{
		Argv: j.Argv, Script: j.Command, ShellMode: executor.ShellMode(j.ShellMode), Dir: j.Cwd,
		Timeout: timeout, MaxOutputChars: executor.MinOutputChars, Network: j.Network,
		Stdout: stdout, Stderr: stderr,
		OnStart: func() { started = true; report(nil) },
	}
	res, runErr := runner.Run(runCtx, spec)
	close(stopTick)
	<-ticked
	stdout.Close()
	stderr.Close()

	mu.Lock()
	defer mu.Unlock()
	now := time.Now().UTC()
	j.FinishedAt, j.DurationMS = &now, res.DurationMS
	j.StdoutObservedBytes, j.StdoutCapped = stdout.Observed()
	j.StderrObservedBytes, j.StderrCapped = stderr.Observed()
	cause := context.Cause(runCtx)
	var xe *executor.Error
	switch {
	case runErr != nil && errors.As(runErr, &xe):
		j.State, j.Reason = jobs.Failed, xe.Error()
	case cause != nil:
		j.State, j.Signal = jobs.Killed, jobs.SigTerm
		switch {
		case errors.Is(cause, executor.ErrKillNow):
			j.Signal = jobs.SigKill
		case errors.Is(cause, executor.ErrInterrupt):
			j.Signal = jobs.SigInt
		}
		if k, ok := store.ReadKill(id); ok {
			j.KilledBy = k.By
		}
	case res.TimedOut:
		j.State, j.Signal, j.KilledBy = jobs.Killed, jobs.SigTerm, "max_run_time"
		j.Reason = fmt.Sprintf("it ran longer than its maximum run time, %v", timeout)
	case runErr != nil:
		j.State, j.Reason = jobs.Failed, runErr.Error()
	default:
		code := res.ExitCode
		j.State, j.ExitCode = jobs.Exited, &code
	}
	if !started {
		report(errors.New(j.Reason))
	}

	// The end is in the audit log before job.json says the job ended: whoever waited
	// for the end finds its record.
	errMsg := j.Reason
	actx, acancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer acancel()
	_, aerr := s.store.Append(actx, audit.Record{
		Kind: audit.KindExecution, Principal: audit.Principal{Name: j.Principal, Role: j.Role},
		RequestID: j.RequestID, DecisionID: j.DecisionID,
		Execution: &audit.Execution{
			ExitCode: res.ExitCode, DurationMS: res.DurationMS, TimedOut: res.TimedOut,
			StdoutTruncated: j.StdoutCapped, StderrTruncated: j.StderrCapped,
			StdoutBytes: j.StdoutObservedBytes, StderrBytes: j.StderrObservedBytes, Error: Truncate(errMsg, 2000),
		},
		Detail: jobDetail(j, s.opts.Sandbox),
	})
	if aerr != nil {
		opts.Logger.Error("cannot record the end of the job", "job_id", id, "error", aerr.Error())
	}
	if err := store.Save(j); err != nil {
		opts.Logger.Error("cannot store the end of the job", "job_id", id, "error", err.Error())
		return err
	}
	store.Unmark(id)
	return runErr
}

// jobRunner is the executor of a supervisor: the backend the gateway used, built for
// one command (no pool of sandboxes, no probe), whose timeout may be a job's.
func jobRunner(opts Options, workspace string) (executor.Executor, error) {
	cfg := opts.Executor
	cfg.MaxTimeout = noRunLimit
	switch opts.Sandbox {
	case SandboxProcess:
		return process.New(process.Options{Config: cfg}), nil
	case SandboxLinux:
		lo := opts.Linux
		lo.Workspace, lo.Config, lo.Logger, lo.Pool = workspace, cfg, opts.Logger, -1
		return linux.New(lo)
	}
	return nil, fmt.Errorf("a job's supervisor runs with the backend its gateway used, linux or process, not %q", opts.Sandbox)
}
