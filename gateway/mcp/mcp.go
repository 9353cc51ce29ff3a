// Package mcp is cmdgate's MCP server: a front of the gateway's core (gateway.Server's
// Exec) built on the official Go SDK, served over streamable HTTP at /mcp on the HTTP
// front's own listener (package gateway/httpapi), behind the same bearer tokens as the
// HTTP API, and over stdio (StdioTransport, for `cmdgate mcp`).
//
// # Tools
//
//   - exec_command: runs a command once in the workspace and returns stdout, stderr and
//     the exit code. Its name, description and input schema are the exec_command tool
//     definition, verbatim; the SDK enforces the schema (a missing or mistyped argument
//     is a tool error naming it) and fills in its defaults. Its semantics are POST
//     /v1/exec's with the command as an argument vector: the policy decides, the
//     decision is recorded before anything runs, and the sandbox runs it. The result is
//     {cwd, command, exit_code, stdout, stderr, stdout_truncated, stderr_truncated,
//     timed_out, duration_ms, stdout_bytes, stderr_bytes, decision, decision_id} as
//     structured content, and the same JSON as text. A command the policy asks a human
//     about waits for the approval up to the gateway's approval wait (with progress
//     notifications), then answers its result. A denial, an approval still pending
//     (APPROVAL_PENDING with the approval's id) and every error are tool results with
//     isError true whose text gives the code, the message, the reasons and the decision
//     id, so that the model can change course.
//   - shell_exec(uri, cmd, shell_path?) and system_info: the shell tool pair of the
//     Mutsumi agent with its answers (shell.go): STDOUT/STDERR/ERROR sections, "Command
//     executed with no output.", the missing-argument error, and "User rejected the
//     shell command execution." with the reasons when the policy refuses. uri is a
//     directory of the workspace (a path or a file:// URI); shell_path must name the
//     shell commands run with. system_info reports the platform, the shell, the package
//     managers found, the sandbox and the network.
//   - execute_command(command, task?): the command executor's tool of the per-task
//     design, a shell command answering {exit_code, stdout, stderr, duration_ms}: with
//     task (a gateway with tasks only), in /workspace/project of that task's container;
//     without, at the workspace's root.
//   - task_create, task_show, task_list, task_delete (tasks.go, a gateway with tasks
//     only): the per-task Docker environments of /v1/tasks.
//   - execute(command, start?, size?) (execute.go, a gateway whose readonly.allow lists
//     files): the read-only pipeline language of POST /v1/execute; its description names
//     the files it may read. A reader token's session has execute and read_output only.
//   - read_output(output_id, stream?, start?, size?) (outputs.go, a gateway that keeps
//     outputs): a page of the whole output of a result that was cut, as GET
//     /v1/outputs/{id}. exec_command's and execute_command's results name the output
//     (output_id) and say how to read it (more) when they were cut.
//
// # Sessions and principals
//
// Every HTTP request to /mcp is authenticated by the gateway (agent role; 401 and 429
// as for the HTTP API, refusals audited) and by the SDK's bearer-token middleware,
// which binds each MCP session to its principal: a session id presented with another
// principal's token is refused (403). Every tool call is audited like an HTTP request,
// with detail.source "mcp" and the tool's name as detail.endpoint. A cancelled call
// stops the command's whole process tree, as its timeout does.
//
// The server announces itself as cmdgate with its version, and its instructions are
// the gateway's system prompt (GET /v1/policy/prompt), which lists these tools; the same
// text is the MCP prompt PromptName, generated when asked.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/httpapi"
)

// Path is where Mount serves the MCP server.
const Path = "/mcp"

// ExecCommandSchema is exec_command's input schema, verbatim.
const ExecCommandSchema = `{
  "type": "object",
  "properties": {
    "cwd": {
      "type": "string",
      "description": "Working directory path in workspace."
    },
    "command": {
      "type": "array",
      "items": { "type": "string" },
      "description": "Only the target command tokens to run (e.g. bun run dev)."
    },
    "shell_mode": {
      "type": "string",
      "enum": ["default", "direct"],
      "default": "default",
      "description": "Use default to apply OS shell wrapper automatically (default: default)."
    },
    "stdin": {
      "type": "string",
      "description": "UTF-8 stdin text."
    },
    "timeout_ms": {
      "type": "number",
      "default": 30000,
      "description": "Execution timeout in milliseconds (default: 30000)."
    },
    "max_output_chars": {
      "type": "number",
      "default": 200000,
      "description": "Per-stream output char limit (default: 200000)."
    }
  },
  "required": ["cwd", "command"]
}`

// ExecCommandDescription is exec_command's description, verbatim.
const ExecCommandDescription = "Runs a command once in the workspace and returns stdout, stderr, and exit code."

// execInput is exec_command's arguments, after the SDK checked them against the schema
// and filled in its defaults.
type execInput struct {
	Cwd            string   `json:"cwd"`
	Command        []string `json:"command"`
	ShellMode      string   `json:"shell_mode"`
	Stdin          string   `json:"stdin"`
	TimeoutMS      *float64 `json:"timeout_ms"`
	MaxOutputChars *float64 `json:"max_output_chars"`
}

// execOutput is exec_command's result: exec_command's output plus the decision.
type execOutput struct {
	executor.Result
	Decision   string `json:"decision"`
	DecisionID string `json:"decision_id"`
	// More says how to read what was cut (read_output), when a stream was.
	More string `json:"more,omitempty"`
}

// PromptTools are the system prompt's lines for this server's tools.
var PromptTools = []string{
	"`exec_command` (cmdgate's MCP server): run a command given as an argument vector, in a directory of the workspace, and get its exit code, stdout and stderr",
	"`shell_exec` (cmdgate's MCP server): run a shell command in a directory of the workspace and get its STDOUT, STDERR and ERROR sections",
	"`system_info` (cmdgate's MCP server): the platform, the shell, the package managers, the sandbox and the network",
	"`execute_command` (cmdgate's MCP server): run a shell command at the workspace's root and get exit_code, stdout, stderr and duration_ms",
}

// executeTaskPromptTool and executeTaskOnlyPromptTool are execute_command's line of
// the prompt on a gateway with tasks, and on one that runs commands in tasks only, in
// place of PromptTools' own.
const (
	executeTaskPromptTool     = "`execute_command` (cmdgate's MCP server): run a shell command, with `task` in /workspace/project of that task's container (else at the workspace's root), and get exit_code, stdout, stderr and duration_ms"
	executeTaskOnlyPromptTool = "`execute_command` (cmdgate's MCP server): run a shell command in /workspace/project of the container of the task named by `task`, and get exit_code, stdout, stderr and duration_ms"
)

// Tools are the system prompt's lines for the tools this server has over g: the job
// tools only when g has jobs, the task tools (and execute_command's task) only when g
// has tasks, and so on for each feature.
func Tools(g *gateway.Server) []string { return ToolsFor(g.Features()) }

// ToolsFor are Tools for a gateway offering f.
func ToolsFor(f gateway.Features) []string {
	tools := PromptTools
	if f.Tasks {
		execute := executeTaskPromptTool
		if f.TaskOnly {
			execute = executeTaskOnlyPromptTool
		}
		tools = slices.Clone(PromptTools)
		for i, line := range tools {
			if strings.HasPrefix(line, "`execute_command`") {
				tools[i] = execute
			}
		}
	}
	if f.Outputs {
		tools = slices.Concat(tools, OutputPromptTools)
	}
	if f.Readonly {
		tools = slices.Concat(tools, ReadonlyPromptTools)
	}
	if f.Jobs {
		tools = slices.Concat(tools, JobPromptTools)
	}
	if f.Tasks {
		tools = slices.Concat(tools, TaskPromptTools)
	}
	return tools
}

// Options configures New.
type Options struct {
	// Principal, when set, is who every call comes from (the stdio server, started
	// with the agent's token); otherwise each call's principal is its session's bearer
	// token (streamable HTTP behind Mount).
	Principal *gateway.Token
	// Reader builds the server of reader tokens: execute and read_output only (a
	// Principal with the reader role implies it).
	Reader bool
}

// New builds the MCP server over the gateway's core. Its instructions are the
// gateway's system prompt as it is now: set the prompt's tools (SetPromptTools) first.
func New(g *gateway.Server, version string, opts Options) *sdk.Server {
	reader := opts.Reader || (opts.Principal != nil && opts.Principal.Role == gateway.RoleReader)
	instructions := g.Prompt()
	if reader {
		instructions = readerInstructions(g)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "cmdgate", Version: version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       g.Logger(),
		Capabilities: &sdk.ServerCapabilities{},
	})
	t := &tools{g: g, principal: opts.Principal}
	if reader {
		// A reader runs nothing: the read-only language and its pages only.
		t.addExecuteTools(s)
		t.addOutputTools(s)
		return s
	}
	sdk.AddTool(s, &sdk.Tool{Name: "exec_command", Description: ExecCommandDescription, InputSchema: rawSchema(ExecCommandSchema)}, recovered(g, t.execCommand))
	t.addShellTools(s)
	t.addJobTools(s)
	t.addTaskTools(s)
	t.addOutputTools(s)
	t.addExecuteTools(s)
	sdk.AddTool(s, executeCommandTool(g), recovered(g, t.executeCommand))
	// The system prompt as an MCP prompt too, generated when asked: it follows policy
	// reloads, where the instructions are the prompt of the server's start.
	s.AddPrompt(&sdk.Prompt{Name: PromptName, Description: "How to work through cmdgate here: the workspace, the sandbox, the network, the tools and the commands the policy allows."},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Description: "cmdgate's system prompt for this gateway",
				Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: g.Prompt()}}}}, nil
		})
	return s
}

// PromptName is the name of the MCP prompt that holds the system prompt.
const PromptName = "cmdgate-system-prompt"

// ExecuteCommandDescription and ExecuteCommandSchema define execute_command, the
// command executor's tool of the per-task design: a shell command in the task's
// environment, which on a gateway without tasks is the workspace. On a gateway with
// tasks, ExecuteCommandTaskDescription and ExecuteCommandTaskSchema define it, with
// the task argument that names the task's container.
const (
	ExecuteCommandDescription = "Execute a shell command in the task's execution environment (the workspace, at its root) and return exit_code, stdout, stderr and duration_ms. cmdgate's security policy decides whether it runs."
	ExecuteCommandSchema      = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to execute."}
  },
  "required": ["command"]
}`
	ExecuteCommandTaskDescription = "Execute a shell command in a task's execution environment and return exit_code, stdout, stderr and duration_ms. With task (the task_id task_create answered, once the task is ready), the command runs in /workspace/project of that task's Docker container, where the project is cloned; without, at the workspace's root. cmdgate's security policy decides whether it runs."
	ExecuteCommandTaskSchema      = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to execute."},
    "task": {"type": "string", "description": "The task's id (task_create): run in /workspace/project of its container."}
  },
  "required": ["command"]
}`
	// ExecuteCommandTaskOnlyDescription and ExecuteCommandTaskOnlySchema define it on a
	// gateway that runs commands in task containers only (sandbox docker).
	ExecuteCommandTaskOnlyDescription = "Execute a shell command in a task's execution environment, /workspace/project of the task's Docker container where the project is cloned, and return exit_code, stdout, stderr and duration_ms. task is the task_id task_create answered, once the task is ready. cmdgate's security policy decides whether it runs."
	ExecuteCommandTaskOnlySchema      = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to execute."},
    "task": {"type": "string", "description": "The task's id (task_create): run in /workspace/project of its container."}
  },
  "required": ["command", "task"]
}`
)

// executeCommandTool is execute_command's definition for g's configuration: the task
// argument only when g has tasks, and required when g runs commands in tasks only.
func executeCommandTool(g *gateway.Server) *sdk.Tool {
	tool := &sdk.Tool{Name: "execute_command", Description: ExecuteCommandDescription, InputSchema: rawSchema(ExecuteCommandSchema)}
	switch {
	case g.Options().Sandbox == gateway.SandboxDocker:
		tool.Description, tool.InputSchema = ExecuteCommandTaskOnlyDescription, rawSchema(ExecuteCommandTaskOnlySchema)
	case g.TasksEnabled():
		tool.Description, tool.InputSchema = ExecuteCommandTaskDescription, rawSchema(ExecuteCommandTaskSchema)
	}
	return tool
}

type executeInput struct {
	Command string `json:"command"`
	Task    string `json:"task,omitempty"`
}

// executeOutput is execute_command's result.
type executeOutput struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS int64  `json:"duration_ms"`
	// OutputID and More name the whole output when a stream was cut (read_output).
	OutputID string `json:"output_id,omitempty"`
	More     string `json:"more,omitempty"`
}

// executeCommand is execute_command: the command as a script at the workspace's root,
// or, with task, in /workspace/project of the task's container.
func (t *tools) executeCommand(ctx context.Context, req *sdk.CallToolRequest, in executeInput) (*sdk.CallToolResult, *executeOutput, error) {
	caller, err := t.caller(req, "execute_command")
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, nil, errors.New("INVALID_ARGUMENT: command is empty")
	}
	request := &gateway.Request{Script: in.Command, ShellMode: executor.ShellDefault}
	if in.Task != "" {
		// task names a task of this gateway, never a task name of the workspace's: the
		// command must not run on the host when the caller meant a container (a
		// gateway without tasks answers that it has none).
		if _, err := t.g.Task(ctx, caller, in.Task); err != nil {
			return nil, nil, errors.New(describe(err))
		}
		request.Task = in.Task
	}
	o, err := t.exec(ctx, req, caller, request)
	if err != nil {
		return nil, nil, errors.New(describe(err))
	}
	r := o.Result
	return nil, &executeOutput{ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, DurationMS: r.DurationMS,
		OutputID: r.OutputID, More: moreHint(r, t.g.Options().Output.Keep)}, nil
}

// rawSchema decodes a schema constant.
func rawSchema(text string) map[string]any {
	var schema map[string]any
	if err := json.Unmarshal([]byte(text), &schema); err != nil {
		panic(fmt.Sprintf("tool schema: %v", err)) // a constant: any test catches it
	}
	return schema
}

// unmarshalArgs decodes a raw tool call's arguments (absent: none) strictly enough to
// name a mistyped one.
func unmarshalArgs(req *sdk.CallToolRequest, v any) error {
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("argument %q must be a %s", te.Field, strings.TrimPrefix(te.Type.String(), "[]"))
		}
		return fmt.Errorf("the arguments are not a JSON object: %v", err)
	}
	return nil
}

// Mount serves the MCP server over streamable HTTP at Path on the HTTP front's
// listener, for agents, and tells the system prompt about it.
func Mount(front *httpapi.Front, version string) {
	g := front.Core()
	g.SetPromptTools(slices.Concat(httpapi.Tools(g), Tools(g))...)
	servers := &byRevision{build: func() *sdk.Server { return New(g, version, Options{}) }, g: g}
	readers := &byRevision{build: func() *sdk.Server { return New(g, version, Options{Reader: true}) }, g: g}
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		// The gateway authenticated the request: its token's role chooses the server.
		if tok, err := g.CheckToken(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")); err == nil && tok.Role == gateway.RoleReader {
			return readers.get()
		}
		return servers.get()
	}, &sdk.StreamableHTTPOptions{
		Logger: g.Logger(),
	})
	// The gateway has authenticated the request already (require): the SDK's
	// middleware checks the token again and puts it where the SDK binds each session
	// to its principal.
	verify := func(_ context.Context, secret string, _ *http.Request) (*auth.TokenInfo, error) {
		tok, err := g.CheckToken(secret)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: tok.Name, Extra: map[string]any{"role": string(tok.Role)}}, nil
	}
	front.Mount(Path, auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(validUTF8(h)), gateway.RoleAgent, gateway.RoleReader)
}

// byRevision holds the MCP server of the policy revision in force: a session opened
// after a reload gets instructions (the system prompt) of the new bundle; sessions
// already open keep theirs.
type byRevision struct {
	build func() *sdk.Server
	g     *gateway.Server

	mu  sync.Mutex
	rev string
	s   *sdk.Server
}

func (b *byRevision) get() *sdk.Server {
	rev := b.g.Revision()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.s == nil || rev != b.rev {
		b.s, b.rev = b.build(), rev
	}
	return b.s
}

// validUTF8 refuses a message that is not valid UTF-8 before the SDK decodes it: Go's
// JSON decoder would replace the invalid bytes silently, and what the policy reads
// must be what the agent sent. The body is already bounded by the gateway's limit.
func validUTF8(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "cannot read the request body", http.StatusRequestEntityTooLarge)
				return
			}
			if !utf8.Valid(body) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"the message is not valid UTF-8"}}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// recovered turns a panic in a tool handler into an INTERNAL tool error, logged with
// its stack: one bad call must not end the server (over stdio, the whole session).
func recovered[In, Out any](g *gateway.Server, h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (res *sdk.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				g.Logger().Error("panic in an MCP tool call", "error", fmt.Sprint(p), "stack", string(debug.Stack()))
				var zero Out
				res, out, err = nil, zero, errors.New("INTERNAL: internal error")
			}
		}()
		return h(ctx, req, in)
	}
}

// tools are the tool handlers, over the gateway's core.
type tools struct {
	g         *gateway.Server
	principal *gateway.Token // Options.Principal
}

// caller is the principal of a tool call (the session's token) as the core's Caller.
func (t *tools) caller(req *sdk.CallToolRequest, tool string) (gateway.Caller, error) {
	var name, role string
	var ti *auth.TokenInfo
	if req.Extra != nil { // nil over stdio
		ti = req.Extra.TokenInfo
	}
	switch {
	case t.principal != nil:
		name, role = t.principal.Name, string(t.principal.Role)
	case ti != nil:
		name = ti.UserID
		role, _ = ti.Extra["role"].(string)
	default:
		// Only reachable if the server were served without the middleware.
		return gateway.Caller{}, errors.New("UNAUTHENTICATED: no token came with this call")
	}
	if gateway.Role(role) == gateway.RoleReader && tool != "execute" && tool != "read_output" {
		return gateway.Caller{}, fmt.Errorf("FORBIDDEN: a reader token may only use execute and read_output, not %s", tool)
	}
	id := gateway.NewRequestID()
	return gateway.Caller{Name: name, Role: gateway.Role(role), RequestID: id, Endpoint: tool, Source: "mcp", Gone: "cancelled",
		Log: gateway.RequestLogger(t.g.Logger(), slog.String("request_id", id), slog.String("principal", name), slog.String("tool", tool))}, nil
}

// execCommand is exec_command: POST /v1/exec with the command as an argument vector.
func (t *tools) execCommand(ctx context.Context, req *sdk.CallToolRequest, in execInput) (*sdk.CallToolResult, *execOutput, error) {
	caller, err := t.caller(req, "exec_command")
	if err != nil {
		return nil, nil, err
	}
	r := &gateway.Request{Argv: in.Command, Cwd: in.Cwd, ShellMode: executor.ShellMode(in.ShellMode), Stdin: in.Stdin}
	if in.Cwd == "" {
		return nil, nil, errors.New("INVALID_ARGUMENT: cwd is empty: give a directory of the workspace (\".\" for its root)")
	}
	if len(in.Command) == 0 {
		return nil, nil, errors.New("INVALID_ARGUMENT: command is empty: it needs at least the command name")
	}
	ms, err := whole("timeout_ms", in.TimeoutMS)
	if err != nil {
		return nil, nil, err
	}
	chars, err := whole("max_output_chars", in.MaxOutputChars)
	if err != nil {
		return nil, nil, err
	}
	r.Timeout, r.MaxOutput = time.Duration(ms)*time.Millisecond, int(chars)
	o, err := t.exec(ctx, req, caller, r)
	if err != nil {
		return nil, nil, errors.New(describe(err))
	}
	return nil, &execOutput{Result: *o.Result, Decision: o.Decision, DecisionID: o.DecisionID, More: moreHint(o.Result, t.g.Options().Output.Keep)}, nil
}

// ProgressInterval is how often a running command's tool call sends a progress
// notification, when the client asked for them (a progress token in the call).
const ProgressInterval = time.Second

// exec runs the request through the core. A request the policy asks a human about
// waits for the decision up to the gateway's approval wait. When the call carries a
// progress token, a progress notification goes out every ProgressInterval meanwhile:
// progress counts them, the message says whether the call waits for an approval (and
// which) or for how long the command has run.
func (t *tools) exec(ctx context.Context, call *sdk.CallToolRequest, caller gateway.Caller, r *gateway.Request) (o *gateway.Outcome, err error) {
	r.Wait = t.g.Options().Approvals.Wait
	t.withProgress(ctx, call, &caller, "running", func() { o, err = t.g.Exec(ctx, caller, r) })
	return o, err
}

// withProgress runs fn, sending a progress notification every ProgressInterval
// meanwhile when the call carries a progress token: progress counts them, the message
// says whether the call waits for an approval (and which) or how long it has been
// doing (what it does: "running"). It sets caller.OnPending to learn of the approval.
func (t *tools) withProgress(ctx context.Context, call *sdk.CallToolRequest, caller *gateway.Caller, doing string, fn func()) {
	var token any
	if call.Params != nil {
		token = call.Params.GetProgressToken()
	}
	if token == nil || call.Session == nil {
		fn()
		return
	}
	var waiting atomic.Pointer[string] // the approval waited for, while there is one
	caller.OnPending = func(a *gateway.Approval) { waiting.Store(&a.ID) }
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		start := time.Now()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				msg := fmt.Sprintf("%s for %s", doing, now.Sub(start).Round(time.Second))
				if id := waiting.Load(); id != nil {
					msg = fmt.Sprintf("waiting for a human to approve the command (approval %s) for %s", *id, now.Sub(start).Round(time.Second))
				}
				err := call.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
				if err != nil {
					caller.Log.Debug("progress notification not sent", "error", err.Error())
				}
			}
		}
	}()
	defer func() { close(done); <-stopped }() // no notification after the result
	fn()
}

// whole turns a number argument into an integer: the schema says number, the value
// must be a whole number (0 when absent: the gateway's default; the range is the
// core's to check).
func whole(name string, v *float64) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if *v != math.Trunc(*v) || *v < 1 || *v > math.MaxInt32 {
		return 0, fmt.Errorf("INVALID_ARGUMENT: %s must be a whole number from 1, got %v", name, *v)
	}
	return int64(*v), nil
}

// describe is the text of a failed call: the code and message, and for a decision the
// decision, its id and every reason.
func describe(err error) string {
	var e *gateway.Error
	if !errors.As(err, &e) {
		return "INTERNAL: internal error"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Code, e.Message)
	if e.Decision != "" {
		fmt.Fprintf(&b, "\ndecision: %s", e.Decision)
	}
	if e.DecisionID != "" {
		fmt.Fprintf(&b, "\ndecision_id: %s", e.DecisionID)
	}
	if e.ApprovalID != "" {
		fmt.Fprintf(&b, "\napproval_id: %s", e.ApprovalID)
	}
	for _, r := range e.Reasons {
		fmt.Fprintf(&b, "\n- %s: %s", r.Rule, r.Message)
	}
	return b.String()
}
