package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/gateway"
)

// The task tools: task_create, task_list, task_show and task_delete, over the same core
// calls as /v1/tasks. Each answers the task document (task_list: {"tasks": [...]}) as
// its text and its structured content; a call that failed is a tool error whose text
// and structured content are the HTTP API's error object, {"error": {"code",
// "message"}}. They exist only on a gateway with tasks.

// TaskPromptTools are the system prompt's lines for the task tools, when tasks are on.
var TaskPromptTools = []string{
	"`task_create`, `task_show`, `task_list`, `task_delete` (cmdgate's MCP server): create a task's own Docker environment with a repository cloned into /workspace/project and its dependencies installed, wait until it is ready, then run commands there with `execute_command` and its `task` argument; delete the task when done",
}

// Task tool descriptions and schemas.
const (
	TaskCreateDescription = "Create a task's execution environment: a Docker container of its own, named coding-agent-exec-{task_id}, with repo_url cloned into /workspace/project (the default branch, ref, or a pull request's head) and its dependencies installed, as your principal. Returns the task: task_id, state (created, initializing, ready, running, stopped, deleted, failed), reason, steps (the clone and installs with their output), limits. Preparing takes a while: pass wait_ms to wait until it is ready (or failed), or call task_show with wait_ms. Then run commands with execute_command and task set to the task_id; delete the task with task_delete when done."
	TaskCreateSchema      = `{
  "type": "object",
  "properties": {
    "repo_url": {"type": "string", "description": "The repository to clone: an http or https URL without credentials (the gateway authenticates to the hosts it knows)."},
    "ref": {"type": "string", "description": "Branch, tag or commit to check out (default: the default branch). Not with pull_request."},
    "pull_request": {"type": "integer", "minimum": 1, "description": "Check out this pull request's (merge request's) head."},
    "target_branch": {"type": "string", "description": "With pull_request: the branch it merges into, fetched too so that the diff can be read."},
    "image": {"type": "string", "description": "The container image (default: the gateway's)."},
    "network": {"type": "string", "enum": ["external", "none"], "description": "external: the outside world, never the host's services (default: the gateway's); none: no network."},
    "limits": {"type": "object", "properties": {
      "cpus": {"type": "number", "exclusiveMinimum": 0, "description": "CPUs (default 2)."},
      "memory": {"type": ["integer", "string"], "description": "Memory: bytes, or a size such as \"4g\" (default 4g)."},
      "pids": {"type": "integer", "minimum": 16, "description": "Most processes at once (default 1024)."},
      "disk": {"type": ["integer", "string"], "description": "Workspace size: bytes, or a size such as \"10g\" (default 10g); the task says whether the engine enforces it."},
      "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Longest run of one command (default and most: the gateway's, 1800)."}
    }, "additionalProperties": false},
    "auto_install_deps": {"type": "boolean", "description": "Install the dependencies the project's manifests call for (default: the gateway's, true)."},
    "clone_depth": {"type": "integer", "minimum": 0, "description": "Commits of history to clone (default 1; 0: the whole history)."},
    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 600000, "description": "Wait up to this long for the task to be ready (or failed) before answering (default: answer at once)."}
  },
  "required": ["repo_url"],
  "additionalProperties": false
}`
	TaskShowDescription   = "A task's state and document: state, reason, steps, commit, limits, container_name. With wait_ms, waits up to that long while the task is still being prepared (created, initializing)."
	TaskListDescription   = "Your tasks, newest first (an auditor sees everyone's): task_id, state, repo_url and more."
	TaskDeleteDescription = "Delete a task: stop its container (10 s grace, then killed), remove it with its workspace, and mark the task deleted. Returns the task."
	taskIDSchema          = `"task_id": {"type": "string", "description": "The task's id (a UUID, as task_create answered)."}`
)

var taskToolSchemas = map[string]string{
	"task_show": `{"type": "object", "properties": {` + taskIDSchema + `,
    "wait_ms": {"type": "integer", "minimum": 0, "maximum": 600000, "description": "Wait up to this long while the task is being prepared (default: answer at once)."}},
  "required": ["task_id"], "additionalProperties": false}`,
	"task_list": `{"type": "object", "properties": {
    "state": {"type": "string", "enum": ["live", "created", "initializing", "ready", "running", "stopped", "deleted", "failed"], "description": "Only tasks in this state (live: all but deleted and failed; default: every state)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "At most this many (default 100)."}},
  "additionalProperties": false}`,
	"task_delete": `{"type": "object", "properties": {` + taskIDSchema + `}, "required": ["task_id"], "additionalProperties": false}`,
}

// taskToolArgs lists the arguments each tool but task_create takes.
var taskToolArgs = map[string][]string{
	"task_show":   {"task_id", "wait_ms"},
	"task_list":   {"state", "limit"},
	"task_delete": {"task_id"},
}

// addTaskTools registers the task tools when the gateway has tasks.
func (t *tools) addTaskTools(s *sdk.Server) {
	if !t.g.TasksEnabled() {
		return
	}
	s.AddTool(&sdk.Tool{Name: "task_create", Description: TaskCreateDescription, InputSchema: rawSchema(TaskCreateSchema)}, t.taskCreate)
	for _, tool := range []struct{ name, description string }{
		{"task_show", TaskShowDescription},
		{"task_list", TaskListDescription},
		{"task_delete", TaskDeleteDescription},
	} {
		s.AddTool(&sdk.Tool{Name: tool.name, Description: tool.description, InputSchema: rawSchema(taskToolSchemas[tool.name])}, t.taskCall(tool.name))
	}
}

// taskResult is a task call's answer as a tool result: v (a task, or the list) when
// err is nil, else the error object.
func taskResult(v any, err error) *sdk.CallToolResult {
	isError := err != nil
	if isError {
		e := gateway.AsError(err)
		v = map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}}
	}
	b, merr := json.Marshal(v)
	if merr != nil {
		b, isError = []byte(`{"error":{"code":"INTERNAL","message":"internal error"}}`), true
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b), IsError: isError}
}

// taskCreate is task_create: the arguments are read as POST /v1/tasks reads its body.
func (t *tools) taskCreate(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
	defer t.recoverTask("task_create", &res, &err)
	caller, err := t.caller(req, "task_create")
	if err != nil {
		return nil, err
	}
	args := []byte(req.Params.Arguments)
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	r, err := gateway.DecodeTaskRequest(args)
	if err != nil {
		return taskResult(nil, err), nil
	}
	var task *gateway.Task
	t.withProgress(ctx, req, &caller, "preparing the task", func() { task, err = t.g.CreateTask(ctx, caller, r) })
	return taskResult(task, err), nil
}

// taskArgs are the arguments of the other task tools.
type taskArgs struct {
	TaskID *string `json:"task_id"`
	WaitMS *int64  `json:"wait_ms"`
	State  *string `json:"state"`
	Limit  *int64  `json:"limit"`
}

// taskCall is a task tool other than task_create.
func (t *tools) taskCall(tool string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer t.recoverTask(tool, &res, &err)
		caller, err := t.caller(req, tool)
		if err != nil {
			return nil, err
		}
		raw := []byte(req.Params.Arguments)
		var members map[string]json.RawMessage
		if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
			if !utf8.Valid(raw) {
				return taskResult(nil, gateway.Invalid("the arguments are not valid UTF-8")), nil
			}
			if err := json.Unmarshal(raw, &members); err != nil {
				return taskResult(nil, gateway.Invalid("the arguments are not a JSON object: %v", err)), nil
			}
		}
		known := map[string]bool{}
		for _, name := range taskToolArgs[tool] {
			known[name] = true
		}
		for name := range members {
			if !known[name] {
				return taskResult(nil, gateway.Invalid("unknown argument %q (%s takes %v)", gateway.Truncate(name, 64), tool, taskToolArgs[tool])), nil
			}
		}
		var in taskArgs
		if members != nil {
			if err := unmarshalArgs(req, &in); err != nil {
				return taskResult(nil, gateway.Invalid("%v", err)), nil
			}
		}
		if known["task_id"] && in.TaskID == nil {
			return taskResult(nil, gateway.Invalid("task_id is required")), nil
		}
		switch tool {
		case "task_show":
			var wait time.Duration
			if in.WaitMS != nil {
				if *in.WaitMS < 0 {
					return taskResult(nil, gateway.Invalid("wait_ms must not be negative")), nil
				}
				wait = time.Duration(min(*in.WaitMS, gateway.MaxTaskWait.Milliseconds())) * time.Millisecond
			}
			var task *gateway.Task
			t.withProgress(ctx, req, &caller, "waiting for the task", func() { task, err = t.g.WaitTask(ctx, caller, *in.TaskID, wait) })
			return taskResult(task, err), nil
		case "task_list":
			state, limit := "", 100
			if in.State != nil {
				state = *in.State
			}
			if in.Limit != nil {
				if *in.Limit < 1 || *in.Limit > 1000 {
					return taskResult(nil, gateway.Invalid("limit must be an integer from 1 to 1000")), nil
				}
				limit = int(*in.Limit)
			}
			list, err := t.g.Tasks(ctx, caller, state, limit)
			if list == nil {
				list = []*gateway.Task{}
			}
			return taskResult(struct {
				Tasks []*gateway.Task `json:"tasks"`
			}{list}, err), nil
		default: // task_delete
			task, err := t.g.DeleteTask(ctx, caller, *in.TaskID)
			return taskResult(task, err), nil
		}
	}
}

// recoverTask turns a panic of a task tool's handler into an internal tool error.
func (t *tools) recoverTask(tool string, res **sdk.CallToolResult, err *error) {
	if p := recover(); p != nil {
		t.g.Logger().Error("panic in an MCP tool call", "tool", tool, "error", p)
		*res, *err = taskResult(nil, gateway.Errorf(gateway.CodeInternal, "internal error")), nil
	}
}
