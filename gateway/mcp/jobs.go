package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/jobs"
)

// The background job tools: job_run, job_status, job_tail, job_wait, job_list and
// job_kill. Each answers the job call's JSON object (gateway.DoJob), the same bytes
// as POST /v1/jobs and `cmdgate job` print, as its text and its structured content; a
// call that failed (ok false) is a tool error.

// JobPromptTools are the system prompt's lines for the job tools, when jobs are on.
var JobPromptTools = []string{
	"`job_run`, `job_status`, `job_tail`, `job_wait`, `job_list`, `job_kill` (cmdgate's MCP server): start a long command (a dev server, a test suite, a build) as a background job decided by the same policy, then read its output and state later, wait for it or stop it",
}

// Job tool descriptions and schemas.
const (
	JobRunDescription = "Start a command as a background job: the security policy decides it like any command and it runs in the sandbox, on after this call, with its output kept in logs. Waits up to snapshot_after_ms (at most 10000, default 10000; sooner if the job ends) and returns job_id, state (running, exited, killed, failed), the decision and a snapshot of the end of stdout and stderr. Use job_tail, job_wait and job_kill with the job_id."
	JobRunSchema      = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command as a shell script. Give command or argv."},
    "argv": {"type": "array", "items": {"type": "string"}, "description": "The command as an argument vector. Give command or argv."},
    "cwd": {"type": "string", "description": "Working directory inside the workspace (default: its root)."},
    "shell_mode": {"type": "string", "enum": ["default", "direct"], "description": "default runs through the shell; direct executes argv as is."},
    "task": {"type": "string", "description": "Task name (default: default)."},
    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Kill the job after this many milliseconds (default: no limit but the gateway's)."},
    "snapshot_after_ms": {"type": "integer", "minimum": 0, "maximum": 10000, "description": "Wait this long for the job to end before answering (default 10000)."},
    "max_bytes": {"type": "integer", "minimum": 1, "description": "Bytes of each log's end in the snapshot (default 65536)."},
    "wait_ms": {"type": "integer", "minimum": 0, "description": "When the policy asks a human, wait up to this long for the approval (default: the gateway's approval wait)."}
  }
}`
	JobStatusDescription = "A background job's state (running, exited, killed, failed), exit_code or signal, times and observed output bytes."
	JobTailDescription   = "The end of a background job's stdout and stderr (default the last 65536 bytes and 50 lines of each), as UTF-8 with invalid bytes replaced (encoding utf-8-lossy), with the bytes observed and included."
	JobWaitDescription   = "Wait until a background job ends or timeout_ms passes (default 30000, at most 300000); finished and timed_out say which, with the job's state."
	JobListDescription   = "Your background jobs, newest first: job_id, state, started_at and more; truncated says the limit cut the list."
	JobKillDescription   = "Stop a running background job's whole process tree: TERM (default; KILL once the grace passed), INT, or KILL; any other signal name is KILL. Killing a finished job is invalid_state."
	jobIDSchema          = `"job_id": {"type": "string", "description": "The job's id, or a unique prefix of 6 or more characters."}`
)

var jobToolSchemas = map[string]string{
	"job_status": `{"type": "object", "properties": {` + jobIDSchema + `}, "required": ["job_id"]}`,
	"job_tail": `{"type": "object", "properties": {` + jobIDSchema + `,
    "max_bytes": {"type": "integer", "minimum": 1, "description": "At most this many bytes of each log (default 65536)."},
    "lines": {"type": "integer", "minimum": 0, "description": "At most this many lines of each (default 50; 0: no line limit)."}}, "required": ["job_id"]}`,
	"job_wait": `{"type": "object", "properties": {` + jobIDSchema + `,
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 300000, "description": "Wait at most this long (default 30000)."}}, "required": ["job_id"]}`,
	"job_list": `{"type": "object", "properties": {
    "limit": {"type": "integer", "minimum": 0, "description": "At most this many jobs (0: all)."},
    "state": {"type": "string", "enum": ["running", "exited", "killed", "failed"], "description": "Only jobs in this state."}}}`,
	"job_kill": `{"type": "object", "properties": {` + jobIDSchema + `,
    "signal": {"type": "string", "description": "TERM (default), INT or KILL; any other name is KILL."}}, "required": ["job_id"]}`,
}

// addJobTools registers the job tools when the gateway has jobs.
func (t *tools) addJobTools(s *sdk.Server) {
	if t.g.JobRoot() == "" {
		return
	}
	s.AddTool(&sdk.Tool{Name: "job_run", Description: JobRunDescription, InputSchema: rawSchema(JobRunSchema)}, t.jobRun)
	for _, tool := range []struct{ name, op, description string }{
		{"job_status", gateway.JobStatus, JobStatusDescription},
		{"job_tail", gateway.JobTailOp, JobTailDescription},
		{"job_wait", gateway.JobWait, JobWaitDescription},
		{"job_list", gateway.JobList, JobListDescription},
		{"job_kill", gateway.JobKill, JobKillDescription},
	} {
		s.AddTool(&sdk.Tool{Name: tool.name, Description: tool.description, InputSchema: rawSchema(jobToolSchemas[tool.name])}, t.jobCall(tool.name, tool.op))
	}
}

// jobResult is a job call's answer as a tool result.
func jobResult(reply []byte) *sdk.CallToolResult {
	var probe struct {
		OK bool `json:"ok"`
	}
	json.Unmarshal(reply, &probe)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(reply)}},
		StructuredContent: json.RawMessage(reply), IsError: !probe.OK}
}

func jobInvalid(op, format string, args ...any) *sdk.CallToolResult {
	return jobResult(gateway.JobReplyError(op, &gateway.JobError{Code: jobs.CodeInvalidInput, Message: fmt.Sprintf(format, args...)}))
}

// jobRun is job_run: the arguments are read as POST /v1/jobs reads its body.
func (t *tools) jobRun(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
	defer t.recover("job_run", &res, &err)
	caller, err := t.caller(req, "job_run")
	if err != nil {
		return nil, err
	}
	args := []byte(req.Params.Arguments)
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	call, err := t.g.DecodeJobRun(args)
	if err != nil {
		je := gateway.AsJobError(err)
		return jobResult(gateway.JobReplyError(gateway.JobRun, je)), nil
	}
	var given struct {
		WaitMS *int64 `json:"wait_ms"`
	}
	json.Unmarshal(args, &given)
	if given.WaitMS == nil { // as exec_command: wait for a human up to the gateway's approval wait
		call.Run.Wait = t.g.Options().Approvals.Wait
	}
	var reply []byte
	t.withProgress(ctx, req, &caller, "starting the job", func() { reply, _ = t.g.DoJob(ctx, caller, call) })
	return jobResult(reply), nil
}

// jobArgs are the arguments of the other job tools.
type jobArgs struct {
	JobID     *string `json:"job_id"`
	MaxBytes  *int64  `json:"max_bytes"`
	Lines     *int64  `json:"lines"`
	TimeoutMS *int64  `json:"timeout_ms"`
	Limit     *int64  `json:"limit"`
	State     *string `json:"state"`
	Signal    *string `json:"signal"`
}

// jobToolArgs lists the arguments each tool takes.
var jobToolArgs = map[string][]string{
	"job_status": {"job_id"},
	"job_tail":   {"job_id", "max_bytes", "lines"},
	"job_wait":   {"job_id", "timeout_ms"},
	"job_list":   {"limit", "state"},
	"job_kill":   {"job_id", "signal"},
}

// jobCall is a job tool other than job_run.
func (t *tools) jobCall(tool, op string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer t.recover(tool, &res, &err)
		caller, err := t.caller(req, tool)
		if err != nil {
			return nil, err
		}
		raw := []byte(req.Params.Arguments)
		var members map[string]json.RawMessage
		if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
			if !utf8.Valid(raw) {
				return jobInvalid(op, "the arguments are not valid UTF-8"), nil
			}
			if err := json.Unmarshal(raw, &members); err != nil {
				return jobInvalid(op, "the arguments are not a JSON object: %v", err), nil
			}
		}
		known := map[string]bool{}
		for _, name := range jobToolArgs[tool] {
			known[name] = true
		}
		for name := range members {
			if !known[name] {
				return jobInvalid(op, "unknown argument %q (%s takes %v)", gateway.Truncate(name, 64), tool, jobToolArgs[tool]), nil
			}
		}
		var in jobArgs
		if members != nil {
			if err := json.Unmarshal(raw, &in); err != nil {
				return jobInvalid(op, "%v", err), nil
			}
		}
		call := gateway.JobCall{Op: op}
		if known["job_id"] {
			if in.JobID == nil {
				return jobInvalid(op, "job_id is required"), nil
			}
			call.ID = *in.JobID
		}
		if in.MaxBytes != nil {
			if *in.MaxBytes <= 0 {
				return jobInvalid(op, "max_bytes must be 1 or more"), nil
			}
			call.MaxBytes = *in.MaxBytes
		}
		if op == gateway.JobTailOp {
			call.Lines = gateway.DefaultTailLines
			if in.Lines != nil {
				if *in.Lines < 0 {
					return jobInvalid(op, "lines must not be negative"), nil
				}
				call.Lines = int(min(*in.Lines, 1<<30))
			}
		}
		if in.TimeoutMS != nil {
			if *in.TimeoutMS <= 0 {
				return jobInvalid(op, "timeout_ms must be 1 or more"), nil
			}
			call.Timeout = time.Duration(min(*in.TimeoutMS, gateway.MaxJobWait.Milliseconds()+1)) * time.Millisecond
		}
		if in.Limit != nil {
			if *in.Limit < 0 {
				return jobInvalid(op, "limit must not be negative"), nil
			}
			call.Limit = int(min(*in.Limit, 1<<30))
		}
		if in.State != nil {
			call.State = *in.State
		}
		if in.Signal != nil {
			call.Signal = *in.Signal
		}
		var reply []byte
		t.withProgress(ctx, req, &caller, "waiting for the job", func() { reply, _ = t.g.DoJob(ctx, caller, call) })
		return jobResult(reply), nil
	}
}

// recover turns a panic of a raw tool handler into an internal tool error.
func (t *tools) recover(tool string, res **sdk.CallToolResult, err *error) {
	if p := recover(); p != nil {
		t.g.Logger().Error("panic in an MCP tool call", "tool", tool, "error", fmt.Sprint(p))
		*res, *err = jobResult(gateway.JobReplyError(strings.TrimPrefix(tool, "job_"), &gateway.JobError{Code: gateway.JobCodeInternal, Message: "internal error"})), nil
	}
}
