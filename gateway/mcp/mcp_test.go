package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/httpapi"
	"github.com/cmdgate/cmdgate/gateway/mcp"
	"github.com/cmdgate/cmdgate/policies"
)

// env is a real gateway (process backend, real SQLite audit store) on 127.0.0.1 with
// the MCP server mounted, and two agents' tokens.
type env struct {
	srv            *gateway.Server
	url, ws, data  string
	alice, bob     string // agent tokens
	auditor        string
	approver       string
	requestTimeout time.Duration
}

func newEnv(t testing.TB, configure ...func(*gateway.Options)) *env {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	opts := gateway.Options{
		Workspace: ws, DataDir: data, Sandbox: gateway.SandboxProcess,
		AuthFailureBurst: 1000, AuthFailureRate: 1000,
		Policy: policies.Config{AllowedCommands: policies.AllowedCommands{Additional: []string{"sleep", "printf", "no-such-cmd-xyz"}}},
	}
	for _, c := range configure {
		c(&opts)
	}
	srv, err := gateway.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	front := httpapi.New(srv)
	mcp.Mount(front, "test")
	hs := httptest.NewServer(front.Handler())
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	tokens, err := gateway.OpenTokens(data)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, url: hs.URL, ws: srv.Workspace(), data: data}
	for _, tk := range []struct {
		p    *string
		name string
		role gateway.Role
	}{{&e.alice, "alice", gateway.RoleAgent}, {&e.bob, "bob", gateway.RoleAgent}, {&e.auditor, "audrey", gateway.RoleAuditor}, {&e.approver, "april", gateway.RoleApprover}} {
		if *tk.p, _, err = tokens.Create(tk.name, tk.role); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// bearer adds a token to every request of the MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session with the official SDK's client over streamable HTTP.
func (e *env) connect(t testing.TB, token string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "cmdgate-test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: e.url + mcp.Path, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

func (e *env) session(t testing.TB, token string) *sdk.ClientSession {
	t.Helper()
	s, err := e.connect(t, token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return s
}

func call(t testing.TB, s *sdk.ClientSession, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "exec_command", Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(exec_command, %v): %v", args, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes the structured content of a result.
func structured(t testing.TB, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

// The tool list is exec_command with its definition verbatim, and the server
// introduces itself with the gateway's system prompt, which names the tool.
func TestToolDefinition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)
	init := s.InitializeResult()
	if init.ServerInfo.Name != "cmdgate" || !strings.Contains(init.Instructions, "exec_command") || !strings.Contains(init.Instructions, e.ws) {
		t.Errorf("server info %+v, instructions %q: want cmdgate and the prompt naming exec_command and the workspace", init.ServerInfo, init.Instructions)
	}
	p, err := s.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: mcp.PromptName})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(*sdk.TextContent).Text != init.Instructions {
		t.Errorf("prompt %s = %+v, %v; want the instructions' text", mcp.PromptName, p, err)
	}
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	const wantTools = "exec_command,execute_command,job_kill,job_list,job_run,job_status,job_tail,job_wait,read_output,shell_exec,system_info"
	if strings.Join(names, ",") != wantTools {
		t.Fatalf("tools = %v, want %s", names, wantTools)
	}
	tool := tools.Tools[0]
	if tool.Description != "Runs a command once in the workspace and returns stdout, stderr, and exit code." {
		t.Errorf("description %q", tool.Description)
	}
	var got, want any
	b, _ := json.Marshal(tool.InputSchema)
	json.Unmarshal(b, &got)
	json.Unmarshal([]byte(mcp.ExecCommandSchema), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("input schema served:\n%s\nwant:\n%s", b, mcp.ExecCommandSchema)
	}
}

// exec_command runs what the policy allows, returns exec_command's output as
// structured content, and answers a denial as a tool error with the reasons and the
// decision id; every call is audited with source mcp.
func TestExecCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)

	res := call(t, s, map[string]any{"cwd": "sub", "command": []string{"pwd"}})
	out := structured(t, res)
	if res.IsError || out["exit_code"] != float64(0) || out["stdout"] != filepath.Join(e.ws, "sub")+"\n" || out["decision"] != "allow" || out["decision_id"] == "" {
		t.Fatalf("exec_command pwd = %v %s", res.IsError, text(res))
	}
	if !strings.Contains(text(res), `"exit_code":0`) {
		t.Errorf("the text content is not the result's JSON: %q", text(res))
	}

	res = call(t, s, map[string]any{"cwd": ".", "command": []string{"sudo", "ls"}})
	if !res.IsError || !strings.Contains(text(res), "DENIED") || !strings.Contains(text(res), "forbidden.command") || !strings.Contains(text(res), "decision_id: ") {
		t.Fatalf("exec_command sudo = %v %q; want a tool error with the reasons and the decision id", res.IsError, text(res))
	}

	// The audit log holds both decisions, from alice, through MCP.
	st, err := audit.Open(t.Context(), e.data, audit.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	page, err := st.Query(t.Context(), audit.Query{Kind: audit.KindDecision})
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, r := range page.Records {
		var d map[string]string
		json.Unmarshal(r.Detail, &d)
		if d["source"] == "mcp" && d["endpoint"] == "exec_command" && r.Principal.Name == "alice" {
			seen++
		}
	}
	if seen != 2 {
		t.Errorf("%d decision records from alice through MCP; want 2", seen)
	}
}

// Bad arguments are tool errors naming the argument; an unknown tool is a JSON-RPC
// error; the session keeps serving after each.
func TestBadArguments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": []string{"ls"}}, "cwd"},
		{map[string]any{"cwd": "."}, "command"},
		{map[string]any{"cwd": ".", "command": "ls"}, "command"},
		{map[string]any{"cwd": ".", "command": []any{"ls", 3}}, "command"},
		{map[string]any{"cwd": ".", "command": []string{"ls"}, "timeout_ms": 1.5}, "timeout_ms"},
		{map[string]any{"cwd": ".", "command": []string{"ls"}, "timeout_ms": "soon"}, "timeout_ms"},
		{map[string]any{"cwd": ".", "command": []string{"ls"}, "timeout_ms": 99999999}, "timeout_ms"},
		{map[string]any{"cwd": ".", "command": []string{"ls"}, "max_output_chars": 10}, "max_output_chars"},
		{map[string]any{"cwd": ".", "command": []string{"ls"}, "shell_mode": "zsh"}, "shell_mode"},
		{map[string]any{"cwd": "", "command": []string{"ls"}}, "cwd"},
		{map[string]any{"cwd": ".", "command": []string{}}, "command"},
		{map[string]any{"cwd": "../..", "command": []string{"ls"}}, "workspace"},
		{map[string]any{"cwd": ".", "command": []string{"ls\x00"}}, "NUL"},
		{map[string]any{"cwd": ".", "command": []string{strings.Repeat("x", 100<<10)}}, "bytes"},
		{map[string]any{"cwd": ".", "command": []string{"echo", "\xff\xfe"}}, ""},
	} {
		res := call(t, s, c.args)
		if c.want == "" {
			continue // answered at all: the session goes on below
		}
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("exec_command %.200v = %v %.300q; want a tool error naming %s", c.args, res.IsError, text(res), c.want)
		}
	}
	if _, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "rm_everything", Arguments: map[string]any{}}); err == nil {
		t.Error("an unknown tool answered without an error")
	}
	if res := call(t, s, map[string]any{"cwd": ".", "command": []string{"echo", "still here"}}); res.IsError || structured(t, res)["stdout"] != "still here\n" {
		t.Errorf("after the bad calls: %v %q", res.IsError, text(res))
	}
	// Larger than the gateway's body limit: refused before it is read (413), an error
	// for the client (whose SDK then closes its session); the server serves on.
	if _, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cwd": ".", "command": []string{strings.Repeat("x", 2<<20)}}}); err == nil || !strings.Contains(err.Error(), "Too Large") {
		t.Errorf("a 2 MiB argument: %.300v; want the body limit's error", err)
	}
	if res := call(t, e.session(t, e.alice), map[string]any{"cwd": ".", "command": []string{"true"}}); res.IsError {
		t.Errorf("a new session after the 413: %q", text(res))
	}
}

// /mcp needs an agent's token: none, a bad one, another role's are refused by the
// gateway, and a session is bound to its principal.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tok := range []string{"", "cmdgate_" + strings.Repeat("A", 43)} {
		if _, err := e.connect(t, tok); err == nil {
			t.Errorf("connect with token %q succeeded", tok)
		}
	}
	post := func(token, session string, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+mcp.Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const list = `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	if code := post("", "", list); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := post(e.auditor, "", list); code != http.StatusForbidden {
		t.Errorf("an auditor's token: %d, want 403", code)
	}
	s := e.session(t, e.alice)
	if code := post(e.bob, s.ID(), list); code != http.StatusForbidden {
		t.Errorf("alice's session with bob's token: %d, want 403", code)
	}
	if code := post(e.alice, s.ID(), list); code != http.StatusOK {
		t.Errorf("alice's session with alice's token: %d, want 200", code)
	}
	// A malformed JSON-RPC frame, invalid UTF-8 and a NUL are error answers, and the
	// session keeps serving.
	for _, frame := range []string{`{"jsonrpc":"2.0","id":`, "\x00", "[]", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exec_command","arguments":{"cwd":".","command":["echo","a\u0000b"]}}}`} {
		if code := post(e.alice, s.ID(), frame); code >= 500 {
			t.Errorf("frame %q: %d, want no server error", frame, code)
		}
	}
	invalid := "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"exec_command\",\"arguments\":{\"cwd\":\".\",\"command\":[\"echo\",\"\xff\"]}}}"
	if code := post(e.alice, s.ID(), invalid); code != http.StatusBadRequest {
		t.Errorf("a frame with invalid UTF-8: %d, want 400", code)
	}
	if res := call(t, s, map[string]any{"cwd": ".", "command": []string{"true"}}); res.IsError {
		t.Errorf("after the malformed frame: %q", text(res))
	}
	// A call after the session was deleted: 404, and the server serves new sessions.
	del, _ := http.NewRequestWithContext(t.Context(), "DELETE", e.url+mcp.Path, nil)
	del.Header.Set("Authorization", "Bearer "+e.alice)
	del.Header.Set("Mcp-Session-Id", s.ID())
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("DELETE of the session: %d", resp.StatusCode)
	}
	if code := post(e.alice, s.ID(), list); code != http.StatusNotFound {
		t.Errorf("a call in a deleted session: %d, want 404", code)
	}
	if res := call(t, e.session(t, e.alice), map[string]any{"cwd": ".", "command": []string{"true"}}); res.IsError {
		t.Errorf("a new session after the deleted one: %q", text(res))
	}
}

// A command the policy answers ask for waits for a human: nobody deciding within the
// approval wait answers APPROVAL_PENDING with the approval's id (shell_exec: the
// rejection text), and nothing ran; approved meanwhile, the call answers the command's
// result, with progress notifications saying it waits for the approval.
func TestApprovalThroughMCP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *gateway.Options) {
		o.Policy.AllowedCommands.Exclude = []string{"touch"}
		o.Policy.UnknownCommand = "ask"
		o.Approvals.Wait = 3 * time.Second
	})
	s := e.session(t, e.alice)
	res := call(t, s, map[string]any{"cwd": ".", "command": []string{"touch", "marker"}})
	if !res.IsError || !strings.HasPrefix(text(res), "APPROVAL_PENDING: ") || !strings.Contains(text(res), "decision: ask") ||
		!strings.Contains(text(res), "decision_id: ") || !strings.Contains(text(res), "approval_id: ") {
		t.Errorf("exec_command of a command nobody approves: %v %q; want APPROVAL_PENDING with the decision and approval ids", res.IsError, text(res))
	}
	shell, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "shell_exec", Arguments: map[string]any{"uri": ".", "cmd": "touch marker"}})
	if err != nil || !shell.IsError || !strings.HasPrefix(text(shell), "User rejected the shell command execution.") {
		t.Errorf("shell_exec of a command nobody approves: %v %v %q", err, shell.IsError, text(shell))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran: %v", err)
	}

	// Approved while the call waits: the call answers the result.
	var progress []string
	var mu sync.Mutex
	c := sdk.NewClient(&sdk.Implementation{Name: "cmdgate-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		},
	})
	ps, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: e.url + mcp.Path, HTTPClient: &http.Client{Transport: bearer{e.alice}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	results := make(chan *sdk.CallToolResult, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cwd": ".", "command": []string{"touch", "approved"}}}
		p.SetProgressToken("wait-1")
		res, err := ps.CallTool(context.Background(), p)
		if err != nil {
			res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		results <- res
	}()
	approver := gateway.Caller{Name: "april", Role: gateway.RoleApprover, RequestID: gateway.NewRequestID(), Endpoint: "approve"}
	var id string
	for range 300 {
		list, err := e.srv.Approvals(t.Context(), approver, gateway.ApprovalPending, 10)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		waited := len(progress) > 0
		mu.Unlock()
		if len(list) > 0 && len(list[0].Request.Argv) == 2 && list[0].Request.Argv[1] == "approved" && waited {
			id = list[0].ID
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("no pending approval with a progress notification within 3 s")
	}
	if _, err := e.srv.DecideApproval(t.Context(), approver, id, gateway.Verdict{Approve: true}); err != nil {
		t.Fatal(err)
	}
	res = <-results
	if res.IsError || structured(t, res)["exit_code"] != float64(0) || structured(t, res)["decision"] != "allow" {
		t.Errorf("exec_command approved while it waited: %v %q", res.IsError, text(res))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "approved")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(progress[0], "waiting for a human to approve the command (approval "+id+")") {
		t.Errorf("progress while waiting: %q", progress)
	}
}

// The same requests through POST /v1/exec and through exec_command give the same
// outcome, field by field.
func TestSameAsHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)
	type outcome struct {
		Decision, Code string
		Exit           float64
		Stdout         string
		TimedOut       bool
		Truncated      bool
	}
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"allow", map[string]any{"cwd": ".", "command": []string{"echo", "hi"}}},
		{"deny with reasons", map[string]any{"cwd": ".", "command": []string{"sudo", "rm", "-rf", "/"}}},
		{"bad cwd", map[string]any{"cwd": "no-such-dir", "command": []string{"ls"}}},
		{"timeout", map[string]any{"cwd": ".", "command": []string{"sleep", "5"}, "timeout_ms": 300}},
		{"truncation", map[string]any{"cwd": ".", "command": []string{"printf", "%05000d", "0"}, "max_output_chars": 1000}},
		{"unknown command", map[string]any{"cwd": ".", "command": []string{"no-such-cmd-xyz"}, "shell_mode": "direct"}},
		{"non-zero exit", map[string]any{"cwd": ".", "command": []string{"ls", "no-such-file"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// MCP
			res := call(t, s, c.args)
			var m outcome
			if res.IsError {
				code, _, _ := strings.Cut(text(res), ":")
				m.Code = code
				if _, rest, ok := strings.Cut(text(res), "\ndecision: "); ok {
					m.Decision, _, _ = strings.Cut(rest, "\n")
				}
			} else {
				out := structured(t, res)
				m = outcome{Decision: out["decision"].(string), Exit: out["exit_code"].(float64), Stdout: out["stdout"].(string),
					TimedOut: out["timed_out"].(bool), Truncated: out["stdout_truncated"].(bool)}
			}
			// HTTP
			body := map[string]any{"argv": c.args["command"], "cwd": c.args["cwd"]}
			for _, k := range []string{"timeout_ms", "max_output_chars", "shell_mode"} {
				if v, ok := c.args[k]; ok {
					body[k] = v
				}
			}
			b, _ := json.Marshal(body)
			req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+"/v1/exec", bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+e.alice)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var a struct {
				Decision        string  `json:"decision"`
				ExitCode        float64 `json:"exit_code"`
				Stdout          string  `json:"stdout"`
				TimedOut        bool    `json:"timed_out"`
				StdoutTruncated bool    `json:"stdout_truncated"`
				Error           struct {
					Code     string `json:"code"`
					Decision string `json:"decision"`
				} `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&a)
			h := outcome{Decision: a.Decision, Code: a.Error.Code, Exit: a.ExitCode, Stdout: a.Stdout, TimedOut: a.TimedOut, Truncated: a.StdoutTruncated}
			if a.Error.Code != "" {
				h.Decision = a.Error.Decision
			}
			if m != h {
				t.Errorf("MCP and HTTP differ:\nmcp  %+v\nhttp %+v", m, h)
			}
		})
	}
}

// shell_exec answers in the original's formats: sections, no output, missing
// arguments, rejection with the reasons; shell_path is checked; system_info describes
// this gateway.
func TestShellTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)
	shell := func(args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "shell_exec", Arguments: args})
		if err != nil {
			t.Fatalf("shell_exec %v: %v", args, err)
		}
		return res
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, c := range []struct {
		args    map[string]any
		want    string // the whole text, or its beginning with prefix
		prefix  bool
		isError bool
	}{
		{map[string]any{"uri": "file://" + e.ws, "cmd": "echo hi; echo err >&2"}, "STDOUT:\nhi\n\nSTDERR:\nerr", false, false},
		{map[string]any{"uri": ".", "cmd": "true"}, "Command executed with no output.", false, false},
		{map[string]any{"uri": "sub", "cmd": "pwd", "shell_path": bash}, "STDOUT:\n" + filepath.Join(e.ws, "sub"), false, false},
		{map[string]any{"uri": ".", "cmd": "ls no-such-file"}, "STDERR:\n", true, true},
		{map[string]any{}, `Error: Missing "uri" or "cmd" argument.`, false, true},
		{map[string]any{"uri": "."}, `Error: Missing "uri" or "cmd" argument.`, false, true},
		{map[string]any{"cmd": "ls"}, `Error: Missing "uri" or "cmd" argument.`, false, true},
		{map[string]any{"uri": ".", "cmd": "sudo id"}, "User rejected the shell command execution.\nDENIED", true, true},
		{map[string]any{"uri": ".", "cmd": "ls", "shell_path": "bash"}, "Error: shell_path \"bash\" is not an absolute path", false, true},
		{map[string]any{"uri": ".", "cmd": "ls", "shell_path": "/no/such/shell"}, "Error: shell_path \"/no/such/shell\" is not an executable file", false, true},
		{map[string]any{"uri": ".", "cmd": 5}, "Error: argument \"cmd\" must be a string", false, true},
		{map[string]any{"uri": "file://other-host/x", "cmd": "ls"}, "Error: uri", true, true},
		{map[string]any{"uri": "../..", "cmd": "ls"}, "ERROR:\nINVALID_ARGUMENT", true, true},
	} {
		res := shell(c.args)
		got := text(res)
		ok := got == c.want
		if c.prefix {
			ok = strings.HasPrefix(got, c.want)
		}
		if !ok || res.IsError != c.isError {
			t.Errorf("shell_exec %v = %v %q; want %v %q", c.args, res.IsError, got, c.isError, c.want)
		}
	}
	if got := text(shell(map[string]any{"uri": ".", "cmd": "ls no-such-file"})); !strings.HasSuffix(got, "ERROR:\nCommand failed with exit code 2") {
		t.Errorf("failed command: %q", got)
	}

	// execute_command: a script at the workspace's root, {exit_code, stdout, stderr,
	// duration_ms}; a refusal is a tool error with the reasons; command is required.
	ex, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "pwd; echo e >&2; exit 3"}})
	if err != nil || ex.IsError {
		t.Fatalf("execute_command: %v %v", ex, err)
	}
	if out := structured(t, ex); out["exit_code"] != float64(3) || out["stdout"] != e.ws+"\n" || out["stderr"] != "e\n" || out["duration_ms"] == nil || len(out) != 4 {
		t.Errorf("execute_command = %v", out)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{{map[string]any{"command": "sudo id"}, "forbidden.command"}, {map[string]any{}, "command"}, {map[string]any{"command": 7}, "command"}, {map[string]any{"command": " "}, "empty"}} {
		ex, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: c.args})
		if err != nil || !ex.IsError || !strings.Contains(text(ex), c.want) {
			t.Errorf("execute_command %v = %v %q, %v; want a tool error naming %s", c.args, ex.IsError, text(ex), err, c.want)
		}
	}

	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "system_info", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("system_info: %v %v", res, err)
	}
	arch := map[string]string{"amd64": "x64", "386": "ia32"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	for _, want := range []string{"Platform: " + runtime.GOOS + " (" + arch + ")", "Default Shell (Env): " + bash, "Available Shells: bash: " + bash, "Sandbox: process", "Network: not isolated", "Workspace: " + e.ws} {
		if !strings.Contains(text(res), want) {
			t.Errorf("system_info lacks %q:\n%s", want, text(res))
		}
	}
}

// A cancelled call stops the command's whole process tree, as its timeout does, and
// the execution record says it was cancelled.
func TestCancelledCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cwd": ".", "command": []string{"sleep", "30"}, "timeout_ms": 60000}})
		done <- err
	}()
	// The command is running once its decision is recorded.
	st, err := audit.Open(t.Context(), e.data, audit.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		page, err := st.Query(t.Context(), audit.Query{Kind: audit.KindDecision})
		if err == nil && len(page.Records) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no decision record within 20 s")
		}
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
	var rec audit.Record
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		page, err := st.Query(t.Context(), audit.Query{Kind: audit.KindExecution})
		if err == nil && len(page.Records) > 0 {
			rec = page.Records[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no execution record within 20 s of the cancellation")
		}
	}
	var d map[string]string
	json.Unmarshal(rec.Detail, &d)
	if d["stopped"] != "cancelled" || d["source"] != "mcp" || time.Since(start) > 25*time.Second {
		t.Errorf("execution record detail %v after %v; want stopped cancelled, long before the command's 30 s", d, time.Since(start))
	}
}
