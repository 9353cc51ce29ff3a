package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/google/go-cmp/cmp"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/policies"
)

type execOut struct {
	Decision        string   `json:"decision"`
	DecisionID      string   `json:"decision_id"`
	Revision        string   `json:"revision"`
	Cwd             string   `json:"cwd"`
	Command         []string `json:"command"`
	ExitCode        int      `json:"exit_code"`
	Stdout          string   `json:"stdout"`
	Stderr          string   `json:"stderr"`
	StdoutTruncated bool     `json:"stdout_truncated"`
	TimedOut        bool     `json:"timed_out"`
	DurationMS      int64    `json:"duration_ms"`
	StdoutBytes     int64    `json:"stdout_bytes"`
}

type errOut struct {
	Error struct {
		Code       string           `json:"code"`
		Message    string           `json:"message"`
		Decision   string           `json:"decision"`
		DecisionID string           `json:"decision_id"`
		Reasons    []gateway.Reason `json:"reasons"`
		RequestID  string           `json:"request_id"`
	} `json:"error"`
}

// TestExecRecordsBeforeRunning: an allowed command runs and answers seed 000's output
// plus the decision; its decision record (with the request id the client chose) comes
// before its execution record, which names it.
func TestExecRecordsBeforeRunning(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a := env.do("POST", "/v1/exec", "agent", []byte(`{"command":"echo out; echo err >&2; exit 3","cwd":"sub","stdin":"ignored"}`), "X-Request-Id", "client-req-42")
	if a.status != http.StatusOK {
		t.Fatalf("exec: %d %s", a.status, a.body)
	}
	if got := a.header.Get("X-Request-Id"); got != "client-req-42" {
		t.Errorf("X-Request-Id = %q, want the client's", got)
	}
	var out execOut
	a.decode(t, &out)
	want := execOut{
		Decision: "allow", DecisionID: out.DecisionID, Revision: env.srv.Revision(),
		Cwd: filepath.Join(env.ws, "sub"), Command: []string{"echo out; echo err >&2; exit 3"},
		ExitCode: 3, Stdout: "out\n", Stderr: "err\n", DurationMS: out.DurationMS, StdoutBytes: 4,
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("exec answer (-want +got):\n%s", diff)
	}

	recs := env.records()
	var dec, exe *audit.Record
	for i := range recs {
		switch {
		case recs[i].Kind == audit.KindDecision && recs[i].RequestID == "client-req-42":
			dec = &recs[i]
		case recs[i].Kind == audit.KindExecution && recs[i].RequestID == "client-req-42":
			exe = &recs[i]
		}
	}
	if dec == nil || exe == nil {
		t.Fatalf("records of the request: decision %v, execution %v; want both", dec, exe)
	}
	if dec.ID != out.DecisionID || dec.Decision != "allow" || dec.Principal.Name != "agent-tok" || dec.Revision != env.srv.Revision() {
		t.Errorf("decision record %+v does not match the answer %+v", dec, out)
	}
	if dec.Seq >= exe.Seq || exe.DecisionID != dec.ID {
		t.Errorf("execution record (seq %d, decision %s) must follow the decision record (seq %d, id %s)", exe.Seq, exe.DecisionID, dec.Seq, dec.ID)
	}
	wantExec := &audit.Execution{ExitCode: 3, DurationMS: out.DurationMS, StdoutBytes: 4, StderrBytes: 4}
	if diff := cmp.Diff(wantExec, exe.Execution); diff != "" {
		t.Errorf("execution summary (-want +got):\n%s", diff)
	}
	var input struct {
		Principal struct{ Name, Role string }
		Request   struct {
			ID, Cwd, Workspace, Task, Profile string
		}
	}
	if err := json.Unmarshal(dec.Input, &input); err != nil {
		t.Fatal(err)
	}
	if input.Request.ID != "client-req-42" || input.Request.Cwd != filepath.Join(env.ws, "sub") ||
		input.Request.Workspace != env.ws || input.Principal.Role != "agent" || input.Request.Task != "default" || input.Request.Profile != policies.ProfileStrict {
		t.Errorf("policy input of the record: %+v", input)
	}

	// An unusable X-Request-Id is replaced by a generated one.
	for _, bad := range []string{"has space", strings.Repeat("x", 129), "tab\tin"} {
		a := env.do("POST", "/v1/decide", "agent", []byte(`{"argv":["ls"]}`), "X-Request-Id", bad)
		if got := a.header.Get("X-Request-Id"); got == bad || len(got) != 26 {
			t.Errorf("X-Request-Id %q answered as %q, want a generated id", bad, got)
		}
	}
}

// TestEveryExecutionHasItsDecisionFirst runs several commands and checks the pairing
// over the whole log.
func TestEveryExecutionHasItsDecisionFirst(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	for _, body := range []string{`{"command":"echo a"}`, `{"argv":["echo","b"]}`, `{"argv":["echo","c"],"shell_mode":"direct"}`, `{"argv":["no-such-cmd-xyz"],"shell_mode":"direct"}`} {
		env.do("POST", "/v1/exec", "agent", []byte(body))
	}
	seen := map[string]audit.Record{}
	executions := 0
	for _, r := range env.records() {
		switch r.Kind {
		case audit.KindDecision:
			seen[r.ID] = r
		case audit.KindExecution:
			executions++
			d, ok := seen[r.DecisionID]
			if !ok {
				t.Errorf("execution %s names decision %s, which does not come before it", r.ID, r.DecisionID)
				continue
			}
			if d.RequestID != r.RequestID || d.Decision != "allow" {
				t.Errorf("execution %s (request %s) pairs with decision %s (request %s, %s)", r.ID, r.RequestID, d.ID, d.RequestID, d.Decision)
			}
		}
	}
	if executions != 4 {
		t.Errorf("%d execution records, want 4", executions)
	}
}

// TestDeniedAndAsk: deny is 403 DENIED and ask 202 APPROVAL_PENDING (with the
// approval's id), each with the reasons and the decision id; nothing runs, and the
// decision record says deny or ask.
func TestDeniedAndAsk(t *testing.T) {
	t.Parallel()
	env := newEnv(t, func(o *gateway.Options) { o.Policy.UnknownCommand = policies.ActionAsk })
	for _, tc := range []struct {
		name, script, decision, rule string
		status                       int
		code                         string
	}{
		{"deny", "touch denied-marker && rm -rf /", "deny", "forbidden.rm_recursive_force", http.StatusForbidden, gateway.CodeDenied},
		{"ask", "touch ask-marker; frobnicate-xyz --now", "ask", "", http.StatusAccepted, gateway.CodeApprovalPending},
	} {
		a := env.exec("agent", map[string]any{"command": tc.script})
		var e errOut
		a.decode(t, &e)
		if a.status != tc.status || e.Error.Code != tc.code || e.Error.Decision != tc.decision || e.Error.DecisionID == "" || len(e.Error.Reasons) == 0 {
			t.Errorf("%s: %d %s, want %d %s decision %s with reasons", tc.name, a.status, a.body, tc.status, tc.code, tc.decision)
			continue
		}
		if got := strings.Contains(string(a.body), `"approval_id"`); got != (tc.decision == "ask") {
			t.Errorf("%s: approval_id in the answer: %v", tc.name, got)
		}
		if tc.rule != "" && e.Error.Reasons[0].Rule != tc.rule {
			t.Errorf("%s: first reason %+v, want rule %s", tc.name, e.Error.Reasons[0], tc.rule)
		}
		if tc.decision == "ask" && !strings.Contains(e.Error.Message, "approval") {
			t.Errorf("ask: message %q should say an approval is needed", e.Error.Message)
		}
		if env.exists(tc.name + "-marker") {
			t.Errorf("%s: the command ran", tc.name)
		}
		rec, err := env.srv.AuditStore().Get(t.Context(), e.Error.DecisionID)
		if err != nil || rec.Decision != tc.decision || rec.Kind != audit.KindDecision || len(rec.Reasons) == 0 {
			t.Errorf("%s: decision record %+v, %v", tc.name, rec, err)
		}

		// /v1/decide answers the same decision as a result (200), running nothing.
		d := env.do("POST", "/v1/decide", "agent", mustJSON(t, map[string]any{"command": tc.script}))
		var out struct {
			Decision   string
			DecisionID string `json:"decision_id"`
			Reasons    []gateway.Reason
			Commands   []json.RawMessage
		}
		d.decode(t, &out)
		if d.status != http.StatusOK || out.Decision != tc.decision || out.DecisionID == "" || len(out.Reasons) == 0 || len(out.Commands) < 2 {
			t.Errorf("decide %s: %d %s", tc.name, d.status, d.body)
		}
	}
	if n := len(env.recordsOf(audit.KindExecution)); n != 0 {
		t.Errorf("%d execution records, want none", n)
	}
}

// TestExecutorErrors: the executor's errors reach the client under their codes, with
// the decision id, and are recorded as executions that did not happen.
func TestExecutorErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a := env.exec("agent", map[string]any{"argv": []string{"no-such-cmd-xyz", "x"}, "shell_mode": "direct"})
	var e errOut
	a.decode(t, &e)
	if a.status != http.StatusUnprocessableEntity || e.Error.Code != gateway.CodeCommandNotFound || !strings.Contains(e.Error.Message, "no-such-cmd-xyz") || e.Error.DecisionID == "" {
		t.Errorf("unknown command: %d %s, want 422 COMMAND_NOT_FOUND naming it", a.status, a.body)
	}
	var found bool
	for _, r := range env.recordsOf(audit.KindExecution) {
		if r.DecisionID == e.Error.DecisionID && strings.Contains(r.Execution.Error, "COMMAND_NOT_FOUND") {
			found = true
		}
	}
	if !found {
		t.Errorf("no execution record with the COMMAND_NOT_FOUND error for decision %s", e.Error.DecisionID)
	}

	// A timeout is a result: exit 124, timed_out, the partial output.
	a = env.exec("agent", map[string]any{"command": "echo before; sleep 5", "timeout_ms": 300})
	var out execOut
	a.decode(t, &out)
	if a.status != http.StatusOK || !out.TimedOut || out.ExitCode != 124 || out.Stdout != "before\n" {
		t.Errorf("timeout: %d %s, want 200 timed_out exit 124 with the partial output", a.status, a.body)
	}
	// The output cap.
	a = env.exec("agent", map[string]any{"command": "printf '%s' " + strings.Repeat("x", 3000), "max_output_chars": 1000})
	out = execOut{}
	a.decode(t, &out)
	if a.status != http.StatusOK || !out.StdoutTruncated || len(out.Stdout) != 1000 || out.StdoutBytes != 3000 {
		t.Errorf("cap: %d stdout %d chars truncated %v bytes %d, want 1000 of 3000", a.status, len(out.Stdout), out.StdoutTruncated, out.StdoutBytes)
	}
}

// TestAuditStoreDownRunsNothing closes the audit store for real: the decision cannot be
// recorded, so the request is 503 UNAVAILABLE and the command does not run.
func TestAuditStoreDownRunsNothing(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if err := env.srv.AuditStore().Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := env.exec("agent", map[string]any{"command": "touch down-marker"})
	if a.status != http.StatusServiceUnavailable || a.errorCode() != gateway.CodeUnavailable {
		t.Errorf("exec with the audit store down: %d %s, want 503 UNAVAILABLE", a.status, a.body)
	}
	if env.exists("down-marker") {
		t.Error("the command ran without a durable decision record")
	}
	if strings.Contains(string(a.body), "closed") || strings.Contains(string(a.body), "sqlite") {
		t.Errorf("the answer leaks internals: %s", a.body)
	}
}

// panicRunner is a fake executor that panics: a fault that cannot be produced for real
// in the pipeline, used only to prove the panic recovery.
type panicRunner struct{}

func (panicRunner) Run(context.Context, executor.Spec) (executor.Result, error) {
	panic("secret internal state 0xdeadbeef")
}

func TestPanicIsInternalWithoutLeaking(t *testing.T) {
	t.Parallel()
	env := newEnv(t, func(o *gateway.Options) { o.Runner = panicRunner{} })
	a := env.exec("agent", map[string]any{"command": "echo hi"})
	if a.status != http.StatusInternalServerError || a.errorCode() != gateway.CodeInternal {
		t.Fatalf("panic: %d %s, want 500 INTERNAL", a.status, a.body)
	}
	if strings.Contains(string(a.body), "deadbeef") || strings.Contains(string(a.body), "panic") || strings.Contains(string(a.body), ".go") {
		t.Errorf("the answer leaks internals: %s", a.body)
	}
	// The server goes on serving.
	if a := env.do("GET", "/healthz", "none", nil); a.status != http.StatusOK {
		t.Errorf("after the panic: healthz %d", a.status)
	}
	if n := env.metric("cmdgate_commands_in_flight"); n != 0 {
		t.Errorf("commands in flight after the panic: %v, want 0", n)
	}
}

// TestWorkspaceRelativeFiles: commands run in the resolved cwd and see the workspace.
func TestWorkspaceRelativeFiles(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if err := os.WriteFile(filepath.Join(env.ws, "sub", "hello.txt"), []byte("content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := env.exec("agent", map[string]any{"argv": []string{"cat", "hello.txt"}, "cwd": `sub\`})
	var out execOut
	a.decode(t, &out)
	if a.status != http.StatusOK || out.Stdout != "content\n" {
		t.Errorf("cat in sub: %d %s", a.status, a.body)
	}
}

// TestUnrecordableRequest: a request whose policy input is too large for the audit log
// (tens of thousands of commands) cannot have a durable decision record, so it is
// refused as INVALID_ARGUMENT and nothing runs.
func TestUnrecordableRequest(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a := env.exec("agent", map[string]any{"command": strings.Repeat("touch big-marker;", 3800)})
	if a.status != http.StatusBadRequest || a.errorCode() != gateway.CodeInvalidArgument || !strings.Contains(string(a.body), "cannot be recorded") {
		t.Errorf("unrecordable request: %d %.300s, want 400 INVALID_ARGUMENT", a.status, a.body)
	}
	if env.exists("big-marker") {
		t.Error("the command ran without a decision record")
	}
}
