package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// Reason is one reason of a decision as the API shows it (contract 2 of docs/architecture.md).
type Reason struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Command is the index in commands the reason is about; null when it is about the
	// request as a whole.
	Command *int `json:"command"`
	// Effect is what this reason alone asks for: deny or ask.
	Effect string `json:"effect,omitempty"`
}

// decided is a request that went through the first half of the pipeline: validated,
// parsed, decided, and its decision durably recorded.
type decided struct {
	req      *execRequest
	cwd      string
	doc      *parse.Document
	decision policies.Decision
	reasons  []Reason
	record   audit.Record    // the decision record as stored
	commands json.RawMessage // doc.Commands encoded, when remembered
}

// executionRecordTimeout bounds the append of an execution record, which must not
// depend on the client still being there.
const executionRecordTimeout = 30 * time.Second

// decide runs the pipeline up to the durable decision record: read and validate the
// body, resolve the cwd inside the workspace, parse, decide, append the decision
// record. It returns only when the record is durable; an audit store that cannot take
// it is UNAVAILABLE (fail closed: nothing may run without it).
func (s *Server) decide(c echo.Context, endpoint string) (*decided, error) {
	ri := info(c)
	ctx := c.Request().Context()
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	req, err := decodeExecRequest(raw, s.opts.Executor, s.opts.MaxScriptBytes)
	if err != nil {
		return nil, err
	}
	cwd, err := s.ws.Resolve(req.Cwd)
	if err != nil {
		return nil, err
	}
	popts := parse.Options{Cwd: cwd, Workspace: s.ws.Root(), ShellMode: string(req.ShellMode), MaxBytes: s.opts.MaxScriptBytes}
	doc, memo := s.parseRequest(req, popts, parse.Principal{Name: ri.token.Name, Role: string(ri.token.Role)})
	doc.Request.ID = ri.id

	var decision policies.Decision
	var derr error
	if memo != nil {
		decision, derr = s.engine.DecideKeyed(ctx, doc, memo.key)
	} else {
		decision, derr = s.engine.Decide(ctx, doc)
	}
	if derr != nil {
		// Decide denied (fail closed); the reason says why. Log the cause here.
		ri.log.Warn("policy evaluation failed: denying", "error", derr.Error())
	}
	ri.decision = decision.Action
	s.metrics.decisions.WithLabelValues(decision.Action, decisiveRule(decision)).Inc()
	if size, _ := s.engine.DecisionCache(); size > 0 {
		s.metrics.decisionCache.WithLabelValues(cacheResult(decision.Cached)).Inc()
	}

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
	dm := map[string]string{"endpoint": endpoint, "remote_addr": c.RealIP(), "sandbox": s.sandbox}
	if decision.Action == policies.ActionAllow && decision.Sandbox.Network {
		// What the command may reach is part of what was decided.
		dm["network"] = "granted"
	}
	if decision.Cached {
		// The policy gave this decision to the same document before, under the same
		// revision; it was not evaluated again.
		dm["decision_cache"] = "hit"
	}
	detail, _ := json.Marshal(dm)
	var tmpl *audit.InputTemplate
	if memo != nil {
		tmpl = memo.tmpl
	}
	rec, err := s.append(ctx, audit.Record{
		Kind:          audit.KindDecision,
		Principal:     audit.Principal{Name: ri.token.Name, Role: string(ri.token.Role)},
		RequestID:     ri.id,
		Input:         input,
		InputTemplate: tmpl,
		Decision:      decision.Action,
		Reasons:       auditReasons(decision.Reasons),
		Revision:      decision.Revision,
		Detail:        detail,
	})
	if err != nil {
		var re *audit.RecordError
		if errors.As(err, &re) {
			return nil, &Error{Code: CodeInvalidArgument, Err: err,
				Message: fmt.Sprintf("the request cannot be recorded in the audit log (%s: %s): nothing was run", re.Field, re.Reason)}
		}
		return nil, &Error{Code: CodeUnavailable, Err: err,
			Message: "the audit log cannot record the decision, so nothing was run: retry later"}
	}
	d := &decided{req: req, cwd: cwd, doc: doc, decision: decision, reasons: apiReasons(decision.Reasons), record: rec}
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

// decideAnswer is the 200 answer of POST /v1/decide.
type decideAnswer struct {
	Decision   string   `json:"decision"`
	DecisionID string   `json:"decision_id"`
	Revision   string   `json:"revision"`
	Reasons    []Reason `json:"reasons"`
	// Commands is []parse.Command, or nil when handleDecide adds their remembered JSON.
	Commands   any              `json:"commands,omitempty"`
	ParseError *parse.Error     `json:"parse_error,omitempty"`
	Sandbox    policies.Sandbox `json:"sandbox"`
}

// handleDecide answers the policy's decision without running anything. Every decision,
// deny and ask included, is a 200 answer: the client asked what the policy says.
func (s *Server) handleDecide(c echo.Context) error {
	d, err := s.decide(c, "decide")
	if err != nil {
		return err
	}
	a := decideAnswer{
		Decision: d.decision.Action, DecisionID: d.record.ID, Revision: d.decision.Revision,
		Reasons: d.reasons, ParseError: d.doc.Error, Sandbox: d.decision.Sandbox,
	}
	if d.commands == nil {
		a.Commands = d.doc.Commands
		return writeJSON(c, http.StatusOK, a)
	}
	// The remembered JSON of the commands goes in as it is (a json.RawMessage member
	// would be scanned and compacted again).
	extra := getBuffer()
	defer putBuffer(extra)
	extra.WriteString(`,"commands":`)
	extra.Write(d.commands)
	return writeJSONWith(c, http.StatusOK, a, extra.Bytes())
}

// execAnswer is the 200 answer of POST /v1/exec: exec_command's output plus the decision.
type execAnswer struct {
	Decision   string `json:"decision"`
	DecisionID string `json:"decision_id"`
	Revision   string `json:"revision"`
	executor.Result
}

// handleExec runs the pipeline to the end: decide, and for allow run the command and
// record its execution. Deny and ask are 403 DENIED with the reasons (approvals are
// not enabled yet, so ask fails closed).
func (s *Server) handleExec(c echo.Context) error {
	d, err := s.decide(c, "exec")
	if err != nil {
		return err
	}
	switch d.decision.Action {
	case policies.ActionAllow:
	case policies.ActionAsk:
		return &Error{Code: CodeDenied, Decision: d.decision.Action, DecisionID: d.record.ID, Reasons: d.reasons,
			Message: "this command needs a human approval, and approvals are not enabled on this gateway: " + reasonSummary(d.reasons)}
	default:
		return &Error{Code: CodeDenied, Decision: d.decision.Action, DecisionID: d.record.ID, Reasons: d.reasons,
			Message: "the policy denied this command: " + reasonSummary(d.reasons)}
	}
	return s.run(c, d)
}

// run executes an allowed command and records its execution, whatever happens to the
// client meanwhile.
func (s *Server) run(c echo.Context, d *decided) error {
	ri := info(c)
	spec := executor.Spec{
		Argv: d.req.Argv, Script: d.req.Script, ShellMode: d.req.ShellMode, Dir: d.cwd,
		Stdin: d.req.Stdin, Timeout: d.req.Timeout, MaxOutputChars: d.req.MaxOutput,
		Network: d.decision.Sandbox.Network,
	}
	if !s.startRun() {
		s.recordExecution(ri, d, executor.Result{}, "not started: the gateway is shutting down", "shutdown")
		return &Error{Code: CodeUnavailable, DecisionID: d.record.ID,
			Message: "the gateway is shutting down: the command was not started"}
	}
	defer s.endRun()

	// The command stops when the client goes away or when the shutdown grace is over.
	ctx, cancel := context.WithCancelCause(c.Request().Context())
	defer cancel(nil)
	stop := context.AfterFunc(s.kill, func() { cancel(ErrShutdown) })
	defer stop()

	res, err := s.runner.Run(ctx, spec)
	s.metrics.execDuration.Observe(float64(res.DurationMS) / 1000)
	if res.Cwd == "" {
		res.Cwd = d.cwd
	}
	var stopped, msg string
	var xe *executor.Error
	switch {
	case err == nil:
	case errors.As(err, &xe):
		msg = xe.Error()
	case errors.Is(context.Cause(ctx), ErrShutdown):
		stopped, msg = "shutdown", "stopped: the gateway shut down"
	case ctx.Err() != nil:
		stopped, msg = "client_gone", "stopped: the client went away"
	default:
		msg = err.Error()
	}
	s.recordExecution(ri, d, res, msg, stopped)

	switch {
	case err == nil:
		return writeJSON(c, http.StatusOK, execAnswer{
			Decision: d.decision.Action, DecisionID: d.record.ID, Revision: d.decision.Revision, Result: res,
		})
	case stopped == "shutdown":
		return &Error{Code: CodeUnavailable, DecisionID: d.record.ID, Err: err,
			Message: "the gateway shut down while the command ran: it was stopped"}
	}
	e := asError(err)
	e.DecisionID = d.record.ID
	return e
}

// recordExecution appends the execution record of a decision. It runs even when the
// client is gone; a failure is logged and counted (the decision record was durable
// before anything ran).
func (s *Server) recordExecution(ri *reqInfo, d *decided, res executor.Result, errMsg, stopped string) {
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	detail := map[string]string{"endpoint": "exec", "sandbox": s.sandbox}
	if stopped != "" {
		detail["stopped"] = stopped
	}
	b, _ := json.Marshal(detail)
	_, err := s.append(ctx, audit.Record{
		Kind:       audit.KindExecution,
		Principal:  audit.Principal{Name: ri.token.Name, Role: string(ri.token.Role)},
		RequestID:  ri.id,
		DecisionID: d.record.ID,
		Revision:   d.decision.Revision,
		Execution: &audit.Execution{
			ExitCode: res.ExitCode, DurationMS: res.DurationMS, TimedOut: res.TimedOut,
			StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
			StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes,
			Error: truncate(errMsg, 2000),
		},
		Detail: b,
	})
	if err != nil {
		ri.log.Error("cannot record the execution of a command that ran", "decision_id", d.record.ID, "error", err.Error())
	}
}

// decisiveRule is the rule that gave the decision its action (the first reason with
// that effect), for the decisions metric: one count per decision.
func decisiveRule(d policies.Decision) string {
	for _, r := range d.Reasons {
		if r.Effect == d.Action {
			return r.Rule
		}
	}
	if len(d.Reasons) > 0 {
		return d.Reasons[0].Rule
	}
	return ""
}

func cacheResult(hit bool) string {
	if hit {
		return "hit"
	}
	return "miss"
}

func apiReasons(rs []policies.Reason) []Reason {
	out := make([]Reason, 0, len(rs))
	for _, r := range rs {
		out = append(out, Reason{Rule: r.Rule, Message: r.Message, Command: commandIndex(r.Command), Effect: r.Effect})
	}
	return out
}

func auditReasons(rs []policies.Reason) []audit.Reason {
	out := make([]audit.Reason, 0, len(rs))
	for _, r := range rs {
		out = append(out, audit.Reason{Rule: r.Rule, Message: r.Message, Command: commandIndex(r.Command)})
	}
	return out
}

func commandIndex(i int) *int {
	if i < 0 {
		return nil
	}
	return &i
}

// reasonSummary is the first reason's message, and how many more there are.
func reasonSummary(rs []Reason) string {
	switch len(rs) {
	case 0:
		return "no reason given"
	case 1:
		return rs[0].Message
	}
	return fmt.Sprintf("%s (and %d more reasons)", rs[0].Message, len(rs)-1)
}
