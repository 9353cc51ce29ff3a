//go:build unix

package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/jobs"
)

// The job host: the process (`cmdgate job host`) that runs background jobs, in the
// sandbox of the gateway that decided them, writing their output to the jobs' logs and
// their state to job.json, and appending each job's end to the audit log. It decides
// nothing: every job's decision was recorded before the job reached it.
//
// It runs detached (a session of its own) so that jobs outlive the gateway, and serves
// every gateway and `cmdgate job` of the same job root and configuration over a unix
// socket in the root (jobs.HostSocket): one process keeps a warm sandbox pool and an
// open audit store for all of them, so a job starts as fast as a command does. It holds
// each running job's lock (jobs.Store.Hold), which is how anyone sees that a job is
// alive; once it has run nothing for HostIdle, or its jobs have ended after the gateway
// closed, it exits, and the next job starts a new one.
//
// The protocol is one JSON request and one JSON answer per connection:
// {"op":"run","id":ID} answers once the command started (or why it could not);
// {"op":"kill","id":ID,"signal":"TERM"} once the stop was passed on; {"op":"wait","id":ID}
// once the job ended (or at once when the host does not run it); {"op":"idle"} stops
// the host when it runs no job, or once its jobs have ended unless another is started
// meanwhile (a gateway that closes asks so).

// HostIdle is how long a job host with no job waits for one before it exits.
var HostIdle = 5 * time.Minute

// errJobTerm is the cause of a job stopped with TERM.
var errJobTerm = errors.New("terminated")

// observedEvery is how often a running job's observed byte counts are stored.
const observedEvery = time.Second

// jobHost is the state of a running host.
type jobHost struct {
	opts   Options
	store  *jobs.Store
	key    string // the host's key (jobs.HostKey)
	audit  *audit.Store
	runner executor.Executor
	tasks  *hostTasks // nil when tasks are off
	log    *slog.Logger

	mu      sync.Mutex
	running map[string]*hostJob
	ln      net.Listener
	idle    *time.Timer
	closing bool
	leave   bool // a closing gateway asked the host to go once it runs nothing
	wg      sync.WaitGroup
}

// hostJob is one job the host runs.
type hostJob struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// RunJobHost serves as the job host of root for the gateway configuration opts (its
// Sandbox the backend the gateway used, linux or process) until it has been idle for
// HostIdle or ctx ends (then it stops its jobs as a shutdown does). ready, when not
// nil, receives one JSON line once the host listens ({"ok":true}) or why it cannot,
// and is closed. Another host already serving the same socket is not an error: this
// one reports ready and exits.
func RunJobHost(ctx context.Context, opts Options, root, key string, ready *os.File) error {
	var reportOnce sync.Once
	report := func(err error) {
		reportOnce.Do(func() {
			if ready == nil {
				return
			}
			b, _ := json.Marshal(hostAnswer{OK: err == nil, Message: errString(err)})
			ready.Write(append(b, '\n'))
			ready.Close()
		})
	}
	fail := func(err error) error { report(err); return err }
	defer report(errors.New("the job host stopped before it served"))

	opts, err := opts.withDefaults()
	if err != nil {
		return fail(fmt.Errorf("gateway options: %w", err))
	}
	store := &jobs.Store{Root: root}
	sock, lock := store.HostPaths(key)
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return fail(fmt.Errorf("job host: %w", err))
	}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(sock), filepath.Base(lock)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		defer logf.Close()
		opts.Logger = slog.New(slog.NewTextHandler(logf, nil))
	}
	unlock, held, err := jobs.TryLock(lock)
	if err != nil {
		return fail(fmt.Errorf("job host: %w", err))
	}
	if !held { // another host serves this root and configuration
		report(nil)
		return nil
	}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(unlock) } // the socket's and the lock's, for a successor
	defer release()

	h := &jobHost{opts: opts, store: store, key: key, log: opts.Logger, running: map[string]*hostJob{}}
	s := &Server{opts: opts, log: opts.Logger}
	if s.ws, err = NewWorkspace(opts.Workspace); err != nil {
		return fail(fmt.Errorf("workspace %s: %w", opts.Workspace, err))
	}
	if err := s.prepareCaches(); err != nil {
		return fail(err)
	}
	if h.runner, err = jobRunner(ctx, s.opts, s.ws.Root()); err != nil {
		return fail(err)
	}
	defer closeRunner(h.runner)
	if h.tasks, err = openHostTasks(ctx, opts); err != nil {
		return fail(err)
	}
	defer h.tasks.close()
	if h.audit, err = audit.Open(ctx, opts.DataDir, opts.Audit); err != nil {
		return fail(fmt.Errorf("audit log: %w", err))
	}
	defer h.audit.Close(context.Background())

	os.Remove(sock) // a socket left by a host that died: the lock says none serves it
	ln, err := unixSocket(sock, func(addr string) (net.Conn, net.Listener, error) {
		ln, err := net.Listen("unix", addr)
		return nil, ln, err
	})
	if err != nil {
		return fail(fmt.Errorf("job host: listen on %s: %w", sock, err))
	}
	// closed gives the socket and the lock up, once: a successor may have them next.
	var closeOnce sync.Once
	closed := func() {
		closeOnce.Do(func() {
			os.Remove(sock)
			release()
		})
	}
	defer closed()
	report(nil)

	// SIGTERM or SIGINT stops the host: its jobs are killed (TERM, then KILL) and
	// recorded. A job's own kill comes through the socket.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	h.ln = ln
	h.idle = time.AfterFunc(HostIdle, func() { h.stopIfIdle() })
	context.AfterFunc(ctx, func() { ln.Close() })

	var conns sync.WaitGroup
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			h.serve(conn)
		}()
	}
	// No new connection from here on: a successor may take the socket and the lock
	// while this host finishes what it accepted (a run it now answers with retry).
	h.mu.Lock()
	h.closing = true
	if ctx.Err() != nil {
		for _, j := range h.running {
			j.cancel(ErrShutdown)
		}
	}
	h.mu.Unlock()
	closed()
	h.wg.Wait()
	conns.Wait()
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// stopIfIdle closes the listener when no job runs: the host then exits.
func (h *jobHost) stopIfIdle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopIfIdleLocked()
}

func (h *jobHost) stopIfIdleLocked() bool {
	if len(h.running) == 0 && !h.closing {
		h.closing = true
		h.ln.Close()
	}
	return h.closing
}

// leaveWhenIdle answers a closing gateway's idle request: the host stops now when it
// runs no job, else once its jobs have ended, unless a job is started meanwhile. A job
// killed just before its gateway closes may still be finishing (its end recorded, its
// sandbox taken down) when the request comes; the host then goes a moment later rather
// than after HostIdle.
func (h *jobHost) leaveWhenIdle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leave = true
	return h.stopIfIdleLocked()
}

// serve answers one connection's request.
func (h *jobHost) serve(conn net.Conn) {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return
	}
	conn.SetReadDeadline(time.Time{})
	var req hostRequest
	var ans hostAnswer
	switch {
	case json.Unmarshal(line, &req) == nil && req.Op == "idle":
		ans.OK = h.leaveWhenIdle()
	case req.Op == "" || !jobs.ValidID(req.ID):
		ans.Message = "bad request"
	default:
		switch req.Op {
		case "run":
			err = h.start(req.ID)
			ans = hostAnswer{OK: err == nil, Message: errString(err), Retry: errors.Is(err, errHostStopping)}
		case "kill":
			err = h.kill(req.ID, req.Signal)
			ans = hostAnswer{OK: err == nil, Message: errString(err)}
		case "wait":
			h.mu.Lock()
			j := h.running[req.ID]
			h.mu.Unlock()
			if j != nil {
				gone := make(chan struct{})
				go func() { // the waiter hung up: stop waiting
					var b [1]byte
					conn.Read(b[:])
					close(gone)
				}()
				select {
				case <-j.done:
				case <-gone:
					return
				}
			}
			ans.OK = true
		default:
			ans.Message = "unknown op"
		}
	}
	b, _ := json.Marshal(ans)
	conn.Write(append(b, '\n'))
}

// kill passes a kill on to a running job: TERM terminates its tree (then KILL once the
// grace passed), INT interrupts it, KILL kills it at once.
func (h *jobHost) kill(id, sig string) error {
	h.mu.Lock()
	j := h.running[id]
	h.mu.Unlock()
	if j == nil {
		return errors.New("this host does not run job " + id)
	}
	switch jobs.NormalizeSignal(sig) {
	case jobs.SigTerm:
		j.cancel(errJobTerm)
	case jobs.SigInt:
		j.cancel(executor.ErrInterrupt)
	default:
		j.cancel(executor.ErrKillNow)
	}
	return nil
}

// start takes a new job and runs it; it returns once the command started, or why it
// could not (the job is then failed).
func (h *jobHost) start(id string) error {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return errHostStopping
	}
	if h.running[id] != nil {
		h.mu.Unlock()
		return errors.New("job " + id + " runs already")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	hj := &hostJob{cancel: cancel, done: make(chan struct{})}
	h.running[id] = hj
	h.leave = false
	h.idle.Stop()
	h.wg.Add(1)
	h.mu.Unlock()

	started := make(chan error, 1)
	go func() {
		defer h.wg.Done()
		defer func() {
			h.mu.Lock()
			delete(h.running, id)
			if h.leave {
				h.stopIfIdleLocked()
			} else if len(h.running) == 0 && !h.closing {
				h.idle.Reset(HostIdle)
			}
			h.mu.Unlock()
			close(hj.done)
		}()
		h.run(ctx, id, started)
	}()
	return <-started
}

// run runs one job to its end. started receives nil once the command started, or the
// error that kept it from starting.
func (h *jobHost) run(ctx context.Context, id string, started chan<- error) {
	var once sync.Once
	report := func(err error) { once.Do(func() { started <- err }) }
	defer report(errors.New("the job ended before its command started"))

	store := h.store
	j, err := store.Get(id)
	if err != nil {
		report(err)
		return
	}
	if j.State != jobs.Running || j.PID != 0 {
		report(fmt.Errorf("job %s is %s, taken by %d: not a new job", id, j.State, j.PID))
		return
	}
	release, err := store.Hold(id)
	if err != nil {
		report(err)
		return
	}
	defer release()
	// Fail closed: nothing runs without the durable record of the decision that allowed
	// it, for this principal. A job directory made by anything but a gateway that
	// decided it has none.
	if err := h.allowed(j); err != nil {
		now := time.Now().UTC()
		j.State, j.Reason, j.FinishedAt, j.PID = jobs.Failed, err.Error(), &now, os.Getpid()
		store.Save(j)
		store.Unmark(id)
		report(err)
		return
	}
	fail := func(err error) {
		now := time.Now().UTC()
		j.State, j.Reason, j.FinishedAt, j.PID = jobs.Failed, err.Error(), &now, os.Getpid()
		store.Save(j)
		store.Unmark(id)
		report(err)
	}
	runner, err := h.jobRunnerFor(ctx, j)
	if err != nil {
		fail(err)
		return
	}
	dir := store.Dir(id)
	stdout, err := jobs.OpenLog(filepath.Join(dir, jobs.StdoutFile), h.opts.Jobs.LogCap)
	if err != nil {
		fail(err)
		return
	}
	stderr, err := jobs.OpenLog(filepath.Join(dir, jobs.StderrFile), h.opts.Jobs.LogCap)
	if err != nil {
		stdout.Close()
		fail(err)
		return
	}
	j.PID, j.Host = os.Getpid(), h.key
	if err := store.Update(j); err != nil {
		stdout.Close()
		stderr.Close()
		fail(err)
		return
	}

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
					store.Update(j)
				}
				mu.Unlock()
			}
		}
	}()

	timeout := noRunLimit
	if j.MaxRunTimeMS > 0 {
		timeout = time.Duration(j.MaxRunTimeMS) * time.Millisecond
	}
	begun := false
	res, runErr := runner.Run(ctx, executor.Spec{
		Argv: j.Argv, Script: j.Command, ShellMode: executor.ShellMode(j.ShellMode), Dir: j.Cwd,
		Timeout: timeout, MaxOutputChars: executor.MinOutputChars, Network: j.Network,
		Stdout: stdout, Stderr: stderr,
		OnStart: func() { begun = true; report(nil) },
	})
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
	cause := context.Cause(ctx)
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
		if errors.Is(cause, ErrShutdown) {
			j.KilledBy, j.Reason = "job_host", "the job host was stopped"
		} else if k, ok := store.ReadKill(id); ok {
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
	if !begun {
		report(errors.New(j.Reason))
	}

	// The end is in the audit log before job.json says the job ended: whoever waited
	// for the end finds its record.
	actx, acancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer acancel()
	_, aerr := h.audit.Append(actx, audit.Record{
		Kind: audit.KindExecution, Principal: audit.Principal{Name: j.Principal, Role: j.Role},
		RequestID: j.RequestID, DecisionID: j.DecisionID,
		Execution: &audit.Execution{
			ExitCode: res.ExitCode, DurationMS: res.DurationMS, TimedOut: res.TimedOut,
			StdoutTruncated: j.StdoutCapped, StderrTruncated: j.StderrCapped,
			StdoutBytes: j.StdoutObservedBytes, StderrBytes: j.StderrObservedBytes, Error: Truncate(j.Reason, 2000),
		},
		Detail: jobDetail(j, h.opts.Sandbox),
	})
	if aerr != nil {
		h.log.Error("cannot record the end of the job", "job_id", id, "error", aerr.Error())
	}
	// Not synced: the end's durable record is the audit log's (a crash that loses this
	// write leaves the job running without a host, which Settle then calls failed).
	if err := store.Update(j); err != nil {
		h.log.Error("cannot store the end of the job", "job_id", id, "error", err.Error())
	}
	store.Unmark(id)
}

// allowed checks that the audit log holds the decision that allowed job j: a decision
// record, allow, of the job's principal.
func (h *jobHost) allowed(j *jobs.Job) error {
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	r, err := h.audit.Get(ctx, j.DecisionID)
	if err != nil {
		return fmt.Errorf("not started: the audit log has no record of the decision %q that allowed it: %w", j.DecisionID, err)
	}
	if r.Kind != audit.KindDecision || r.Decision != "allow" || r.Principal.Name != j.Principal {
		return fmt.Errorf("not started: audit record %s is not a decision that allowed %s to run it", r.ID, j.Principal)
	}
	return nil
}

// jobRunner is the executor of a job host: the backend the gateway used, whose
// timeout may be a job's. The linux backend is proven by building one sandbox, which
// also starts its pool of sandboxes built ahead.
func jobRunner(ctx context.Context, opts Options, workspace string) (executor.Executor, error) {
	opts.Executor.MaxTimeout = noRunLimit
	switch opts.Sandbox {
	case SandboxProcess:
		return process.New(process.Options{Config: opts.Executor}), nil
	case SandboxLinux:
		e, _, err := newLinux(ctx, opts, workspace)
		if err != nil {
			return nil, fmt.Errorf("the linux sandbox: %w", err)
		}
		return e, nil
	case SandboxDocker:
		return taskOnly{}, nil // every job runs in a task's container (jobtask.go)
	}
	return nil, fmt.Errorf("a job host runs with the backend its gateway used, linux or process, not %q", opts.Sandbox)
}

// unixSocket listens on or dials a unix socket path (do gets the address to use): a
// path too long for a socket address is reached through its directory's descriptor.
func unixSocket(path string, do func(addr string) (net.Conn, net.Listener, error)) (net.Listener, error) {
	_, ln, err := unixSocketDo(path, do)
	return ln, err
}

func unixSocketDo(path string, do func(addr string) (net.Conn, net.Listener, error)) (net.Conn, net.Listener, error) {
	const maxAddr = 100 // sun_path holds 108 bytes on Linux, 104 elsewhere
	if len(path) <= maxAddr {
		return do(path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, nil, err
	}
	defer dir.Close()
	return do(fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)))
}
