package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/mcp"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// cmdgateProgram is the real cmdgate program, built once: the job host.
var cmdgateProgram = sync.OnceValues(func() (string, error) { return testenv.BuildCmdgate("mcp") })

func jobEnv(t *testing.T, configure ...func(*gateway.Options)) *env {
	t.Helper()
	prog, err := cmdgateProgram()
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, append([]func(*gateway.Options){func(o *gateway.Options) { o.Jobs.Program = prog }}, configure...)...)
}

// jobTool calls a job tool and decodes its answer, checking that the text and the
// structured content are the same object and that IsError is !ok.
func jobTool(t *testing.T, s *sdk.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", tool, args, err)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("%s: text %q is not a JSON object: %v", tool, text(res), err)
	}
	if got := structured(t, res); !reflect.DeepEqual(got, fromText) {
		t.Errorf("%s: structured content %v differs from the text %v", tool, got, fromText)
	}
	if fromText["schema_version"] != 1.0 || fromText["ok"] != !res.IsError {
		t.Errorf("%s: answer %v with IsError %v", tool, fromText, res.IsError)
	}
	return fromText
}

func errorCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// The job tools start a job through the policy, read its state and output, wait for
// it, list it and kill it; another agent does not see it; the answers are the same
// objects as the HTTP API's.
func TestJobTools(t *testing.T) {
	t.Parallel()
	e := jobEnv(t)
	alice, bob := e.session(t, e.alice), e.session(t, e.bob)

	run := jobTool(t, alice, "job_run", map[string]any{"command": "printf 'hi\\n'; printf 'oops\\n' >&2; exit 3", "snapshot_after_ms": 10000})
	id, _ := run["job_id"].(string)
	snap, _ := run["snapshot"].(map[string]any)
	if run["ok"] != true || run["type"] != "job.run" || len(id) != 32 || run["decision"] != "allow" || run["state"] != "exited" ||
		snap["stdout_tail"] != "hi\n" || snap["stderr_tail"] != "oops\n" || snap["encoding"] != "utf-8-lossy" {
		t.Fatalf("job_run = %v", run)
	}
	st := jobTool(t, alice, "job_status", map[string]any{"job_id": id[:8]})
	if st["state"] != "exited" || st["exit_code"] != 3.0 || st["principal"] != "alice" {
		t.Errorf("job_status = %v", st)
	}
	// The same object as GET /v1/jobs/{id}.
	req, _ := http.NewRequest("GET", e.url+"/v1/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var viaHTTP map[string]any
	if err := json.Unmarshal(body, &viaHTTP); err != nil || !reflect.DeepEqual(viaHTTP, st) {
		t.Errorf("GET /v1/jobs/%s = %s (%v); job_status gave %v", id, body, err, st)
	}
	tail := jobTool(t, alice, "job_tail", map[string]any{"job_id": id, "lines": 1})
	if tail["stdout_tail"] != "hi\n" || tail["stdout_observed_bytes"] != 3.0 {
		t.Errorf("job_tail = %v", tail)
	}
	// read_output pages a job's logs by byte offset, as a kept output's.
	for stream, want := range map[string]string{"stdout": "hi\n", "stderr": "ops\n"} {
		start := map[string]int{"stdout": 0, "stderr": 1}[stream]
		page := structured(t, callTool(t, alice, "read_output", map[string]any{"output_id": id, "stream": stream, "start": start}))
		if page["stdout_text"] != want || page["has_next_start"] != false || page["output_id"] != id {
			t.Errorf("read_output(job %s, %s) = %v, want %q", id, stream, page, want)
		}
	}
	if r := callTool(t, bob, "read_output", map[string]any{"output_id": id}); !r.IsError {
		t.Errorf("bob read alice's job log: %q", text(r))
	}
	list := jobTool(t, alice, "job_list", map[string]any{"limit": 5})
	if jobs, _ := list["jobs"].([]any); len(jobs) != 1 || list["truncated"] != false {
		t.Errorf("job_list = %v", list)
	}

	// Bob sees none of it.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"job_status", map[string]any{"job_id": id}}, {"job_tail", map[string]any{"job_id": id}}, {"job_wait", map[string]any{"job_id": id, "timeout_ms": 10}}, {"job_kill", map[string]any{"job_id": id}}} {
		if got := jobTool(t, bob, c.tool, c.args); errorCode(got) != "job_not_found" {
			t.Errorf("bob %s = %v; want job_not_found", c.tool, got)
		}
	}
	if got := jobTool(t, bob, "job_list", nil); len(got["jobs"].([]any)) != 0 {
		t.Errorf("bob's job_list = %v", got)
	}

	// A long job, waited for in vain, then killed; killing it again is invalid_state.
	// A unique sleep time marks the job's processes.
	marker := fmt.Sprintf("1000.%09d", time.Now().UnixNano()%1e9)
	long := jobTool(t, alice, "job_run", map[string]any{"command": "echo started; sleep " + marker + "; true", "snapshot_after_ms": 0})
	lid, _ := long["job_id"].(string)
	if long["state"] != "running" {
		t.Fatalf("job_run of a long job = %v", long)
	}
	if w := jobTool(t, alice, "job_wait", map[string]any{"job_id": lid, "timeout_ms": 50}); w["finished"] != false || w["timed_out"] != true || w["state"] != "running" {
		t.Errorf("job_wait of a running job = %v", w)
	}
	for deadline := time.Now().Add(10 * time.Second); len(processesWith(t, marker)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no process of the job (sleep %s) appeared", marker)
		}
	}
	k := jobTool(t, alice, "job_kill", map[string]any{"job_id": lid, "signal": "TERM"})
	if k["state"] != "killed" || k["signal"] != "TERM" || k["killed_by"] != "alice" {
		t.Errorf("job_kill = %v", k)
	}
	if again := jobTool(t, alice, "job_kill", map[string]any{"job_id": lid}); errorCode(again) != "invalid_state" {
		t.Errorf("job_kill of a killed job = %v", again)
	}
	if pids := processesWith(t, marker); len(pids) > 0 {
		t.Errorf("processes %v of the killed job are still there", pids)
	}

	// Denied, and bad arguments: clear errors, nothing started.
	if d := jobTool(t, alice, "job_run", map[string]any{"command": "rm -rf /"}); errorCode(d) != "denied" || d["error"].(map[string]any)["decision_id"] == "" {
		t.Errorf("job_run of rm -rf / = %v", d)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"job_run", map[string]any{}},
		{"job_run", map[string]any{"command": "true", "argv": []string{"true"}}},
		{"job_run", map[string]any{"command": "true", "bogus": 1}},
		{"job_run", map[string]any{"argv": "true"}},
		{"job_run", map[string]any{"command": "true", "timeout_ms": 1.5}},
		{"job_run", map[string]any{"command": "true\x00"}},
		{"job_run", map[string]any{"command": "true", "cwd": "../../etc"}},
		{"job_status", map[string]any{}},
		{"job_status", map[string]any{"job_id": "../../etc"}},
		{"job_status", map[string]any{"job_id": "abc"}},
		{"job_status", map[string]any{"job_id": 12345678}},
		{"job_tail", map[string]any{"job_id": id, "lines": -1}},
		{"job_tail", map[string]any{"job_id": id, "max_bytes": 0}},
		{"job_wait", map[string]any{"job_id": id, "timeout_ms": 0}},
		{"job_list", map[string]any{"state": "bogus"}},
		{"job_list", map[string]any{"limit": "ten"}},
		{"job_kill", map[string]any{"job_id": id, "extra": true}},
	} {
		if got := jobTool(t, alice, c.tool, c.args); errorCode(got) != "invalid_input" {
			t.Errorf("%s(%v) = %v; want invalid_input", c.tool, c.args, got)
		}
	}
	if got := jobTool(t, alice, "job_list", nil); len(got["jobs"].([]any)) != 2 {
		t.Errorf("after the bad calls, job_list = %v; want the two jobs started", got)
	}
}

// Without jobs the server has no job tools and its instructions do not offer them.
func TestNoJobTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *gateway.Options) { o.Jobs.Disabled = true })
	s := e.session(t, e.alice)
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if strings.HasPrefix(tl.Name, "job_") {
			t.Errorf("tool %s offered with jobs disabled", tl.Name)
		}
	}
	if in := s.InitializeResult().Instructions; strings.Contains(in, "job_run") || strings.Contains(in, "/v1/jobs") {
		t.Errorf("instructions offer jobs with jobs disabled:\n%s", in)
	}
	e2 := jobEnv(t)
	if in := e2.session(t, e2.alice).InitializeResult().Instructions; !strings.Contains(in, "job_run") {
		t.Errorf("instructions do not offer the job tools:\n%s", in)
	}
}

// processesWith lists the pids whose command line contains marker.
func processesWith(t *testing.T, marker string) []int {
	if _, err := os.Stat("/proc"); err != nil {
		t.Skip("no /proc here")
	}
	return testenv.ProcessesWith(marker)
}

// job_run waiting for a human's approval, and job_wait waiting for a job, send
// progress notifications when the call carries a progress token, saying which.
func TestJobToolsProgress(t *testing.T) {
	t.Parallel()
	e := jobEnv(t, func(o *gateway.Options) { o.Approvals.Wait = 2500 * time.Millisecond })
	var mu sync.Mutex
	got := map[any][]string{}
	c := sdk.NewClient(&sdk.Implementation{Name: "cmdgate-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got[req.Params.ProgressToken] = append(got[req.Params.ProgressToken], req.Params.Message)
		},
	})
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: e.url + mcp.Path, HTTPClient: &http.Client{Transport: bearer{e.alice}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call := func(tool, token string, args map[string]any) map[string]any {
		p := &sdk.CallToolParams{Name: tool, Arguments: args}
		p.SetProgressToken(token)
		res, err := s.CallTool(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal([]byte(text(res)), &m)
		return m
	}
	asked := call("job_run", "ask", map[string]any{"command": "find . -name '*.tmp' -delete"})
	if errorCode(asked) != "approval_pending" {
		t.Fatalf("job_run of find -delete = %v; want approval_pending", asked)
	}
	approval, _ := asked["error"].(map[string]any)["approval_id"].(string)
	run := call("job_run", "run", map[string]any{"command": "sleep 2.5", "snapshot_after_ms": 0})
	waited := call("job_wait", "wait", map[string]any{"job_id": run["job_id"], "timeout_ms": 30000})
	if waited["finished"] != true || waited["state"] != "exited" {
		t.Fatalf("job_wait = %v", waited)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got["ask"]) < 2 || !strings.Contains(got["ask"][0], "approval "+approval) {
		t.Errorf("job_run waiting for approval %s: notifications %q", approval, got["ask"])
	}
	if len(got["wait"]) < 1 || !strings.HasPrefix(got["wait"][0], "waiting for the job for ") {
		t.Errorf("job_wait: notifications %q", got["wait"])
	}
	if len(got["run"]) != 0 {
		t.Errorf("job_run answering at once sent notifications %q", got["run"])
	}
}
