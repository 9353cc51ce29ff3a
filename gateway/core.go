package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// The core of the gateway: the pipeline every front shares (parse → decide → audit →
// execute), with typed input and output and nothing of HTTP in it. A front (the echo
// handlers of pipeline.go today) maps its input to a Caller and a Request and the
// Outcome or *Error to its own wire format, and does nothing else.

// Caller is who sent a request, through which front, and how to log about it.
type Caller struct {
	// Name and Role are the principal: the token's name and role.
	Name string
	Role Role
	// RequestID names the request in the audit records and the log.
	RequestID string
	// Endpoint is what the front calls the operation ("exec", "decide"); it is the
	// decision record's detail.endpoint.
	Endpoint string
	// RemoteAddr is the client's address, when the front has one.
	RemoteAddr string
	// Source names a front other than the HTTP API ("mcp"); it is the records'
	// detail.source.
	Source string
	// Gone is what the execution record's detail.stopped says when ctx ends while the
	// command runs: "client_gone" (the default: the HTTP client went away) or, for a
	// front whose calls are cancelled by a message, "cancelled".
	Gone string
	// Log receives the pipeline's log lines about the request; nil discards them.
	Log *slog.Logger
	// OnPending, when set, is called when the request became a pending approval,
	// before Exec waits for its decision (Request.Wait).
	OnPending func(*Approval)
	// Timing, when set, receives the time the pipeline spends in each phase (parse,
	// policy, the records, the sandbox's start and the run).
	Timing *Timing
}

func (c Caller) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// Outcome is what the pipeline decided and, for Exec of an allowed command, what
// running it gave.
type Outcome struct {
	Decision   string
	DecisionID string
	Revision   string
	Reasons    []Reason
	Sandbox    policies.Sandbox
	// Doc is the parsed request the policy decided on.
	Doc *parse.Document
	// CommandsJSON is Doc.Commands already encoded, when the gateway remembered the
	// parse (a front writing JSON can put it in as it is); nil otherwise.
	CommandsJSON json.RawMessage
	// Result is the command's result; nil when nothing ran.
	Result *executor.Result
}

// decided is a request that went through the first half of the pipeline: validated,
// parsed, decided, and its decision durably recorded.
type decided struct {
	req      *Request
	cwd      string
	doc      *parse.Document
	decision policies.Decision
	reasons  []Reason
	record   audit.Record    // the decision record as stored
	commands json.RawMessage // doc.Commands encoded, when remembered
	task     string          // the task whose container runs the command; "" the host
}

func (d *decided) outcome() *Outcome {
	return &Outcome{
		Decision: d.decision.Action, DecisionID: d.record.ID, Revision: d.decision.Revision,
		Reasons: d.reasons, Sandbox: d.decision.Sandbox, Doc: d.doc, CommandsJSON: d.commands,
	}
}

// executionRecordTimeout bounds the append of an execution record, which must not
// depend on the caller still being there.
const executionRecordTimeout = 30 * time.Second

// Decide runs the pipeline up to the durable decision record: resolve the cwd inside
// the workspace, parse, decide, append the decision record. Nothing runs. It returns
// only when the record is durable; an audit store that cannot take it is UNAVAILABLE
// (fail closed: nothing may run without it), returned with the Outcome of what the
// policy decided (its DecisionID empty). Every decision, deny and ask included, is an
// Outcome; errors are *Error with a contract code.
func (s *Server) Decide(ctx context.Context, caller Caller, req *Request) (*Outcome, error) {
	d, err := s.decide(ctx, caller, req, false)
	if d == nil {
		return nil, err
	}
	return d.outcome(), err
}

// Exec runs the whole pipeline: decide, and for allow run the command and record its
// execution, whatever happens to the caller meanwhile (ctx ending stops the command,
// like its timeout). Deny returns the Outcome with a DENIED *Error carrying the
// decision, its id and the reasons. Ask holds the request as a pending approval
// (approvals.go) and returns APPROVAL_PENDING with its id, or, when the request waits
// (Request.Wait), what the approval gave by then: the Outcome of the run, DENIED, or
// still APPROVAL_PENDING. With approvals disabled ask is DENIED. A command that ran
// returns the Outcome with its Result, whatever its exit code.
func (s *Server) Exec(ctx context.Context, caller Caller, req *Request) (*Outcome, error) {
	d, err := s.decide(ctx, caller, req, true)
	if err != nil {
		if d == nil {
			return nil, err
		}
		return d.outcome(), err
	}
	o := d.outcome()
	switch d.decision.Action {
	case policies.ActionAllow:
	case policies.ActionAsk:
		if s.opts.Approvals.Disabled {
			return o, &Error{Code: CodeDenied, Decision: d.decision.Action, DecisionID: d.record.ID, Reasons: d.reasons,
				Message: "this command needs a human approval, and approvals are not enabled on this gateway: " + reasonSummary(d.reasons)}
		}
		return s.execApproval(ctx, caller, d, o)
	default:
		return o, &Error{Code: CodeDenied, Decision: d.decision.Action, DecisionID: d.record.ID, Reasons: d.reasons,
			Message: "the policy denied this command: " + reasonSummary(d.reasons)}
	}
	res, err := s.run(ctx, caller, d)
	if err != nil {
		return o, err
	}
	o.Result = &res
	return o, nil
}

// execApproval holds a request the policy answered ask for as a pending approval and,
// when the request asks to wait, waits for its decision (and, approved, its result).
func (s *Server) execApproval(ctx context.Context, caller Caller, d *decided, o *Outcome) (*Outcome, error) {
	a, err := s.askApproval(ctx, caller, d)
	if err != nil {
		return o, err
	}
	if caller.OnPending != nil {
		caller.OnPending(a)
	}
	if d.req.Wait > 0 {
		if a, err = s.waitApproval(ctx, a.ID, min(d.req.Wait, s.opts.Approvals.Wait)); err != nil {
			return o, err
		}
	}
	ao, err := ApprovalOutcome(a)
	if ao == nil {
		return o, err
	}
	ao.Sandbox, ao.Doc = o.Sandbox, o.Doc
	return ao, err
}

// decide is Decide's work, keeping what Exec needs to run the command. run says that
// the command runs when allowed: the grants that allow it then count a use. When the
// policy decided but the decision could not be recorded, it returns the decision
// (without a record) and the error: nothing may run, and the caller may still log what
// was decided.
func (s *Server) decide(ctx context.Context, caller Caller, req *Request, run bool) (*decided, error) {
	if caller.Role == RoleReader {
		// Whatever a front lets through: a reader runs nothing.
		return nil, Errorf(CodeForbidden, "the reader role may only read files through the read-only language")
	}
	// A request naming a task of this gateway runs in the task's container, with the
	// task's workspace and limits (validate, below, fills in the default task name).
	task, err := s.taskFor(ctx, caller, req)
	if err != nil {
		return nil, err
	}
	cfg, root, sandbox := s.opts.Executor, s.ws.Root(), s.sandboxInput
	if task != nil {
		cfg, root, sandbox = taskConfig(cfg, task), docker.Project, taskSandbox
	}
	if err := req.validate(cfg, s.opts.MaxScriptBytes); err != nil {
		return nil, err
	}
	var cwd string
	if task != nil {
		cwd, err = taskCwd(req.Cwd)
	} else {
		cwd, err = s.ws.Resolve(req.Cwd)
	}
	if err != nil {
		return nil, err
	}
	popts := parse.Options{Cwd: cwd, Workspace: root, ShellMode: string(req.ShellMode), MaxBytes: s.opts.MaxScriptBytes}
	mark := time.Now()
	doc, memo := s.parseRequest(req, popts, parse.Principal{Name: caller.Name, Role: string(caller.Role)}, sandbox)
	doc.Request.ID = caller.RequestID
	mark = caller.Timing.Since(PhaseParse, mark)

	var decision policies.Decision
	var derr error
	if memo != nil {
		decision, derr = s.engine.DecideKeyed(ctx, doc, memo.key)
	} else {
		decision, derr = s.engine.Decide(ctx, doc)
	}
	if derr != nil {
		// Decide denied (fail closed); the reason says why. Log the cause here.
		caller.log().Warn("policy evaluation failed: denying", "error", derr.Error())
	}
	if run && decision.Action == policies.ActionAllow && len(decision.Grants) > 0 {
		// Grants allowed it: count their uses. One that was used up, revoked or
		// expired meanwhile is gone from the policy's data now: decide again.
		ok, err := s.useGrants(ctx, decision.Grants)
		if err != nil {
			return nil, err
		}
		if !ok {
			if decision, derr = s.engine.Decide(ctx, doc); derr != nil {
				caller.log().Warn("policy evaluation failed: denying", "error", derr.Error())
			}
			if decision.Action == policies.ActionAllow && len(decision.Grants) > 0 {
				if ok, err := s.useGrants(ctx, decision.Grants); err != nil || !ok {
					return nil, &Error{Code: CodeUnavailable, Err: err, Message: "the grants changed while the request was decided: retry"}
				}
			}
		}
	}
	s.metrics.decisions.WithLabelValues(decision.Action, decisiveRule(decision)).Inc()
	if size, _ := s.engine.DecisionCache(); size > 0 {
		s.metrics.decisionCache.WithLabelValues(cacheResult(decision.Cached)).Inc()
	}
	mark = caller.Timing.Since(PhasePolicy, mark)

	// The input is encoded into a pooled buffer: Append is done with it when it returns.
	buf := getBuffer()
	defer putBuffer(buf)
	var input []byte
	switch {
	case memo != nil && memo.tmpl != nil: // the record takes the template
	case memo != nil:
		input, err = memo.appendInput(buf.AvailableBuffer(), doc.Principal, doc.Request)
	default:
		err = json.NewEncoder(buf).Encode(doc)
		input = buf.Bytes()
	}
	if err != nil {
		return nil, fmt.Errorf("encode policy input: %w", err)
	}
	dm := decisionDetail{Endpoint: caller.Endpoint, RemoteAddr: caller.RemoteAddr, Sandbox: s.sandbox, Source: caller.Source}
	if task != nil {
		dm.Sandbox, dm.TaskContainer = SandboxDocker, task.ContainerName
	}
	if decision.Action == policies.ActionAllow && decision.Sandbox.Network {
		// What the command may reach is part of what was decided.
		dm.Network = "granted"
	}
	if len(decision.Grants) > 0 {
		dm.Grants = strings.Join(decision.Grants, ",")
	}
	if decision.Cached {
		// The policy gave this decision to the same document before, under the same
		// revision; it was not evaluated again.
		dm.DecisionCache = "hit"
	}
	detail, _ := json.Marshal(&dm)
	var tmpl *audit.InputTemplate
	if memo != nil {
		tmpl = memo.tmpl
	}
	rec, err := s.append(ctx, audit.Record{
		Kind:          audit.KindDecision,
		Principal:     audit.Principal{Name: caller.Name, Role: string(caller.Role)},
		RequestID:     caller.RequestID,
		Input:         input,
		InputTemplate: tmpl,
		Decision:      decision.Action,
		Reasons:       auditReasons(decision.Reasons),
		Revision:      decision.Revision,
		Detail:        detail,
	})
	caller.Timing.Since(PhaseAuditDecision, mark)
	if err != nil {
		var re *audit.RecordError
		if errors.As(err, &re) {
			return &decided{decision: decision}, &Error{Code: CodeInvalidArgument, Err: err,
				Message: fmt.Sprintf("the request cannot be recorded in the audit log (%s: %s): nothing was run", re.Field, re.Reason)}
		}
		return &decided{decision: decision}, &Error{Code: CodeUnavailable, Err: err,
			Message: "the audit log cannot record the decision, so nothing was run: retry later"}
	}
	if run { // a decision that runs nothing uses no grant
		s.recordGrantUses(ctx, caller, decision.Grants, rec.ID)
	}
	d := &decided{req: req, cwd: cwd, doc: doc, decision: decision, reasons: apiReasons(decision.Reasons), record: rec}
	if task != nil {
		d.task = task.ID
	}
	if memo != nil {
		d.commands = memo.commands
	}
	return d, nil
}

// append appends a record, timing it.
func (s *Server) append(ctx context.Context, r audit.Record) (audit.Record, error) {
	start := time.Now()
	rec, err := s.store.Append(ctx, r)
	s.metrics.auditAppend.Observe(time.Since(start).Seconds())
	if err != nil {
		s.metrics.auditFailures.WithLabelValues(string(r.Kind)).Inc()
	}
	return rec, err
}

// run executes an allowed command and records its execution, whatever happens to the
// caller meanwhile.
func (s *Server) run(ctx context.Context, caller Caller, d *decided) (executor.Result, error) {
	spec := executor.Spec{
		Argv: d.req.Argv, Script: d.req.Script, ShellMode: d.req.ShellMode, Dir: d.cwd,
		Stdin: d.req.Stdin, Timeout: d.req.Timeout, MaxOutputChars: d.req.MaxOutput,
		Network: d.decision.Sandbox.Network, Keep: s.opts.Output.Keep,
	}
	sp := s.outputs.newSpool()
	if sp != nil {
		spec.Stdout, spec.Stderr = &sp.stdout, &sp.stderr
	}
	if !s.startRun() {
		s.recordExecution(caller, d, executor.Result{}, "not started: the gateway is shutting down", "shutdown")
		return executor.Result{}, &Error{Code: CodeUnavailable, DecisionID: d.record.ID,
			Message: "the gateway is shutting down: the command was not started"}
	}
	defer s.endRun()

	// The command stops when the caller goes away or when the shutdown grace is over.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.kill, func() { cancel(ErrShutdown) })
	defer stop()

	runner := s.runner
	if d.task != "" {
		e, done, err := s.startTaskRun(ctx, d.task)
		if err != nil {
			s.recordExecution(caller, d, executor.Result{}, "not started: "+err.Error(), "")
			return executor.Result{}, err
		}
		defer done()
		runner = e
		spec.Network = false // the task's network was chosen with the task
	}
	// The sandbox's start ends when the backend says the command started (OnStart, which
	// it may call from another goroutine); a command that never started spent it all
	// there.
	var started atomic.Int64
	mark := time.Now()
	if caller.Timing != nil {
		spec.OnStart = func() { started.Store(caller.Timing.Since(PhaseSandboxStart, mark).UnixNano()) }
	}
	res, err := runner.Run(ctx, spec)
	if at := started.Load(); at != 0 {
		caller.Timing.Since(PhaseRun, time.Unix(0, at))
	} else {
		caller.Timing.Since(PhaseSandboxStart, mark)
	}
	if err != nil && d.task != "" && errors.As(err, new(*executor.Error)) && AsError(err).Code == CodeInternal {
		err = s.taskEngineError(ctx, d.task, err)
	}
	s.metrics.execDuration.Observe(float64(res.DurationMS) / 1000)
	if res.Cwd == "" {
		res.Cwd = d.cwd
	}
	res.OutputID = sp.keep(caller, d.record.ID, res)
	var stopped, msg string
	var xe *executor.Error
	switch {
	case err == nil:
	case errors.As(err, &xe):
		msg = xe.Error()
	case errors.Is(context.Cause(ctx), ErrShutdown):
		stopped, msg = "shutdown", "stopped: the gateway shut down"
	case ctx.Err() != nil && caller.Gone == "cancelled":
		stopped, msg = "cancelled", "stopped: the call was cancelled"
	case ctx.Err() != nil:
		stopped, msg = "client_gone", "stopped: the client went away"
	default:
		msg = err.Error()
	}
	s.recordExecution(caller, d, res, msg, stopped)

	switch {
	case err == nil:
		return res, nil
	case stopped == "shutdown":
		return res, &Error{Code: CodeUnavailable, DecisionID: d.record.ID, Err: err,
			Message: "the gateway shut down while the command ran: it was stopped"}
	}
	e := AsError(err)
	e.DecisionID = d.record.ID
	return res, e
}

// recordExecution appends the execution record of a decision. It runs even when the
// caller is gone; a failure is logged and counted (the decision record was durable
// before anything ran).
func (s *Server) recordExecution(caller Caller, d *decided, res executor.Result, errMsg, stopped string) {
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	defer caller.Timing.Since(PhaseAuditOutcome, time.Now())
	detail := map[string]string{"endpoint": caller.Endpoint, "sandbox": s.sandbox}
	if d.task != "" {
		detail["sandbox"] = SandboxDocker
	}
	if stopped != "" {
		detail["stopped"] = stopped
	}
	if res.OutputID != "" {
		detail["output_id"] = res.OutputID
	}
	if caller.Source != "" {
		detail["source"] = caller.Source
	}
	b, _ := json.Marshal(detail)
	_, err := s.append(ctx, audit.Record{
		Kind:       audit.KindExecution,
		Principal:  audit.Principal{Name: caller.Name, Role: string(caller.Role)},
		RequestID:  caller.RequestID,
		DecisionID: d.record.ID,
		Revision:   d.decision.Revision,
		Execution: &audit.Execution{
			ExitCode: res.ExitCode, DurationMS: res.DurationMS, TimedOut: res.TimedOut,
			StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
			StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes,
			Error: Truncate(errMsg, 2000),
		},
		Detail: b,
	})
	if err != nil {
		caller.log().Error("cannot record the execution of a command that ran", "decision_id", d.record.ID, "error", err.Error())
	}
}

// decisionDetail is the detail of a decision record: where the request came from and
// what the decision gave it beyond the verdict. A struct rather than a map, so that
// encoding it costs no sort of its keys (the audit log stores the canonical form,
// keys sorted, either way).
type decisionDetail struct {
	Endpoint      string `json:"endpoint"`
	RemoteAddr    string `json:"remote_addr"`
	Sandbox       string `json:"sandbox"`
	TaskContainer string `json:"task_container,omitempty"`
	Source        string `json:"source,omitempty"`
	Network       string `json:"network,omitempty"`
	Grants        string `json:"grants,omitempty"`
	DecisionCache string `json:"decision_cache,omitempty"`
}
