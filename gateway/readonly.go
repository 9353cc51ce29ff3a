package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/readonly"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// The read-only language (seed 004's execute): a pipeline of cat, nl, head, tail, wc,
// sort, grep and sed -n over one allowlisted file, evaluated in memory by
// executor/readonly; no shell and no process ever. Every call is decided by the policy
// (request.profile "readonly", the pipeline's stages as commands, the file's real path
// in readonly.path) and recorded like any other request; a call the language or the
// allowlist refuses is recorded as denied with the language's error. The answer pages
// the output by byte offset.

// ProfileReadonly is request.profile of a read-only language request.
const ProfileReadonly = "readonly"

// SandboxReadonly is sandbox.backend of a read-only language request.
const SandboxReadonly = "readonly"

// readonlyTimeout bounds one evaluation (a 1 MiB file takes milliseconds).
const readonlyTimeout = 30 * time.Second

// ReadonlyOptions configure the read-only language.
type ReadonlyOptions struct {
	// Allow lists what it may read: files, and directories written with a trailing
	// "/" (everything beneath them but secret-looking names: .env, *.pem, id_* keys, …,
	// which must be listed as files). Relative entries are the workspace's. Empty (the
	// default) turns the language off: /v1/execute and the execute tool are not offered.
	Allow []string
}

// allowlist builds the allowlist of o, relative entries resolved against workspace.
func (o ReadonlyOptions) allowlist(workspace string) (*readonly.Allowlist, error) {
	entries := make([]string, len(o.Allow))
	for i, e := range o.Allow {
		if e != "" && !filepath.IsAbs(e) {
			dir := strings.HasSuffix(e, "/")
			e = filepath.Join(workspace, e)
			if dir {
				e += "/"
			}
		}
		entries[i] = e
	}
	a, err := readonly.NewAllowlist(entries)
	if err != nil {
		return nil, fmt.Errorf("readonly.allow: %w", err)
	}
	return a, nil
}

// ExecuteRequest is a call of the read-only language.
type ExecuteRequest struct {
	// Command is the pipeline.
	Command string `json:"command"`
	// Start and Size page the output (executor.ReadPage): a byte offset, and at most
	// executor.MaxPageSize bytes (0 is that).
	Start int64 `json:"start"`
	Size  int   `json:"size"`
}

// ExecuteResult is the answer of a call: the decision, and the page of the output or
// the language's error. A refused call is a result (its exit code says so), not an
// error.
type ExecuteResult struct {
	Decision   string   `json:"decision"`
	DecisionID string   `json:"decision_id"`
	Reasons    []Reason `json:"reasons"`
	// Command is the pipeline normalised; File the real path read ("" when none was).
	Command string `json:"command,omitempty"`
	File    string `json:"file,omitempty"`
	// ExitCode is 0, or the language's code: 2 for a command outside the language or an
	// unusable path, 3 for a file not allowed (by the allowlist or the policy), 4 for a
	// file over 1 MiB, 1 for a read that failed or an output over 16 MiB.
	ExitCode int `json:"exit_code"`
	// Error is the language's error name (parse_error, forbidden, mvp_requires,
	// file_not_allowed, …, or denied when the policy refused), Message what it says.
	Error   string `json:"error_name,omitempty"`
	Message string `json:"message,omitempty"`
	executor.Page
}

// ReadonlyEnabled reports whether the read-only language is on (files are on its
// allowlist).
func (s *Server) ReadonlyEnabled() bool { return s.readonly != nil }

// Execute evaluates a read-only language pipeline: parse, open the file through the
// allowlist, decide, record the decision durably, evaluate, record the execution and
// answer the page asked for. Errors are *Error: the language is off (NOT_FOUND), the
// audit log cannot take the record (UNAVAILABLE), a bad page (INVALID_ARGUMENT).
func (s *Server) Execute(ctx context.Context, caller Caller, req *ExecuteRequest) (*ExecuteResult, error) {
	if s.readonly == nil {
		return nil, &Error{Code: CodeNotFound, Message: "the read-only language is not enabled on this gateway (readonly.allow lists no files)"}
	}
	switch {
	case req.Start < 0:
		return nil, invalid("start must be a byte offset from 0, got %d", req.Start)
	case req.Size < 0:
		return nil, invalid("size must be a number of bytes from 1 (at most %d), got %d", executor.MaxPageSize, req.Size)
	case len(req.Command) > s.opts.MaxScriptBytes:
		return nil, invalid("command is %d bytes, more than the %d allowed", len(req.Command), s.opts.MaxScriptBytes)
	}
	root := s.ws.Root()
	doc := &parse.Document{
		Principal: parse.Principal{Name: caller.Name, Role: string(caller.Role)},
		Request: parse.Request{ID: caller.RequestID, Source: "execute", ShellMode: "none", Profile: ProfileReadonly,
			Raw: strings.ToValidUTF8(req.Command, "\uFFFD"), Cwd: root, Workspace: root, Task: DefaultTask},
		Commands: []parse.Command{},
		Sandbox:  parse.Sandbox{Backend: SandboxReadonly},
	}
	res := &ExecuteResult{}
	p, err := readonly.Parse(req.Command)
	var f *readonly.File
	if err == nil {
		res.Command = p.String()
		doc.Readonly = &parse.Readonly{Command: res.Command, File: p.File}
		f, err = s.readonly.Open(root, p.File)
	}
	var lerr *readonly.Error
	if err != nil {
		if !errors.As(err, &lerr) {
			lerr = &readonly.Error{Code: readonly.CodeIO, Message: err.Error()}
		}
		// Refused by the language or the allowlist: recorded as a denial, nothing read.
		doc.Error = &parse.Error{Message: lerr.Message}
		rec, aerr := s.appendReadonly(ctx, caller, doc, policies.Decision{Action: policies.ActionDeny,
			Reasons: []policies.Reason{{Effect: policies.ActionDeny, Rule: "readonly." + lerr.Code, Message: lerr.Message}}})
		if aerr != nil {
			return nil, aerr
		}
		res.Decision, res.DecisionID, res.ExitCode, res.Error, res.Message = policies.ActionDeny, rec.ID, lerr.ExitCode(), lerr.Code, lerr.Message
		res.Reasons = []Reason{{Effect: policies.ActionDeny, Rule: "readonly." + lerr.Code, Message: lerr.Message}}
		return res, nil
	}
	defer f.Close()
	res.File = f.Path()
	doc.Readonly.Path = f.Path()
	real := *p
	real.File = f.Path()
	parsed := parse.Script(real.String(), parse.Options{Cwd: root, Workspace: root, MaxBytes: max(s.opts.MaxScriptBytes, 2*len(real.String()))})
	doc.Commands, doc.Features = parsed.Commands, parsed.Features

	decision, derr := s.engine.Decide(ctx, doc)
	if derr != nil {
		caller.log().Warn("policy evaluation failed: denying", "error", derr.Error())
	}
	s.metrics.decisions.WithLabelValues(decision.Action, decisiveRule(decision)).Inc()
	rec, err := s.appendReadonly(ctx, caller, doc, decision)
	if err != nil {
		return nil, err
	}
	res.Decision, res.DecisionID, res.Reasons = decision.Action, rec.ID, apiReasons(decision.Reasons)
	if decision.Action != policies.ActionAllow {
		// ask has no human to go to here: the language reads, it never needs one.
		res.ExitCode, res.Error = 3, "denied"
		res.Message = "the policy refused this read: " + reasonSummary(res.Reasons)
		return res, nil
	}

	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, readonlyTimeout)
	out, err := readonly.Run(rctx, p, f)
	cancel()
	exec := &audit.Execution{DurationMS: time.Since(start).Milliseconds(), StdoutBytes: int64(len(out))}
	if err != nil {
		if !errors.As(err, &lerr) {
			lerr = &readonly.Error{Code: readonly.CodeIO, Message: err.Error()}
		}
		res.ExitCode, res.Error, res.Message = lerr.ExitCode(), lerr.Code, lerr.Message
		exec.Error = Truncate(lerr.Message, 2000)
		out = nil
	}
	exec.ExitCode = res.ExitCode
	s.recordReadonly(caller, rec.ID, decision.Revision, exec)
	page, perr := executor.ReadPage(bytes.NewReader(out), int64(len(out)), req.Start, req.Size)
	if perr != nil {
		return nil, invalid("%s", perr)
	}
	res.Page = page
	return res, nil
}

// appendReadonly appends the decision record of a read-only language call.
func (s *Server) appendReadonly(ctx context.Context, caller Caller, doc *parse.Document, decision policies.Decision) (audit.Record, error) {
	input, err := json.Marshal(doc)
	if err != nil {
		return audit.Record{}, fmt.Errorf("encode policy input: %w", err)
	}
	dm := map[string]string{"endpoint": caller.Endpoint, "remote_addr": caller.RemoteAddr, "sandbox": SandboxReadonly}
	if caller.Source != "" {
		dm["source"] = caller.Source
	}
	detail, _ := json.Marshal(dm)
	rec, err := s.append(ctx, audit.Record{
		Kind: audit.KindDecision, Principal: audit.Principal{Name: caller.Name, Role: string(caller.Role)},
		RequestID: caller.RequestID, Input: input, Decision: decision.Action, Reasons: auditReasons(decision.Reasons),
		Revision: decision.Revision, Detail: detail,
	})
	if err != nil {
		var re *audit.RecordError
		if errors.As(err, &re) {
			return rec, &Error{Code: CodeInvalidArgument, Err: err,
				Message: fmt.Sprintf("the request cannot be recorded in the audit log (%s: %s): nothing was read", re.Field, re.Reason)}
		}
		return rec, &Error{Code: CodeUnavailable, Err: err, Message: "the audit log cannot record the decision, so nothing was read: retry later"}
	}
	return rec, nil
}

// recordReadonly appends the execution record of an allowed read-only language call.
func (s *Server) recordReadonly(caller Caller, decisionID, revision string, exec *audit.Execution) {
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	dm := map[string]string{"endpoint": caller.Endpoint, "sandbox": SandboxReadonly}
	if caller.Source != "" {
		dm["source"] = caller.Source
	}
	detail, _ := json.Marshal(dm)
	_, err := s.append(ctx, audit.Record{
		Kind: audit.KindExecution, Principal: audit.Principal{Name: caller.Name, Role: string(caller.Role)},
		RequestID: caller.RequestID, DecisionID: decisionID, Revision: revision, Execution: exec, Detail: detail,
	})
	if err != nil {
		caller.log().Error("cannot record the execution of a read", "decision_id", decisionID, "error", err.Error())
	}
}

// executeRequestFields are the members of an execute request, with their JSON types.
var executeRequestFields = map[string]string{"command": "a string", "start": "an integer", "size": "an integer"}

// DecodeExecuteRequest reads the JSON form of an ExecuteRequest (the body of POST
// /v1/execute) as strictly as DecodeTaskRequest: one object, valid UTF-8, no unknown or
// repeated members, each of its exact type. Errors are INVALID_ARGUMENT naming the
// member; what the command says is the language's to judge.
func DecodeExecuteRequest(raw []byte) (*ExecuteRequest, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid("the request body is empty: send a JSON object such as {\"command\": \"cat README.md | head -n 20\"}")
	}
	if !utf8.Valid(raw) {
		return nil, invalid("the request body is not valid UTF-8")
	}
	members, err := objectMembers(raw, executeRequestFields)
	if err != nil {
		return nil, err
	}
	r := &ExecuteRequest{}
	for _, m := range members {
		switch m.name {
		case "command":
			r.Command, err = taskString(m.name, m.value)
		case "start":
			r.Start, err = taskInt(m.name, m.value)
		case "size":
			var n int64
			if n, err = taskInt(m.name, m.value); err == nil {
				if n < 1 {
					err = invalid("size must be a number of bytes from 1 (at most %d are returned)", executor.MaxPageSize)
				}
				r.Size = int(min(n, executor.MaxPageSize))
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}
