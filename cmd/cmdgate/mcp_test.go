package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestMCPStdio builds the real cmdgate binary and drives `cmdgate mcp` as an MCP client
// that starts a process does: the official SDK's client over the child's stdin and
// stdout, with the agent token in CMDGATE_TOKEN. The tool runs what the policy allows
// and answers a denial as a tool error; the calls land in the audit log under the
// token's principal, with source mcp. Without a valid agent token the server does not
// start, and says why on stderr.
func TestMCPStdio(t *testing.T) {
	goBin := testenv.NeedCommand(t, "go")
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	bin := filepath.Join(dir, "cmdgate")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, ws := filepath.Join(dir, "data"), filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME=", "CMDGATE_DATA=", "CMDGATE_URL=", "CMDGATE_TOKEN=", "CMDGATE_CONFIG=")
	token := func(role string) string {
		cmd := exec.Command(bin, "token", "create", "--role", role, "--name", "stdio-"+role, "--data", data)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("token create: %v", err)
		}
		var a struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal(out, &a); err != nil || a.Token == "" {
			t.Fatalf("token create answered %s", out)
		}
		return a.Token
	}
	agent, auditor := token("agent"), token("auditor")
	mcpCmd := func(tok string) *exec.Cmd {
		cmd := exec.Command(bin, "mcp", "--workspace", ws, "--data", data, "--sandbox", "process")
		cmd.Env = append(env, "CMDGATE_TOKEN="+tok)
		return cmd
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "stdio-test", Version: "1"}, nil)
	s, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: mcpCmd(agent)}, nil)
	if err != nil {
		t.Fatalf("connect to cmdgate mcp: %v", err)
	}
	defer s.Close()
	init := s.InitializeResult()
	if init.ServerInfo.Name != "cmdgate" || !strings.Contains(init.Instructions, "exec_command") || strings.Contains(init.Instructions, "POST /v1/exec") {
		t.Errorf("instructions over stdio should name exec_command and not the HTTP API:\n%s", init.Instructions)
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
		t.Fatalf("tools = %v; want %s", names, wantTools)
	}
	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cwd": "sub", "command": []string{"pwd"}}})
	if err != nil || res.IsError {
		t.Fatalf("exec_command pwd = %+v, %v", res, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !bytes.Contains(b, []byte(`"stdout":"`+filepath.Join(ws, "sub")+`\n"`)) {
		t.Errorf("exec_command pwd = %s", b)
	}
	res, err = s.CallTool(t.Context(), &sdk.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cwd": ".", "command": []string{"sudo", "id"}}})
	if err != nil || !res.IsError {
		t.Fatalf("exec_command sudo = %+v, %v; want a tool error", res, err)
	}
	s.Close()

	// The audit log, read offline, holds the two decisions under the agent's name.
	cmd := exec.Command(bin, "audit", "query", "--data", data, "--kind", "decision")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("audit query: %v", err)
	}
	var page struct {
		Records []struct {
			Principal struct{ Name string } `json:"principal"`
			Decision  string                `json:"decision"`
			Detail    map[string]string     `json:"detail"`
		} `json:"records"`
	}
	if err := json.Unmarshal(out, &page); err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, r := range page.Records {
		if r.Principal.Name == "stdio-agent" && r.Detail["source"] == "mcp" && r.Detail["endpoint"] == "exec_command" {
			decisions = append(decisions, r.Decision)
		}
	}
	if strings.Join(decisions, ",") != "deny,allow" {
		t.Errorf("decisions by stdio-agent through MCP, newest first: %v; want deny,allow", decisions)
	}

	// Raw frames on stdin: a malformed one, one with invalid UTF-8, one larger than the
	// limit, and a call of an unknown tool each get an error answer, and the session
	// goes on to answer the last call.
	raw := mcpCmd(agent)
	var big strings.Builder
	big.WriteString(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"exec_command","arguments":{"cwd":".","command":["echo","`)
	big.WriteString(strings.Repeat("x", 2<<20))
	big.WriteString(`"]}}}`)
	frames := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":`,
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"exec_command\",\"arguments\":{\"cwd\":\".\",\"command\":[\"echo\",\"\xff\"]}}}",
		big.String(),
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"rm_everything","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cwd":".","command":["echo","after"]}}}`,
	}, "\n") + "\n"
	// stdin stays open until the last call is answered: the session ends with it.
	stdin, err := raw.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := raw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { io.WriteString(stdin, frames) }()
	var lines []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), `"id":2,`) {
				return
			}
		}
	}()
	select {
	case <-read:
	case <-time.After(30 * time.Second):
		t.Error("no answer to the last call within 30 s")
	}
	stdin.Close()
	raw.Wait()
	rawOut := []byte(strings.Join(lines, "\n"))
	answers := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(rawOut)), "\n") {
		var a struct {
			ID     any `json:"id"`
			Error  *struct{ Code int }
			Result *struct {
				StructuredContent map[string]any `json:"structuredContent"`
			}
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("stdout line %.200q is not JSON: %v", line, err)
		}
		switch {
		case a.Error != nil && a.Error.Code == -32700:
			answers["parse error"]++
		case a.ID == float64(4) && a.Error != nil:
			answers["unknown tool"]++
		case a.ID == float64(2) && a.Result != nil && a.Result.StructuredContent["stdout"] == "after\n":
			answers["after"]++
		}
	}
	if answers["parse error"] != 3 || answers["unknown tool"] != 1 || answers["after"] != 1 {
		t.Errorf("answers to the raw frames: %v; want 3 parse errors, the unknown tool's error, and the last call's result\n%.2000s", answers, rawOut)
	}

	// A token of another role, and no valid token: refused at start.
	for _, tok := range []string{auditor, "cmdgate_" + strings.Repeat("A", 43), ""} {
		cmd := mcpCmd(tok)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Stdin = strings.NewReader("")
		stdout, err := cmd.Output()
		if err == nil || len(stdout) != 0 || !strings.Contains(stderr.String(), "token") {
			t.Errorf("cmdgate mcp with token %q: %v, stdout %q, stderr %q; want a refusal on stderr only", tok, err, stdout, stderr.String())
		}
	}
	// A local principal named in the configuration: no token in the environment; the
	// calls are that token's. An auditor's name, an unknown name and a revoked token
	// are refused at start.
	config := func(principal string) string {
		p := filepath.Join(dir, principal+".yaml")
		if err := os.WriteFile(p, []byte("mcp:\n  principal: "+principal+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local := func(principal string) *exec.Cmd {
		cmd := exec.Command(bin, "mcp", "--workspace", ws, "--data", data, "--sandbox", "process", "--config", config(principal))
		cmd.Env = env
		return cmd
	}
	ls, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: local("stdio-agent")}, nil)
	if err != nil {
		t.Fatalf("connect with mcp.principal: %v", err)
	}
	res, err = ls.CallTool(t.Context(), &sdk.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cwd": ".", "command": []string{"echo", "local"}}})
	if err != nil || res.IsError {
		t.Fatalf("exec_command as the local principal = %+v, %v", res, err)
	}
	ls.Close()
	cmd = exec.Command(bin, "audit", "query", "--data", data, "--kind", "decision", "--limit", "1")
	cmd.Env = env
	if out, err = cmd.Output(); err != nil || !bytes.Contains(out, []byte(`"name":"stdio-agent"`)) || !bytes.Contains(out, []byte(`local`)) {
		t.Errorf("the local principal's call is not recorded under its name: %v %s", err, out)
	}
	revoke := exec.Command(bin, "token", "revoke", "--data", data, "stdio-agent")
	revoke.Env = env
	if out, err := revoke.CombinedOutput(); err != nil {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	for principal, why := range map[string]string{"stdio-agent": "revoked", "stdio-auditor": "auditor role", "nobody": "no token of that name"} {
		cmd := local(principal)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Stdin = strings.NewReader("")
		stdout, err := cmd.Output()
		if err == nil || len(stdout) != 0 || !strings.Contains(stderr.String(), principal) {
			t.Errorf("cmdgate mcp as local principal %s (%s): %v, stdout %q, stderr %q; want a refusal naming it", principal, why, err, stdout, stderr.String())
		}
	}
}
