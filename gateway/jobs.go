package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/jobs"
	"github.com/cmdgate/cmdgate/policies"
)

// Background jobs: a command decided like /v1/exec that runs on after the request, in
// the job host (`cmdgate job host`, jobhost.go), a process started detached so that
// jobs outlive the gateway. The job's directory (package jobs) holds its state and its
// logs; the gateway reads them, and asks the host to start and to kill.

// Job defaults.
const (
	DefaultJobsPerPrincipal = 8
	DefaultJobRetention     = 7 * 24 * time.Hour
	DefaultJobLogCap        = 64 << 20
	// jobReadyTimeout bounds the wait for a job host to start, and for it to start a job.
	jobReadyTimeout = time.Minute
)

// JobOptions configures background jobs.
type JobOptions struct {
	// Disabled turns jobs off: every job call is UNAVAILABLE.
	Disabled bool
	// Root is the job root; default DataDir/jobs. (cmdgate serve gives the root
	// `cmdgate job` finds, jobs.ResolveRoot, so that both see the same jobs.)
	Root string
	// Program is the cmdgate binary that hosts jobs (`cmdgate job host`); default this
	// program. Config is the configuration file it reads ("": as the gateway found it,
	// CMDGATE_CONFIG).
	Program string
	Config  string
	// MaxPerPrincipal is how many jobs one principal may have running at once; default 8.
	MaxPerPrincipal int
	// Retention is how long finished jobs are kept before gc removes them; default 7 days.
	Retention time.Duration
	// MaxRunTime kills a job that runs longer; 0 means no limit. A job may ask for less.
	MaxRunTime time.Duration
	// LogCap caps each of a job's two logs, in bytes; default 64 MiB.
	LogCap int64
	// NoStartGC leaves the finished jobs past their retention where they are when the
	// Server starts (the running ones are still settled): for `cmdgate job` working
	// alone, whose gc removes them and answers which.
	NoStartGC bool
}

func (o JobOptions) withDefaults(dataDir string) (JobOptions, error) {
	if o.MaxPerPrincipal == 0 {
		o.MaxPerPrincipal = DefaultJobsPerPrincipal
	}
	if o.Retention == 0 {
		o.Retention = DefaultJobRetention
	}
	if o.LogCap == 0 {
		o.LogCap = DefaultJobLogCap
	}
	var errs []error
	if o.MaxPerPrincipal < 0 {
		errs = append(errs, fmt.Errorf("jobs.max_per_principal must be 1 or more"))
	}
	if o.Retention < 0 || o.MaxRunTime < 0 || o.LogCap < 0 {
		errs = append(errs, fmt.Errorf("jobs: retention, max_run_time and log_cap must not be negative"))
	}
	if o.Disabled {
		return o, errors.Join(errs...)
	}
	var err error
	if o.Root == "" && dataDir != "" {
		o.Root = filepath.Join(dataDir, "jobs")
	}
	if o.Root, err = filepath.Abs(o.Root); err != nil {
		errs = append(errs, fmt.Errorf("jobs.root: %w", err))
	}
	if o.Program == "" {
		if o.Program, err = os.Executable(); err != nil {
			errs = append(errs, fmt.Errorf("jobs: the cmdgate program that supervises jobs: %w", err))
		}
	}
	return o, errors.Join(errs...)
}

// JobRequest is a job to start: the command as for Exec (its Timeout is unused), and
// how long it may run (0: the configured maximum, if any).
type JobRequest struct {
	Request
	MaxRunTime time.Duration
}

// hostRequest and hostAnswer are the job host's protocol.
type hostRequest struct {
	Op     string `json:"op"`
	ID     string `json:"id"`
	Signal string `json:"signal,omitempty"`
}

type hostAnswer struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	// Retry says the host is stopping and took nothing: ask the next one.
	Retry bool `json:"retry,omitempty"`
}

// errHostStopping is a run a stopping host refuses.
var errHostStopping = errors.New("the job host is stopping: retry")

// JobError is a job call's failure as `cmdgate job` reports it (seed 003's codes),
// with the decision when a decision refused it.
type JobError struct {
	Code       string   `json:"code"`
	Message    string   `json:"message"`
	Decision   string   `json:"decision,omitempty"`
	DecisionID string   `json:"decision_id,omitempty"`
	ApprovalID string   `json:"approval_id,omitempty"`
	Reasons    []Reason `json:"reasons,omitempty"`
	JobID      string   `json:"job_id,omitempty"`
}

func (e *JobError) Error() string { return e.Code + ": " + e.Message }

// Job error codes beyond package jobs' own.
const (
	JobCodeDenied          = "denied"
	JobCodeApprovalPending = "approval_pending"
	JobCodeLaunchFailed    = "launch_failed"
	JobCodeInternal        = "internal_error"
)

// jobCodes are the job error codes (seed 003's).
var jobCodes = map[string]bool{
	jobs.CodeNotFound: true, jobs.CodeAmbiguous: true, jobs.CodeInvalidInput: true, jobs.CodeInvalidState: true,
	jobs.CodeIO: true, JobCodeDenied: true, JobCodeApprovalPending: true, JobCodeLaunchFailed: true, JobCodeInternal: true,
}

// AsJobError turns any error of a job call into a JobError.
func AsJobError(err error) *JobError {
	var je *JobError
	if errors.As(err, &je) {
		return je
	}
	var se *jobs.Error
	if errors.As(err, &se) {
		return &JobError{Code: se.Code, Message: se.Message}
	}
	e := AsError(err)
	if jobCodes[e.Code] { // a job's own failure, carried by an approval
		return &JobError{Code: e.Code, Message: e.Message, Decision: e.Decision, DecisionID: e.DecisionID,
			ApprovalID: e.ApprovalID, Reasons: e.Reasons}
	}
	out := &JobError{Code: JobCodeInternal, Message: e.Message, Decision: e.Decision, DecisionID: e.DecisionID,
		ApprovalID: e.ApprovalID, Reasons: e.Reasons}
	switch e.Code {
	case CodeInvalidArgument, CodeNotDirectory, CodeTooLarge:
		out.Code = jobs.CodeInvalidInput
	case CodeDenied, CodeForbidden, CodeUnauthenticated, CodeRateLimited:
		out.Code = JobCodeDenied
	case CodeApprovalPending:
		out.Code = JobCodeApprovalPending
	case CodeNotFound:
		out.Code = jobs.CodeNotFound
	case CodeConflict:
		out.Code = jobs.CodeInvalidState
	case CodeCommandNotFound:
		out.Code = JobCodeLaunchFailed
	}
	return out
}

// JobHTTPStatus is the HTTP status a job error answers with.
func JobHTTPStatus(code string) int {
	switch code {
	case jobs.CodeNotFound:
		return 404
	case jobs.CodeAmbiguous, jobs.CodeInvalidInput:
		return 400
	case JobCodeDenied:
		return 403
	case JobCodeApprovalPending:
		return 202
	case jobs.CodeInvalidState:
		return 409
	case JobCodeLaunchFailed:
		return 502
	}
	return 500
}

func (s *Server) jobsReady() error {
	if s.opts.Jobs.Disabled || s.jobStore == nil {
		return &JobError{Code: JobCodeInternal, Message: "background jobs are disabled on this gateway (jobs.enabled: false)"}
	}
	return nil
}

// OpenJobs returns a Server that answers only the job calls that read (status, tail,
// wait, list), from opts.Jobs.Root, without the policy, the sandbox or the audit log:
// `cmdgate job` without a gateway reads so, quickly. Every other call of it fails.
func OpenJobs(opts Options) (*Server, error) {
	if opts.DataDir == "" {
		opts.DataDir = os.TempDir() // unused: only the job root is read
	}
	o, err := opts.Jobs.withDefaults(opts.DataDir)
	if err != nil {
		return nil, err
	}
	opts.Jobs = o
	s := &Server{opts: opts, log: slog.New(slog.DiscardHandler)}
	if opts.Logger != nil {
		s.log = opts.Logger
	}
	if !o.Disabled {
		s.jobStore = &jobs.Store{Root: o.Root}
	}
	return s, nil
}

// writable refuses the job calls that change something on a Server made by OpenJobs.
func (s *Server) writable() error {
	if s.store == nil {
		return &JobError{Code: JobCodeInternal, Message: "this call needs the whole gateway (its policy, sandbox and audit log)"}
	}
	return nil
}

// JobRoot is the job root, "" when jobs are disabled.
func (s *Server) JobRoot() string {
	if s.jobStore == nil {
		return ""
	}
	return s.jobStore.Root
}

// canSee says whether caller may see job j: its own principal, auditors and admins.
func canSee(caller Caller, j *jobs.Job) bool {
	return caller.Role == RoleAdmin || caller.Role == RoleAuditor || j.Principal == caller.Name
}

// canControl says whether caller may kill or remove job j: its own principal, admins.
func canControl(caller Caller, j *jobs.Job) bool {
	return caller.Role == RoleAdmin || (caller.Role == RoleAgent && j.Principal == caller.Name)
}

// StartJob decides a job like Exec decides a command and starts it: deny answers at
// once (JobError denied, with the reasons); ask holds it as a pending approval that
// starts the job once approved (approval_pending, or the job when the request waited
// for the approval); allow starts it. The decision record is durable before the
// supervisor starts; the job is returned once its command started.
func (s *Server) StartJob(ctx context.Context, caller Caller, req *JobRequest) (*Outcome, *jobs.Job, error) {
	if err := errors.Join(s.jobsReady(), s.writable()); err != nil {
		return nil, nil, err
	}
	if caller.Role != RoleAgent && caller.Role != RoleAdmin {
		return nil, nil, &JobError{Code: JobCodeDenied, Message: "only an agent (or admin) token starts jobs"}
	}
	if req.MaxRunTime < 0 {
		return nil, nil, &JobError{Code: jobs.CodeInvalidInput, Message: "timeout must not be negative"}
	}
	if err := s.jobRoom(caller.Name); err != nil {
		return nil, nil, err
	}
	caller.Endpoint = "job"
	d, err := s.decide(ctx, caller, &req.Request, true)
	if err != nil {
		if d == nil {
			return nil, nil, AsJobError(err)
		}
		return d.outcome(), nil, AsJobError(err)
	}
	o := d.outcome()
	switch d.decision.Action {
	case policies.ActionAllow:
		j, err := s.launchJob(ctx, caller, d, s.maxRunTime(req.MaxRunTime))
		return o, j, err
	case policies.ActionAsk:
		if s.opts.Approvals.Disabled {
			return o, nil, &JobError{Code: JobCodeDenied, Decision: d.decision.Action, DecisionID: d.record.ID, Reasons: d.reasons,
				Message: "this command needs a human approval, and approvals are not enabled on this gateway: " + reasonSummary(d.reasons)}
		}
		return s.jobApproval(ctx, caller, d, o, s.maxRunTime(req.MaxRunTime))
	}
	return o, nil, &JobError{Code: JobCodeDenied, Decision: d.decision.Action, DecisionID: d.record.ID, Reasons: d.reasons,
		Message: "the policy denied this command: " + reasonSummary(d.reasons)}
}

// maxRunTime is how long a job may run: what it asked, within the configured maximum.
func (s *Server) maxRunTime(asked time.Duration) time.Duration {
	limit := s.opts.Jobs.MaxRunTime
	switch {
	case asked == 0:
		return limit
	case limit == 0:
		return asked
	}
	return min(asked, limit)
}

// jobApproval holds a job the policy answered ask for; approved, the approval starts it.
func (s *Server) jobApproval(ctx context.Context, caller Caller, d *decided, o *Outcome, maxRun time.Duration) (*Outcome, *jobs.Job, error) {
	a, err := s.askApproval(ctx, caller, d, func(h *HeldRequest) { h.Job, h.MaxRunTimeMS = true, maxRun.Milliseconds() })
	if err != nil {
		return o, nil, AsJobError(err)
	}
	if caller.OnPending != nil {
		caller.OnPending(a)
	}
	if d.req.Wait > 0 {
		if a, err = s.waitApproval(ctx, a.ID, min(d.req.Wait, s.opts.Approvals.Wait)); err != nil {
			return o, nil, AsJobError(err)
		}
	}
	if a.State == ApprovalCompleted && a.JobID != "" {
		j, err := s.jobStore.Get(a.JobID)
		if err != nil {
			return o, nil, err
		}
		o.Decision, o.DecisionID = policies.ActionAllow, a.RunDecisionID
		return o, j, nil
	}
	_, err = ApprovalOutcome(a)
	je := AsJobError(err)
	if a.State == ApprovalPending || a.State == ApprovalRunning {
		je.Code = JobCodeApprovalPending
	}
	return o, nil, je
}

// jobRoom refuses a principal that has as many jobs running as it may.
func (s *Server) jobRoom(principal string) error {
	running, err := s.jobStore.Running()
	if err != nil {
		return err
	}
	n := 0
	for _, j := range running {
		if j.Principal == principal {
			n++
		}
	}
	if n >= s.opts.Jobs.MaxPerPrincipal {
		return &JobError{Code: JobCodeDenied, Message: fmt.Sprintf("%d jobs of %s are running, as many as one principal may run at once (jobs.max_per_principal): wait for one to end or kill one", n, principal)}
	}
	return nil
}

// launchJob creates the job of an allowed decision and hands it to the job host, which
// answers once the command started (or why it could not).
func (s *Server) launchJob(ctx context.Context, caller Caller, d *decided, maxRun time.Duration) (*jobs.Job, error) {
	if !s.startRun() {
		return nil, &JobError{Code: JobCodeInternal, DecisionID: d.record.ID, Message: "the gateway is shutting down: the job was not started"}
	}
	defer s.endRun()
	now := time.Now().UTC()
	j := &jobs.Job{
		ID: jobs.NewID(now), State: jobs.Running, Principal: caller.Name, Role: string(caller.Role),
		Command: d.req.Script, Argv: d.req.Argv, Cwd: d.cwd, Task: d.req.Task, ShellMode: string(d.req.ShellMode),
		Network: d.decision.Sandbox.Network, MaxRunTimeMS: maxRun.Milliseconds(),
		DecisionID: d.record.ID, RequestID: caller.RequestID, Source: caller.Source, StartedAt: now,
	}
	// Counting the principal's jobs and creating this one is one step for every process
	// on this root.
	if err := os.MkdirAll(s.jobStore.Root, 0o700); err != nil {
		return nil, &JobError{Code: jobs.CodeIO, Message: "cannot create the job root " + s.jobStore.Root + ": " + err.Error()}
	}
	unlock, err := lockFile(filepath.Join(s.jobStore.Root, ".lock"))
	if err != nil {
		return nil, &JobError{Code: jobs.CodeIO, Message: err.Error()}
	}
	err = s.jobRoom(caller.Name)
	if err == nil {
		if err = s.jobStore.Create(j); err == nil {
			err = s.jobStore.Mark(j.ID)
		}
	}
	unlock()
	if err != nil {
		je := AsJobError(err)
		je.DecisionID = d.record.ID
		s.recordJob(caller, "not_started", j, map[string]any{"error": je.Message})
		return nil, je
	}
	if err := s.hostRun(ctx, j.ID); err != nil {
		now := time.Now().UTC()
		j.State, j.Reason, j.FinishedAt = jobs.Failed, err.Error(), &now
		s.jobStore.Save(j)
		s.jobStore.Unmark(j.ID)
		s.recordJob(caller, "not_started", j, map[string]any{"error": err.Error()})
		return nil, &JobError{Code: JobCodeLaunchFailed, DecisionID: d.record.ID, JobID: j.ID, Message: err.Error()}
	}
	return s.jobStore.Get(j.ID)
}

// recordJob appends a job record (start failures, kills, gc) to the audit log.
func (s *Server) recordJob(who Caller, event string, j *jobs.Job, extra map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	detail := map[string]any{"event": event, "sandbox": s.sandbox}
	decisionID := ""
	if j != nil {
		detail["job_id"] = j.ID
		decisionID = j.DecisionID
	}
	if who.Source != "" {
		detail["source"] = who.Source
	}
	for k, v := range extra {
		detail[k] = v
	}
	b, _ := json.Marshal(detail)
	_, err := s.append(ctx, audit.Record{Kind: audit.KindJob, Principal: audit.Principal{Name: who.Name, Role: string(who.Role)},
		RequestID: who.RequestID, DecisionID: decisionID, Decision: event, Detail: b})
	if err != nil {
		who.log().Error("cannot record a job event", "event", event, "error", err.Error())
	}
	return err
}

// Job returns one job by id or unique prefix. A job the caller may not see does not
// exist for it.
func (s *Server) Job(_ context.Context, caller Caller, id string) (*jobs.Job, error) {
	if err := s.jobsReady(); err != nil {
		return nil, err
	}
	return s.jobStore.Resolve(id, func(j *jobs.Job) bool { return canSee(caller, j) })
}

// Jobs lists the jobs the caller may see, newest first (see jobs.Store.List).
func (s *Server) Jobs(_ context.Context, caller Caller, limit int, state string) (*jobs.Listing, error) {
	if err := s.jobsReady(); err != nil {
		return nil, err
	}
	return s.jobStore.List(limit, state, func(j *jobs.Job) bool { return canSee(caller, j) })
}

// JobTail is the end of both logs of a job.
type JobTail struct {
	Job    *jobs.Job
	Stdout jobs.Tail
	Stderr jobs.Tail
}

// TailJob reads the end of a job's logs: at most maxBytes and lines lines of each.
func (s *Server) TailJob(ctx context.Context, caller Caller, id string, maxBytes int64, lines int) (*JobTail, error) {
	j, err := s.Job(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	return s.tail(j, maxBytes, lines)
}

func (s *Server) tail(j *jobs.Job, maxBytes int64, lines int) (*JobTail, error) {
	t := &JobTail{Job: j}
	var err error
	dir := s.jobStore.Dir(j.ID)
	if t.Stdout, err = jobs.ReadTail(filepath.Join(dir, jobs.StdoutFile), maxBytes, lines); err != nil {
		return nil, err
	}
	if t.Stderr, err = jobs.ReadTail(filepath.Join(dir, jobs.StderrFile), maxBytes, lines); err != nil {
		return nil, err
	}
	// Past the cap the log stops growing, but the supervisor goes on counting.
	t.Stdout.ObservedBytes = max(t.Stdout.ObservedBytes, j.StdoutObservedBytes)
	t.Stderr.ObservedBytes = max(t.Stderr.ObservedBytes, j.StderrObservedBytes)
	return t, nil
}

// Snapshot is the job and the end of its logs after waiting up to wait for it to end,
// as `cmdgate job run` answers.
func (s *Server) Snapshot(ctx context.Context, caller Caller, j *jobs.Job, wait time.Duration, maxBytes int64) (*JobTail, error) {
	if wait > 0 && !j.Finished() {
		w, _, err := s.WaitJob(ctx, caller, j.ID, wait)
		if err != nil {
			return nil, err
		}
		j = w
	}
	return s.tail(j, maxBytes, 0)
}

// jobPoll is how often a waiter looks at a job it was not told about.
var jobPoll = [...]time.Duration{10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond}

// WaitJob waits until the job ends, ctx ends or timeout passes, and reports the job and
// whether it ended. The job host answers the moment the job ends; the job's metadata
// is read again now and then too (a host of another configuration may run it).
func (s *Server) WaitJob(ctx context.Context, caller Caller, id string, timeout time.Duration) (*jobs.Job, bool, error) {
	j, err := s.Job(ctx, caller, id)
	if err != nil {
		return nil, false, err
	}
	if j.Finished() {
		return j, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ended := make(chan struct{})
	key, jobID := s.jobHostKey(j), j.ID // j is read again below
	go func() {
		defer close(ended)
		s.hostCall(ctx, key, hostRequest{Op: "wait", ID: jobID}, false)
	}()
	for i := 0; !j.Finished(); i++ {
		poll := time.NewTimer(jobPoll[min(i, len(jobPoll)-1)])
		select {
		case <-ended:
			ended = nil // answered (or no host): poll from now on
		case <-poll.C:
		case <-ctx.Done():
			poll.Stop()
			if j, err = s.jobStore.Get(j.ID); err != nil {
				return nil, false, err
			}
			return j, j.Finished(), nil
		}
		poll.Stop()
		if j, err = s.jobStore.Get(j.ID); err != nil {
			return nil, false, err
		}
	}
	return j, true, nil
}

// KillJob stops a running job's whole tree: TERM (then KILL once the grace has
// passed), INT (likewise) or KILL at once; any other signal name is KILL. The kill is
// recorded, then passed on to the job host; KillJob returns once the job ended, or after
// the grace and a margin with the job as it then stands.
func (s *Server) KillJob(ctx context.Context, caller Caller, id, signal string) (*jobs.Job, string, error) {
	j, err := s.Job(ctx, caller, id)
	if err != nil {
		return nil, "", err
	}
	sig := jobs.NormalizeSignal(signal)
	if err := s.writable(); err != nil {
		return nil, sig, err
	}
	if !canControl(caller, j) {
		return nil, "", &JobError{Code: JobCodeDenied, Message: "only the job's own agent or an admin may kill it"}
	}
	if j.Finished() {
		return j, sig, &JobError{Code: jobs.CodeInvalidState, JobID: j.ID, Message: "job " + j.ID + " is not running: it is " + j.State}
	}
	if err := s.recordJob(caller, "kill", j, map[string]any{"signal": sig, "asked": Truncate(signal, 64), "job_principal": j.Principal}); err != nil {
		return nil, sig, &JobError{Code: JobCodeInternal, JobID: j.ID, Message: "the audit log cannot record the kill, so the job was not signalled: retry later"}
	}
	if err := s.jobStore.WriteKill(j.ID, jobs.KillRequest{Signal: sig, By: caller.Name, At: time.Now().UTC()}); err != nil {
		return nil, sig, err
	}
	ans, err := s.hostCall(ctx, s.jobHostKey(j), hostRequest{Op: "kill", ID: j.ID, Signal: sig}, false)
	if err == nil && !ans.OK {
		err = errors.New(ans.Message)
	}
	if err != nil {
		// Gone meanwhile: it ended, or was lost (and is failed now).
		if j2, gerr := s.jobStore.Get(j.ID); gerr == nil && j2.Finished() {
			return j2, sig, nil
		}
		return nil, sig, &JobError{Code: JobCodeInternal, JobID: j.ID, Message: "the job's host did not take the kill: " + err.Error()}
	}
	wait := s.opts.Executor.Grace() + 5*time.Second
	j, done, err := s.WaitJob(context.WithoutCancel(ctx), caller, j.ID, wait)
	if err == nil && !done {
		return nil, sig, &JobError{Code: JobCodeInternal, JobID: j.ID, Message: fmt.Sprintf("the job still runs %v after its host took the kill", wait)}
	}
	return j, sig, err
}

// jobHostKey is the key of the host that runs job j: the one it names, else this
// configuration's (a job not taken yet).
func (s *Server) jobHostKey(j *jobs.Job) string {
	if j.Host == "" {
		return s.hostKey()
	}
	return j.Host
}

// GCJobs removes the finished jobs the caller may control that finished longer than
// olderThan ago (0: the configured retention), and records what it removed.
func (s *Server) GCJobs(_ context.Context, caller Caller, olderThan time.Duration) ([]string, time.Duration, error) {
	if err := errors.Join(s.jobsReady(), s.writable()); err != nil {
		return nil, 0, err
	}
	if caller.Role != RoleAgent && caller.Role != RoleAdmin {
		return nil, 0, &JobError{Code: JobCodeDenied, Message: "only an agent (its own jobs) or an admin removes jobs"}
	}
	if olderThan <= 0 {
		olderThan = s.opts.Jobs.Retention
	}
	removed, err := s.jobStore.GC(time.Now().Add(-olderThan), func(j *jobs.Job) bool { return canControl(caller, j) })
	if len(removed) > 0 {
		s.recordJob(caller, "gc", nil, map[string]any{"removed": removed, "older_than_s": int64(olderThan.Seconds())})
	}
	return removed, olderThan, err
}

// settleJobs, at start, marks failed the jobs whose supervisor is gone, and removes the
// jobs past their retention.
func (s *Server) settleJobs() {
	if s.jobStore == nil {
		return
	}
	if _, err := s.jobStore.Running(); err != nil {
		s.log.Warn("jobs: cannot settle the running jobs", "error", err.Error())
	}
	if s.opts.Jobs.NoStartGC {
		return
	}
	removed, err := s.jobStore.GC(time.Now().Add(-s.opts.Jobs.Retention), nil)
	if err != nil {
		s.log.Warn("jobs: gc", "error", err.Error())
	}
	if len(removed) > 0 {
		s.recordJob(Caller{Name: "cmdgate", Role: RoleAdmin}, "gc", nil, map[string]any{"removed": removed, "older_than_s": int64(s.opts.Jobs.Retention.Seconds())})
	}
}

// jobDetail is the end of a job for its execution record.
func jobDetail(j *jobs.Job, sandbox string) json.RawMessage {
	d := map[string]any{"endpoint": "job", "job_id": j.ID, "state": j.State, "sandbox": sandbox,
		"stdout_observed_bytes": j.StdoutObservedBytes, "stderr_observed_bytes": j.StderrObservedBytes}
	if j.Signal != "" {
		d["signal"] = j.Signal
	}
	if j.KilledBy != "" {
		d["killed_by"] = j.KilledBy
	}
	var capped []string
	if j.StdoutCapped {
		capped = append(capped, "stdout")
	}
	if j.StderrCapped {
		capped = append(capped, "stderr")
	}
	if capped != nil {
		d["capped"] = capped
	}
	if j.Source != "" {
		d["source"] = j.Source
	}
	b, _ := json.Marshal(d)
	return b
}
