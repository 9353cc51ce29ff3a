package mcp_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/mcp"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// BenchmarkMCPExec compares exec_command of `true` (direct) through the MCP server over
// streamable HTTP with the same command through POST /v1/exec, each on a gateway of its
// own, in one run: "http" is the peer. Both pay the decide pipeline, the durable
// decision and execution records and the sandbox; MCP adds the SDK's JSON-RPC, schema
// and session handling. "linux" runs in the linux sandbox (the target: mcp at most 1.2×
// http), "process" without one, where the fixed cost of MCP weighs most.
func BenchmarkMCPExec(b *testing.B) {
	helper, dir, err := testenv.BuildHelper()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	backends := []struct {
		name      string
		configure func(*gateway.Options)
	}{
		{"linux", func(o *gateway.Options) { o.Sandbox, o.Linux.Helper = gateway.SandboxLinux, helper }},
		{"process", func(o *gateway.Options) { o.Sandbox = gateway.SandboxProcess }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			if be.name == "linux" {
				probe, err := linux.New(linux.Options{Workspace: b.TempDir(), Helper: helper, Pool: -1})
				if err == nil {
					_, err = probe.Probe(b.Context())
					probe.Close()
				}
				if err != nil {
					testenv.Skip(b, "the linux sandbox cannot be built here: %v", err)
				}
			}
			b.Run("http", func(b *testing.B) { benchHTTP(b, newEnv(b, be.configure)) })
			b.Run("mcp", func(b *testing.B) { benchMCP(b, newEnv(b, be.configure)) })
		})
	}
}

func benchHTTP(b *testing.B, e *env) {
	body := []byte(`{"argv":["true"],"shell_mode":"direct","cwd":"."}`)
	client := &http.Client{}
	for b.Loop() {
		req, _ := http.NewRequest("POST", e.url+"/v1/exec", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.alice)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("/v1/exec: %d", resp.StatusCode)
		}
	}
}

// benchMCP opens a session with the SDK's client, then sends each call as one POST of
// its JSON-RPC frame, read to the end, as a thin client sends it: the figure is the
// server's, not the in-process client's.
func benchMCP(b *testing.B, e *env) {
	s := e.session(b, e.alice)
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec_command","arguments":{"cwd":".","command":["true"],"shell_mode":"direct"}}}`)
	client := &http.Client{}
	for b.Loop() {
		req, _ := http.NewRequest("POST", e.url+mcp.Path, bytes.NewReader(frame))
		req.Header.Set("Authorization", "Bearer "+e.alice)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.ID())
		req.Header.Set("Mcp-Protocol-Version", s.InitializeResult().ProtocolVersion)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"exit_code":0`)) {
			b.Fatalf("tools/call: %d %s", resp.StatusCode, out)
		}
	}
}
