package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/httpapi"
	"github.com/cmdgate/cmdgate/gateway/mcp"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// mcpSDKEnv names the node_modules directory that holds the official TypeScript MCP SDK
// (.ci/run installs a pinned version there).
const mcpSDKEnv = "CMDGATE_TEST_MCP_SDK"

// TestMCPThirdPartyClient connects the official TypeScript SDK's client, run by the
// machine's Node, to cmdgate over stdio (the real binary, `cmdgate mcp`) and over
// streamable HTTP with a bearer token (a real gateway on 127.0.0.1): it lists the tools,
// the test checks that exec_command's schema is the tool definition exactly, and it
// calls each tool (exec_command allowed, denied and without cwd; shell_exec;
// system_info; execute_command; job_run and job_status of the job it started).
func TestMCPThirdPartyClient(t *testing.T) {
	node := testenv.NeedCommand(t, "node")
	modules := os.Getenv(mcpSDKEnv)
	if modules == "" {
		testenv.Skip(t, "%s is not set: install @modelcontextprotocol/sdk with npm and name its node_modules", mcpSDKEnv)
	}
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		testenv.Skip(t, "%s: no @modelcontextprotocol/sdk there: %v", mcpSDKEnv, err)
	}
	goBin := testenv.NeedCommand(t, "go")
	dir := t.TempDir()
	bin := filepath.Join(dir, "cmdgate")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The script imports the SDK by package name: it runs from a directory whose
	// node_modules is the installed one.
	script, err := os.ReadFile(filepath.Join("testdata", "mcp", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	jsDir := filepath.Join(dir, "js")
	if err := os.MkdirAll(jsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(jsDir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jsDir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}

	// One gateway, in this process, for HTTP; the stdio server runs on the same data
	// directory as a process of its own.
	ws, data := filepath.Join(dir, "ws"), filepath.Join(dir, "data")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// The stdio server and the job host started for job_run work on data after the
	// client is gone (the host goes once its job has ended): both are gone before the
	// directory is removed. Cleanups run in reverse order, so this one runs after the
	// gateway's Close below and before TempDir's removal.
	t.Cleanup(func() {
		var left []int
		const wait = 2 * time.Minute
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if left = testenv.ProcessesWith(data); len(left) == 0 {
				return
			}
		}
		t.Errorf("processes working on %s still running after %v: %v", data, wait, left)
		for _, pid := range left {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	})
	srv, err := gateway.New(t.Context(), gateway.Options{Workspace: ws, DataDir: data, Sandbox: gateway.SandboxProcess})
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
	token, _, err := tokens.Create("ts-agent", gateway.RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	var wantSchema any
	json.Unmarshal([]byte(mcp.ExecCommandSchema), &wantSchema)

	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "client.mjs")
			cmd.Dir = jsDir
			cmd.Env = append(os.Environ(), "MODE="+mode, "CMDGATE_BIN="+bin, "WORKSPACE="+ws, "DATA="+data,
				"TOKEN="+token, "MCP_URL="+hs.URL+mcp.Path, "HOME="+dir, "XDG_DATA_HOME=", "CMDGATE_CONFIG=", "CMDGATE_DATA=")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node client.mjs (%s): %v\n%s", mode, err, stderr.String())
			}
			var got struct {
				Server       struct{ Name string }
				Instructions string
				Tools        []struct {
					Name        string
					Description string
					InputSchema any `json:"inputSchema"`
				}
				Allowed, Denied, Missing, Shell, Info, Execute, JobRun, JobStatus struct {
					IsError           bool `json:"isError"`
					Content           []struct{ Text string }
					StructuredContent map[string]any `json:"structuredContent"`
				}
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("client output %s: %v", out, err)
			}
			if got.Server.Name != "cmdgate" || !strings.Contains(got.Instructions, "exec_command") {
				t.Errorf("server %+v, instructions %.200q", got.Server, got.Instructions)
			}
			var names []string
			for _, tl := range got.Tools {
				names = append(names, tl.Name)
			}
			const wantTools = "exec_command,execute_command,job_kill,job_list,job_run,job_status,job_tail,job_wait,read_output,shell_exec,system_info"
			if strings.Join(names, ",") != wantTools || got.Tools[0].Description != mcp.ExecCommandDescription {
				t.Fatalf("tools = %v (%+v); want %s", names, got.Tools, wantTools)
			}
			if !reflect.DeepEqual(got.Tools[0].InputSchema, wantSchema) {
				t.Errorf("exec_command's schema as the TypeScript client sees it:\n%v\nwant\n%v", got.Tools[0].InputSchema, wantSchema)
			}
			if got.Allowed.IsError || got.Allowed.StructuredContent["stdout"] != "from-ts\n" || got.Allowed.StructuredContent["exit_code"] != float64(0) {
				t.Errorf("allowed call = %+v", got.Allowed)
			}
			if !got.Denied.IsError || len(got.Denied.Content) == 0 || !strings.Contains(got.Denied.Content[0].Text, "forbidden.command") {
				t.Errorf("denied call = %+v", got.Denied)
			}
			if !got.Missing.IsError || len(got.Missing.Content) == 0 || !strings.Contains(got.Missing.Content[0].Text, "cwd") {
				t.Errorf("call without cwd = %+v", got.Missing)
			}
			if got.Shell.IsError || len(got.Shell.Content) == 0 || got.Shell.Content[0].Text != "STDOUT:\nfrom-shell" {
				t.Errorf("shell_exec = %+v", got.Shell)
			}
			if got.Info.IsError || len(got.Info.Content) == 0 || !strings.Contains(got.Info.Content[0].Text, "Sandbox: process") {
				t.Errorf("system_info = %+v", got.Info)
			}
			if got.Execute.IsError || got.Execute.StructuredContent["stdout"] != "from-execute\n" || got.Execute.StructuredContent["exit_code"] != float64(0) {
				t.Errorf("execute_command = %+v", got.Execute)
			}
			snap, _ := got.JobRun.StructuredContent["snapshot"].(map[string]any)
			if got.JobRun.IsError || got.JobRun.StructuredContent["type"] != "job.run" || got.JobRun.StructuredContent["state"] != "exited" || snap["stdout_tail"] != "from-job\n" {
				t.Errorf("job_run = %+v", got.JobRun)
			}
			if got.JobStatus.IsError || got.JobStatus.StructuredContent["job_id"] != got.JobRun.StructuredContent["job_id"] || got.JobStatus.StructuredContent["exit_code"] != float64(0) {
				t.Errorf("job_status = %+v", got.JobStatus)
			}
		})
	}
}
