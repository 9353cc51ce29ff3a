package mcp_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/cmdgate/cmdgate/gateway/mcp"
)

// BenchmarkMCPExec compares exec_command of `true` (direct) through the MCP server over
// streamable HTTP with the same command through POST /v1/exec, each on a gateway of its
// own (process backend) in one run: "http" is the peer. Both pay the decide pipeline,
// the durable decision and execution records and the process; MCP adds the SDK's
// JSON-RPC, schema and session handling.
func BenchmarkMCPExec(b *testing.B) {
	b.Run("http", func(b *testing.B) {
		e := newEnv(b)
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
	})
	b.Run("mcp", func(b *testing.B) {
		// A session opened by the SDK's client, then each call as one POST of its
		// JSON-RPC frame, read to the end, as a thin client sends it: the figure is the
		// server's, not the in-process client's.
		e := newEnv(b)
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
	})
}
