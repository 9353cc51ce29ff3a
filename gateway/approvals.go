package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/policies"
)

// Approvals: a request the policy answers ask for becomes a pending approval that
// holds it exactly (the script or argv, the resolved cwd, stdin, the limits, the
// parsed commands, the decision and its reasons). A person with the approver or admin
// role, never the requester, approves or denies it; approving runs the held request,
// once, under a decision record of its own; nobody deciding in time is a denial. Every
// step is an approval record in the audit chain, and approvals live in the state store
// (StateFile), so a restart keeps them.

// Approval states.
const (
	ApprovalPending   = "pending"
	ApprovalDenied    = "denied"
	ApprovalExpired   = "expired"
	ApprovalRunning   = "running"   // approved: the held request runs
	ApprovalCompleted = "completed" // approved and ran: Result is what it gave
	ApprovalFailed    = "failed"    // approved, but it could not run or finish: Error says why
)

// ScopeOnce approves the held request alone, once.
const ScopeOnce = "once"

// Defaults of ApprovalOptions.
const (
	DefaultApprovalExpiry = 15 * time.Minute
	DefaultApprovalWait   = 5 * time.Minute
)

// ApprovalOptions configure approvals.
type ApprovalOptions struct {
	// Disabled turns approvals off: ask is then refused at once (DENIED), as a deny is.
	Disabled bool
	// Expiry is how long an approval waits for a decision before it expires (a
	// denial); default 15 minutes.
	Expiry time.Duration
	// Wait is how long an MCP tool call waits for the decision (with progress
	// notifications), and the most a request's wait_ms may ask; default 5 minutes.
	Wait time.Duration
	// OnceOnly forbids grants: an approver may approve the held request alone.
	OnceOnly bool
	// GrantExpiry is a grant's lifetime when the approver gives none (default 8
	// hours); MaxGrantExpiry the longest one may ask (default 7 days).
	GrantExpiry    time.Duration
	MaxGrantExpiry time.Duration
}

// PersistentGrants reports whether approvers may make grants (scopes beyond once).
func (o ApprovalOptions) PersistentGrants() bool { return !o.OnceOnly }

func (o ApprovalOptions) withDefaults() (ApprovalOptions, error) {
	if o.Expiry == 0 {
		o.Expiry = DefaultApprovalExpiry
	}
	if o.Wait == 0 {
		o.Wait = DefaultApprovalWait
	}
	if o.GrantExpiry == 0 {
		o.GrantExpiry = DefaultGrantExpiry
	}
	if o.MaxGrantExpiry == 0 {
		o.MaxGrantExpiry = DefaultMaxGrantExpiry
	}
	if o.Expiry < 0 || o.Wait < 0 || o.GrantExpiry < 0 || o.MaxGrantExpiry < 0 {
		return o, errors.New("approvals: expiry, wait and grant expiries must not be negative")
	}
	if o.GrantExpiry > o.MaxGrantExpiry {
		return o, fmt.Errorf("approvals: grant_expiry %s is longer than max_grant_expiry %s", o.GrantExpiry, o.MaxGrantExpiry)
	}
	return o, nil
}

// Approval is one request that waits (or waited) for a human's decision.
type Approval struct {
	ID        string          `json:"id"`
	State     string          `json:"state"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	Principal audit.Principal `json:"principal"`
	// RequestID is the id of the request that asked.
	RequestID string      `json:"request_id"`
	Endpoint  string      `json:"endpoint"`
	Task      string      `json:"task"`
	Request   HeldRequest `json:"request"`
	// Commands are the parsed commands the policy decided on; AskCommands the indices
	// of those that caused the ask (empty when the request as a whole did).
	Commands    json.RawMessage `json:"commands"`
	AskCommands []int           `json:"ask_commands"`
	DecisionID  string          `json:"decision_id"`
	Revision    string          `json:"revision"`
	Reasons     []Reason        `json:"reasons"`

	DecidedBy *audit.Principal `json:"decided_by,omitempty"`
	DecidedAt *time.Time       `json:"decided_at,omitempty"`
	Comment   string           `json:"comment,omitempty"`
	Scope     string           `json:"scope,omitempty"`
	// GrantID names the grant the approver made with the approval, if any.
	GrantID string `json:"grant_id,omitempty"`
	// RunDecisionID is the decision record under which the approved request ran.
	RunDecisionID string `json:"run_decision_id,omitempty"`
	// JobID is the job an approved job request started.
	JobID  string           `json:"job_id,omitempty"`
	Result *executor.Result `json:"result,omitempty"`
	Error  *ApprovalError   `json:"error,omitempty"`
}

// HeldRequest is the request an approval holds, as it will run: the cwd resolved when
// it was decided, every limit filled in.
type HeldRequest struct {
	Command        string             `json:"command,omitempty"`
	Argv           []string           `json:"argv,omitempty"`
	Cwd            string             `json:"cwd"`
	ShellMode      executor.ShellMode `json:"shell_mode"`
	Stdin          string             `json:"stdin,omitempty"`
	TimeoutMS      int64              `json:"timeout_ms"`
	MaxOutputChars int                `json:"max_output_chars"`
	Network        bool               `json:"network"`
	// Job says the request starts a background job once approved, which may run for
	// MaxRunTimeMS (0: no limit).
	Job          bool  `json:"job,omitempty"`
	MaxRunTimeMS int64 `json:"max_run_time_ms,omitempty"`
}

// ApprovalError is why an approved request did not give a result.
type ApprovalError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// decided reports whether the approval reached a final state.
func (a *Approval) decided() bool { return a.State != ApprovalPending && a.State != ApprovalRunning }

// approvalWaiters wakes the callers waiting on an approval when its state changes.
type approvalWaiters struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

// changed returns a channel closed at the approval's next change.
func (w *approvalWaiters) changed(id string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = map[string]chan struct{}{}
	}
	c, ok := w.ch[id]
	if !ok {
		c = make(chan struct{})
		w.ch[id] = c
	}
	return c
}

func (w *approvalWaiters) notify(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.ch[id]; ok {
		close(c)
		delete(w.ch, id)
	}
}

// askApproval holds a request the policy answered ask for: the pending approval is
// stored, and its approval record appended, before the caller hears of it.
func (s *Server) askApproval(ctx context.Context, caller Caller, d *decided, hold ...func(*HeldRequest)) (*Approval, error) {
	now := time.Now().UTC()
	a := &Approval{
		ID: NewRequestID(), State: ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(s.opts.Approvals.Expiry),
		Principal: audit.Principal{Name: caller.Name, Role: string(caller.Role)}, RequestID: caller.RequestID,
		Endpoint: caller.Endpoint, Task: d.req.Task, DecisionID: d.record.ID, Revision: d.decision.Revision,
		Reasons: d.reasons, AskCommands: []int{},
		Request: HeldRequest{
			Command: d.req.Script, Argv: d.req.Argv, Cwd: d.cwd, ShellMode: d.req.ShellMode, Stdin: d.req.Stdin,
			TimeoutMS: d.req.Timeout.Milliseconds(), MaxOutputChars: d.req.MaxOutput, Network: d.decision.Sandbox.Network,
		},
	}
	for _, h := range hold {
		h(&a.Request)
	}
	if a.Commands = d.commands; a.Commands == nil {
		b, err := json.Marshal(d.doc.Commands)
		if err != nil {
			return nil, fmt.Errorf("encode the parsed commands: %w", err)
		}
		a.Commands = b
	}
	for _, r := range d.decision.Reasons {
		if r.Effect == policies.ActionAsk && r.Command >= 0 && !containsInt(a.AskCommands, r.Command) {
			a.AskCommands = append(a.AskCommands, r.Command)
		}
	}
	if err := s.state.insertApproval(ctx, a); err != nil {
		return nil, &Error{Code: CodeUnavailable, Err: err, DecisionID: d.record.ID,
			Message: "the approval cannot be stored, so nothing was run: retry later"}
	}
	if err := s.recordApproval(ctx, caller, a, "requested", nil); err != nil {
		// The approval exists but its request is not in the chain: withdraw it, so
		// that nothing can be approved without its record.
		a.State, a.Error = ApprovalFailed, &ApprovalError{Code: CodeUnavailable, Message: "the approval could not be recorded in the audit log"}
		s.state.updateApproval(context.Background(), a, ApprovalPending)
		return nil, &Error{Code: CodeUnavailable, Err: err, DecisionID: d.record.ID,
			Message: "the audit log cannot record the approval request, so nothing was run: retry later"}
	}
	caller.log().Info("approval requested", "approval_id", a.ID, "decision_id", a.DecisionID)
	s.publish(EventRequested, a)
	return a, nil
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// recordApproval appends an approval record: event is requested, approved, denied,
// expired or refused; extra goes into its detail.
func (s *Server) recordApproval(ctx context.Context, who Caller, a *Approval, event string, extra map[string]any) error {
	detail := map[string]any{"approval_id": a.ID, "requester": a.Principal.Name}
	if who.Endpoint != "" {
		detail["endpoint"] = who.Endpoint
	}
	if who.Source != "" {
		detail["source"] = who.Source
	}
	for k, v := range extra {
		detail[k] = v
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = s.append(ctx, audit.Record{
		Kind: audit.KindApproval, Principal: audit.Principal{Name: who.Name, Role: string(who.Role)},
		RequestID: who.RequestID, DecisionID: a.DecisionID, Decision: event, Revision: a.Revision, Detail: b,
	})
	return err
}

// approvalPoll is how often a waiter reads its approval again, for the decisions made
// by another process on the same data directory.
const approvalPoll = 500 * time.Millisecond

// waitApproval waits until the approval is decided (and, approved, has run), ctx ends
// or wait passes, and returns it as it is then.
func (s *Server) waitApproval(ctx context.Context, id string, wait time.Duration) (*Approval, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// Another process on the same data directory (cmdgate mcp beside cmdgate serve) may
	// decide it: look at the store now and then too.
	poll := time.NewTicker(approvalPoll)
	defer poll.Stop()
	for {
		changed := s.waiters.changed(id)
		a, err := s.state.approval(context.WithoutCancel(ctx), id)
		if err != nil {
			return nil, &Error{Code: CodeUnavailable, Message: "the approval cannot be read", Err: err}
		}
		if a.decided() {
			return a, nil
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-timer.C:
			return a, nil
		case <-ctx.Done():
			return a, nil
		}
	}
}

// ApprovalOutcome turns an approval into what the request that asked would have got:
// its result once it ran (an Outcome with the run's decision id), DENIED once it was
// denied or expired, APPROVAL_PENDING while nobody decided, the failure if it could
// not run.
func ApprovalOutcome(a *Approval) (*Outcome, error) {
	switch a.State {
	case ApprovalCompleted:
		return &Outcome{Decision: policies.ActionAllow, DecisionID: a.RunDecisionID, Revision: a.Revision, Reasons: a.Reasons, Result: a.Result}, nil
	case ApprovalDenied, ApprovalExpired:
		msg := "a human denied this command"
		if a.State == ApprovalExpired {
			msg = "nobody approved this command in time"
		} else if a.DecidedBy != nil {
			msg = "denied by " + a.DecidedBy.Name
		}
		if a.Comment != "" {
			msg += ": " + a.Comment
		}
		return nil, &Error{Code: CodeDenied, Decision: policies.ActionAsk, DecisionID: a.DecisionID, ApprovalID: a.ID,
			Reasons: a.Reasons, Message: msg}
	case ApprovalFailed:
		e := &Error{Code: CodeInternal, DecisionID: a.RunDecisionID, ApprovalID: a.ID, Message: "the approved command could not be run"}
		if a.Error != nil {
			e.Code, e.Message = a.Error.Code, a.Error.Message
		}
		return nil, e
	}
	return nil, &Error{Code: CodeApprovalPending, Decision: policies.ActionAsk, DecisionID: a.DecisionID, ApprovalID: a.ID,
		Reasons: a.Reasons, Message: "this command needs a human approval: approval " + a.ID + " is pending (" + reasonSummary(a.Reasons) + ")"}
}

// Approval returns one approval. An agent sees only its own; other roles see all.
func (s *Server) Approval(ctx context.Context, caller Caller, id string) (*Approval, error) {
	if !validApprovalID(id) {
		return nil, &Error{Code: CodeNotFound, Message: "no such approval"}
	}
	a, err := s.state.approval(ctx, id)
	if errors.Is(err, errNoApproval) || (err == nil && caller.Role == RoleAgent && a.Principal.Name != caller.Name) {
		return nil, &Error{Code: CodeNotFound, Message: "no such approval"}
	}
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the approvals cannot be read", Err: err}
	}
	return a, nil
}

// WaitApproval is Approval once the approval is decided (and has run, when approved),
// ctx ends or wait passes, whichever comes first.
func (s *Server) WaitApproval(ctx context.Context, caller Caller, id string, wait time.Duration) (*Approval, error) {
	if _, err := s.Approval(ctx, caller, id); err != nil {
		return nil, err
	}
	return s.waitApproval(ctx, id, wait)
}

// Approvals lists approvals newest first, in one state unless state is "", at most
// limit (1 to 1000). An agent sees only its own.
func (s *Server) Approvals(ctx context.Context, caller Caller, state string, limit int) ([]*Approval, error) {
	switch state {
	case "", ApprovalPending, ApprovalDenied, ApprovalExpired, ApprovalRunning, ApprovalCompleted, ApprovalFailed:
	default:
		return nil, Invalid("state must be one of pending, denied, expired, running, completed, failed")
	}
	if limit < 1 || limit > 1000 {
		return nil, Invalid("limit must be from 1 to 1000")
	}
	principal := ""
	if caller.Role == RoleAgent {
		principal = caller.Name
	}
	out, err := s.state.approvals(ctx, principal, state, limit)
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the approvals cannot be read", Err: err}
	}
	return out, nil
}

// Verdict is an approver's decision on an approval.
type Verdict struct {
	Approve bool
	// Comment is free text, recorded with the decision (at most 2000 bytes).
	Comment string
	// Scope is what an approval covers: ScopeOnce ("" means it), or a grant that also
	// covers later requests: ScopeSession, ScopeTask, ScopeCommand, ScopePrefix.
	Scope string
	// Expiry is a grant's lifetime (0: ApprovalOptions.GrantExpiry); MaxUses bounds the
	// requests it allows (0: no bound); Prefix are the first words of the commands a
	// prefix grant allows.
	Expiry  time.Duration
	MaxUses int
	Prefix  []string
}

// DecideApproval approves or denies a pending approval. Only the approver and admin
// roles may decide, and never on their own request (FORBIDDEN, audited as refused); a
// decided, running or expired approval is CONFLICT. Approving records the decision,
// then a decision record that allows the held request, then runs it in the background,
// exactly as held, once; the answer is the approval as it is then (running).
func (s *Server) DecideApproval(ctx context.Context, caller Caller, id string, v Verdict) (*Approval, error) {
	if v.Scope == "" {
		v.Scope = ScopeOnce
	}
	switch {
	case !slices.Contains([]string{ScopeOnce, ScopeSession, ScopeTask, ScopeCommand, ScopePrefix}, v.Scope):
		return nil, Invalid("scope must be once, session, task, command or prefix, not %q", Truncate(v.Scope, 64))
	case len(v.Comment) > 2000:
		return nil, Invalid("comment is %d bytes, at most 2000", len(v.Comment))
	}
	if err := validText("comment", v.Comment); err != nil {
		return nil, err
	}
	a, err := s.Approval(ctx, Caller{Name: caller.Name, Role: RoleAdmin}, id)
	if err != nil {
		return nil, err
	}
	verb := "deny"
	if v.Approve {
		verb = "approve"
	}
	refuse := func(why string) (*Approval, error) {
		if err := s.recordApproval(ctx, caller, a, "refused", map[string]any{"attempt": verb, "why": why}); err != nil {
			caller.log().Error("cannot record a refused approval decision", "approval_id", a.ID, "error", err.Error())
		}
		return nil, Errorf(CodeForbidden, "%s", why)
	}
	switch {
	case caller.Role != RoleApprover && caller.Role != RoleAdmin:
		return refuse(fmt.Sprintf("the %s role may not decide approvals (it needs the approver role)", caller.Role))
	case caller.Name == a.Principal.Name:
		return refuse("the requester of a command may not decide its own approval")
	}
	var grant *Grant
	if v.Approve && v.Scope != ScopeOnce {
		if grant, err = s.newGrant(a, caller, v); err != nil {
			return nil, err
		}
	}
	if a.State == ApprovalPending && !time.Now().Before(a.ExpiresAt) {
		s.expire(a)
		a, _ = s.state.approval(ctx, id)
	}
	if a.State != ApprovalPending {
		return nil, Errorf(CodeConflict, "approval %s is %s already", a.ID, a.State)
	}
	now := time.Now().UTC()
	a.DecidedBy, a.DecidedAt, a.Comment = &audit.Principal{Name: caller.Name, Role: string(caller.Role)}, &now, v.Comment
	a.State = ApprovalDenied
	if v.Approve {
		a.State, a.Scope = ApprovalRunning, v.Scope
	}
	ok, err := s.state.updateApproval(ctx, a, ApprovalPending)
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the approval cannot be stored", Err: err}
	}
	if !ok {
		cur, _ := s.state.approval(ctx, id)
		state := "decided"
		if cur != nil {
			state = cur.State
		}
		return nil, Errorf(CodeConflict, "approval %s is %s already", id, state)
	}
	extra := map[string]any{"comment": v.Comment}
	event := "denied"
	if v.Approve {
		event, extra["scope"] = "approved", v.Scope
	}
	if err := s.recordApproval(ctx, caller, a, event, extra); err != nil {
		// Fail closed: an approval not in the chain runs nothing.
		caller.log().Error("cannot record an approval decision: the command will not run", "approval_id", a.ID, "error", err.Error())
		if v.Approve {
			s.finishApproval(a, nil, &ApprovalError{Code: CodeUnavailable, Message: "the approval could not be recorded in the audit log: nothing was run"})
		}
		return nil, &Error{Code: CodeUnavailable, Message: "the audit log cannot record the decision", Err: err}
	}
	caller.log().Info("approval decided", "approval_id", a.ID, "decision", event)
	s.publish(event, a)
	if !v.Approve {
		s.waiters.notify(a.ID)
		return a, nil
	}
	if grant != nil {
		if err := s.createGrant(ctx, caller, a, grant); err != nil {
			// The held request was approved all the same: it runs.
			caller.log().Error("cannot create the grant of an approval", "approval_id", a.ID, "error", err.Error())
		} else {
			a.GrantID = grant.ID
		}
	}
	if err := s.runApproved(ctx, caller, a); err != nil {
		return nil, err
	}
	return a, nil
}

// runApproved records the decision that allows the held request and starts it.
func (s *Server) runApproved(ctx context.Context, approver Caller, a *Approval) error {
	detail, _ := json.Marshal(map[string]string{
		"endpoint": "approval", "approval_id": a.ID, "asked_decision_id": a.DecisionID,
		"approved_by": approver.Name, "scope": a.Scope, "sandbox": s.sandbox,
	})
	cmdIdx := -1
	if len(a.AskCommands) == 1 {
		cmdIdx = a.AskCommands[0]
	}
	reason := policies.Reason{Rule: "approval.approved", Effect: policies.ActionAllow, Command: cmdIdx,
		Message: fmt.Sprintf("approved by %s (%s)", approver.Name, a.Scope)}
	if a.Comment != "" {
		reason.Message += ": " + Truncate(a.Comment, 200)
	}
	rec, err := s.append(ctx, audit.Record{
		Kind: audit.KindDecision, Principal: a.Principal, RequestID: approver.RequestID,
		Decision: policies.ActionAllow, Reasons: auditReasons([]policies.Reason{reason}), Revision: a.Revision, Detail: detail,
	})
	if err != nil {
		s.finishApproval(a, nil, &ApprovalError{Code: CodeUnavailable, Message: "the audit log could not record the decision to run it: nothing was run"})
		return &Error{Code: CodeUnavailable, Message: "the audit log cannot record the decision, so nothing was run", Err: err}
	}
	a.RunDecisionID = rec.ID
	h := a.Request
	d := &decided{
		req: &Request{Script: h.Command, Argv: h.Argv, ShellMode: h.ShellMode, Stdin: h.Stdin,
			Timeout: time.Duration(h.TimeoutMS) * time.Millisecond, MaxOutput: h.MaxOutputChars, Task: a.Task},
		cwd:      h.Cwd,
		decision: policies.Decision{Action: policies.ActionAllow, Revision: a.Revision, Sandbox: policies.Sandbox{Network: h.Network}},
		record:   rec,
	}
	requester := Caller{Name: a.Principal.Name, Role: Role(a.Principal.Role), RequestID: approver.RequestID,
		Endpoint: "approval", Log: approver.Log}
	if h.Job {
		return s.startApprovedJob(ctx, requester, a, d, time.Duration(h.MaxRunTimeMS)*time.Millisecond)
	}
	s.runMu.Lock()
	if s.closed {
		s.runMu.Unlock()
		s.finishApproval(a, nil, &ApprovalError{Code: CodeUnavailable, Message: "the gateway is shutting down: the command was not started"})
		return &Error{Code: CodeUnavailable, Message: "the gateway is shutting down: the command was not started"}
	}
	s.background.Add(1)
	s.runMu.Unlock()
	go func() {
		defer s.background.Done()
		res, err := s.run(context.Background(), requester, d)
		if err != nil {
			e := AsError(err)
			var ran *executor.Result
			if res.DurationMS > 0 {
				ran = &res
			}
			s.finishApproval(a, ran, &ApprovalError{Code: e.Code, Message: e.Message})
			return
		}
		s.finishApproval(a, &res, nil)
	}()
	return nil
}

// startApprovedJob starts the job an approval allowed; the approval is completed
// (with the job's id) once the job started, failed if it could not start.
func (s *Server) startApprovedJob(ctx context.Context, requester Caller, a *Approval, d *decided, maxRun time.Duration) error {
	if err := s.jobsReady(); err != nil {
		s.finishApproval(a, nil, &ApprovalError{Code: CodeUnavailable, Message: err.Error()})
		return nil
	}
	requester.Endpoint = "job"
	j, err := s.launchJob(ctx, requester, d, maxRun)
	if err != nil {
		je := AsJobError(err)
		s.finishApproval(a, nil, &ApprovalError{Code: je.Code, Message: je.Message})
		return nil
	}
	a.JobID = j.ID
	s.finishApproval(a, nil, nil)
	return nil
}

// finishApproval stores what running an approved request gave and wakes its waiters.
func (s *Server) finishApproval(a *Approval, res *executor.Result, failure *ApprovalError) {
	from := a.State
	b := *a
	b.State, b.Result, b.Error = ApprovalCompleted, res, failure
	if failure != nil {
		b.State = ApprovalFailed
	}
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	if _, err := s.state.updateApproval(ctx, &b, from); err != nil {
		s.log.Error("cannot store the result of an approved command", "approval_id", a.ID, "error", err.Error())
	}
	s.waiters.notify(a.ID)
	if b.State == ApprovalCompleted {
		s.publish(EventCompleted, &b)
	} else {
		s.publish(EventFailed, &b)
	}
}

// expire marks a pending approval whose time passed as expired: a denial.
func (s *Server) expire(a *Approval) {
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	b := *a
	b.State = ApprovalExpired
	ok, err := s.state.updateApproval(ctx, &b, ApprovalPending)
	if err != nil || !ok {
		return
	}
	if err := s.recordApproval(ctx, Caller{RequestID: a.RequestID}, &b, "expired", nil); err != nil {
		s.log.Error("cannot record an approval's expiry", "approval_id", a.ID, "error", err.Error())
	}
	s.waiters.notify(a.ID)
	s.publish(EventExpired, &b)
}

// expireLoop expires approvals when their time passes, until the server closes.
func (s *Server) expireLoop(every time.Duration) {
	defer close(s.expiredDone)
	t := time.NewTicker(every)
	defer t.Stop()
	lastVersion, _ := s.state.dataVersion(context.Background())
	for {
		select {
		case <-s.stopLoops:
			return
		case now := <-t.C:
			due, err := s.state.dueApprovals(context.Background(), now)
			if err != nil {
				s.log.Error("cannot read the approvals due to expire", "error", err.Error())
				continue
			}
			for _, a := range due {
				s.expire(a)
			}
			s.grantsMu.Lock()
			next := s.nextGrantExpiry
			s.grantsMu.Unlock()
			// Grants another process on the data directory made or revoked: the state
			// store's data version moves when another connection commits.
			version, verr := s.state.dataVersion(context.Background())
			foreign := verr == nil && version != lastVersion
			lastVersion = version
			if foreign || (!next.IsZero() && !now.Before(next)) {
				if err := s.refreshGrants(context.Background()); err != nil {
					s.log.Error("cannot refresh the grants", "error", err.Error())
				}
			}
		}
	}
}

// recoverApprovals, at start, fails the approved requests that were running when the
// gateway stopped: their process is gone, and they never run again.
func (s *Server) recoverApprovals(ctx context.Context) error {
	running, err := s.state.approvalsIn(ctx, ApprovalRunning)
	if err != nil {
		return err
	}
	for _, a := range running {
		b := *a
		b.State, b.Error = ApprovalFailed, &ApprovalError{Code: CodeUnavailable, Message: "the gateway stopped while the approved command ran"}
		if _, err := s.state.updateApproval(ctx, &b, ApprovalRunning); err != nil {
			return err
		}
	}
	return nil
}

// validApprovalID accepts the ids NewRequestID makes.
func validApprovalID(id string) bool {
	if len(id) != 26 {
		return false
	}
	return strings.Trim(id, crockford) == ""
}
