package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/gateway"
)

// askEnv is a gateway where `touch` is outside the allowlist and such commands ask.
func askEnv(t *testing.T, configure ...func(*gateway.Options)) *testEnv {
	t.Helper()
	return newEnv(t, append([]func(*gateway.Options){func(o *gateway.Options) {
		o.Policy.AllowedCommands.Exclude = []string{"touch"}
		o.Policy.UnknownCommand = "ask"
	}}, configure...)...)
}

// approvalJSON is an approval as the API answers it.
type approvalJSON struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Principal struct {
		Name string `json:"name"`
	} `json:"principal"`
	Request struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
	} `json:"request"`
	AskCommands   []int  `json:"ask_commands"`
	DecisionID    string `json:"decision_id"`
	RunDecisionID string `json:"run_decision_id"`
	Comment       string `json:"comment"`
	DecidedBy     *struct {
		Name string `json:"name"`
	} `json:"decided_by"`
	Result *struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	} `json:"result"`
}

// pendingAnswer is the 202 of an exec that needs an approval.
type pendingAnswer struct {
	Error struct {
		Code       string           `json:"code"`
		Decision   string           `json:"decision"`
		DecisionID string           `json:"decision_id"`
		ApprovalID string           `json:"approval_id"`
		Reasons    []gateway.Reason `json:"reasons"`
		Message    string           `json:"message"`
	} `json:"error"`
}

func (e *testEnv) ask(t *testing.T, who string, body map[string]any) pendingAnswer {
	t.Helper()
	a := e.exec(who, body)
	var p pendingAnswer
	a.decode(t, &p)
	if a.status != http.StatusAccepted || p.Error.Code != gateway.CodeApprovalPending || p.Error.ApprovalID == "" ||
		p.Error.Decision != "ask" || p.Error.DecisionID == "" || len(p.Error.Reasons) == 0 {
		t.Fatalf("exec %v = %d %s; want 202 APPROVAL_PENDING with approval_id, decision ask, decision_id and reasons", body, a.status, a.body)
	}
	return p
}

func (e *testEnv) approval(t *testing.T, who, id string, query string) approvalJSON {
	t.Helper()
	a := e.do("GET", "/v1/approvals/"+id+query, who, nil)
	if a.status != http.StatusOK {
		t.Fatalf("GET approval %s as %s: %d %s", id, who, a.status, a.body)
	}
	var out approvalJSON
	a.decode(t, &out)
	return out
}

func (e *testEnv) decideApproval(who, id, verdict string, body any) answer {
	e.t.Helper()
	var b []byte
	if body != nil {
		b = mustJSON(e.t, body)
	}
	return e.do("POST", "/v1/approvals/"+id+"/"+verdict, who, b)
}

// The whole flow: ask → 202 with the approval's id, nothing runs; the requester and an
// auditor may not decide (403, audited); an approver approves and the held request
// runs once, under a decision record of its own; deciding again is 409; the audit
// chain holds every step and verifies.
func TestApprovalFlow(t *testing.T) {
	t.Parallel()
	env := askEnv(t)
	p := env.ask(t, "agent", map[string]any{"command": "touch marker && echo made", "cwd": "sub"})
	id := p.Error.ApprovalID
	if env.exists("sub/marker") {
		t.Fatal("the command ran before anyone approved it")
	}
	a := env.approval(t, "agent", id, "")
	if a.State != gateway.ApprovalPending || a.Request.Command != "touch marker && echo made" || a.Request.Cwd != filepath.Join(env.ws, "sub") ||
		a.DecisionID != p.Error.DecisionID || len(a.AskCommands) != 1 || a.AskCommands[0] != 0 || a.Principal.Name != "agent-tok" {
		t.Errorf("the approval as its requester sees it: %+v", a)
	}
	for _, who := range []string{"agent", "auditor"} {
		if r := env.decideApproval(who, id, "approve", nil); r.status != http.StatusForbidden || r.errorCode() != gateway.CodeForbidden {
			t.Errorf("approve as %s: %d %s; want 403 FORBIDDEN", who, r.status, r.body)
		}
	}
	r := env.decideApproval("approver", id, "approve", map[string]any{"comment": "looks fine", "scope": "once"})
	if r.status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	done := env.approval(t, "approver", id, "?wait_ms=20000")
	if done.State != gateway.ApprovalCompleted || done.Result == nil || done.Result.Stdout != "made\n" || done.DecidedBy == nil ||
		done.DecidedBy.Name != "approver-tok" || done.Comment != "looks fine" || done.RunDecisionID == "" {
		t.Fatalf("after the approval: %+v", done)
	}
	if !env.exists("sub/marker") {
		t.Error("the approved command did not run")
	}
	for _, verdict := range []string{"approve", "deny"} {
		if r := env.decideApproval("approver", id, verdict, nil); r.status != http.StatusConflict || r.errorCode() != gateway.CodeConflict {
			t.Errorf("%s a second time: %d %s; want 409 CONFLICT", verdict, r.status, r.body)
		}
	}

	// The chain: requested, two refusals, approved; the decision that allowed the run,
	// and its execution; it verifies.
	var events []string
	for _, rec := range env.recordsOf(audit.KindApproval) {
		if rec.DecisionID != p.Error.DecisionID {
			t.Errorf("approval record %s names decision %s, want %s", rec.Decision, rec.DecisionID, p.Error.DecisionID)
		}
		events = append(events, rec.Principal.Name+":"+rec.Decision)
	}
	if got := strings.Join(events, ","); got != "agent-tok:requested,agent-tok:refused,auditor-tok:refused,approver-tok:approved" {
		t.Errorf("approval records: %s", got)
	}
	var runDecision, execution bool
	for _, rec := range env.records() {
		switch {
		case rec.Kind == audit.KindDecision && rec.ID == done.RunDecisionID:
			runDecision = rec.Decision == "allow" && rec.Principal.Name == "agent-tok" && len(rec.Reasons) == 1 && rec.Reasons[0].Rule == "approval.approved"
		case rec.Kind == audit.KindExecution && rec.DecisionID == done.RunDecisionID:
			execution = rec.Execution != nil && rec.Execution.ExitCode == 0
		}
	}
	if !runDecision || !execution {
		t.Errorf("the run's decision record (%v) and execution record (%v)", runDecision, execution)
	}
	var v struct {
		OK bool `json:"ok"`
	}
	env.do("GET", "/v1/audit/verify", "auditor", nil).decode(t, &v)
	if !v.OK {
		t.Error("the audit chain does not verify after the approval")
	}
}

// A request that waits gets the command's result once it is approved, or DENIED once
// it is denied, as if the policy had answered so.
func TestApprovalWait(t *testing.T) {
	t.Parallel()
	env := askEnv(t)
	pendingID := func() string {
		return waitFor(t, "a pending approval", func() (string, bool) {
			var page struct {
				Approvals []approvalJSON `json:"approvals"`
			}
			env.do("GET", "/v1/approvals?state=pending", "approver", nil).decode(t, &page)
			if len(page.Approvals) == 1 {
				return page.Approvals[0].ID, true
			}
			return "", false
		})
	}
	answers := make(chan answer, 1)
	go func() {
		answers <- env.exec("agent", map[string]any{"command": "touch waited && echo ran", "wait_ms": 20000})
	}()
	id := pendingID()
	if r := env.decideApproval("approver", id, "approve", nil); r.status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	a := <-answers
	var res struct {
		Decision   string `json:"decision"`
		DecisionID string `json:"decision_id"`
		Stdout     string `json:"stdout"`
		ExitCode   int    `json:"exit_code"`
	}
	a.decode(t, &res)
	if a.status != http.StatusOK || res.Decision != "allow" || res.Stdout != "ran\n" || res.DecisionID != env.approval(t, "agent", id, "").RunDecisionID {
		t.Errorf("the waiting exec after the approval: %d %s", a.status, a.body)
	}

	go func() { answers <- env.exec("agent", map[string]any{"command": "touch refused", "wait_ms": 20000}) }()
	id = pendingID()
	if r := env.decideApproval("approver", id, "deny", map[string]any{"comment": "not today"}); r.status != http.StatusOK {
		t.Fatalf("deny: %d %s", r.status, r.body)
	}
	a = <-answers
	var p pendingAnswer
	a.decode(t, &p)
	if a.status != http.StatusForbidden || p.Error.Code != gateway.CodeDenied || p.Error.ApprovalID != id || !strings.Contains(p.Error.Message, "not today") {
		t.Errorf("the waiting exec after the denial: %d %s", a.status, a.body)
	}
	if env.exists("refused") {
		t.Error("a denied command ran")
	}
}

// Nobody may decide their own request, whatever their role; an agent sees only its own
// approvals; a pending approval nobody decides expires, which denies it.
func TestApprovalRules(t *testing.T) {
	t.Parallel()
	env := askEnv(t, func(o *gateway.Options) { o.Approvals.Expiry = 500 * time.Millisecond })
	env.tokens["agent2"] = "Bearer " + env.token("agent-two", gateway.RoleAgent)

	own := env.ask(t, "admin", map[string]any{"argv": []string{"touch", "mine"}})
	r := env.decideApproval("admin", own.Error.ApprovalID, "approve", nil)
	if r.status != http.StatusForbidden || !strings.Contains(string(r.body), "own") {
		t.Errorf("an admin approving its own request: %d %s; want 403", r.status, r.body)
	}

	p := env.ask(t, "agent", map[string]any{"argv": []string{"touch", "later"}})
	if a := env.do("GET", "/v1/approvals/"+p.Error.ApprovalID, "agent2", nil); a.status != http.StatusNotFound {
		t.Errorf("another agent reading the approval: %d, want 404", a.status)
	}
	var page struct {
		Approvals []approvalJSON `json:"approvals"`
	}
	env.do("GET", "/v1/approvals", "agent2", nil).decode(t, &page)
	if len(page.Approvals) != 0 {
		t.Errorf("another agent lists %d approvals, want none of others'", len(page.Approvals))
	}
	env.do("GET", "/v1/approvals", "auditor", nil).decode(t, &page)
	if len(page.Approvals) != 2 {
		t.Errorf("an auditor lists %d approvals, want 2", len(page.Approvals))
	}

	expired := waitFor(t, "the approval to expire", func() (string, bool) {
		a := env.approval(t, "agent", p.Error.ApprovalID, "?wait_ms=200")
		return a.State, a.State != gateway.ApprovalPending
	})
	if expired != gateway.ApprovalExpired {
		t.Fatalf("state after the expiry: %s", expired)
	}
	if r := env.decideApproval("approver", p.Error.ApprovalID, "approve", nil); r.status != http.StatusConflict {
		t.Errorf("approving an expired approval: %d %s; want 409", r.status, r.body)
	}
	if env.exists("later") || env.exists("mine") {
		t.Error("a command ran without an approval")
	}
	found := false
	for _, rec := range env.recordsOf(audit.KindApproval) {
		found = found || rec.Decision == "expired" && rec.DecisionID == p.Error.DecisionID
	}
	if !found {
		t.Error("no expired record in the audit log")
	}
}

// Bad input to the approval endpoints is a clear 4xx, never a decision.
func TestApprovalBadInput(t *testing.T) {
	t.Parallel()
	env := askEnv(t)
	id := env.ask(t, "agent", map[string]any{"argv": []string{"touch", "x"}}).Error.ApprovalID
	for _, c := range []struct {
		method, path string
		body         []byte
		status       int
	}{
		{"POST", "/v1/approvals/" + id + "/approve", []byte(`{"comment": 3}`), 400},
		{"POST", "/v1/approvals/" + id + "/approve", []byte(`{"forever": true}`), 400},
		{"POST", "/v1/approvals/" + id + "/approve", []byte(`{"scope": "forever"}`), 400},
		{"POST", "/v1/approvals/" + id + "/approve", []byte("{\"comment\": \"\xff\"}"), 400},
		{"POST", "/v1/approvals/" + id + "/approve", []byte(`{"comment": "a\u0000b"}`), 400},
		{"POST", "/v1/approvals/" + id + "/approve", []byte(`[]`), 400},
		{"POST", "/v1/approvals/" + id + "/approve", []byte(`{"comment": "` + strings.Repeat("x", 3000) + `"}`), 400},
		{"POST", "/v1/approvals/../../v1/exec/approve", nil, 404},
		{"POST", "/v1/approvals/01ZZZZZZZZZZZZZZZZZZZZZZZZ/approve", nil, 404},
		{"GET", "/v1/approvals/" + id + "?wait_ms=-1", nil, 400},
		{"GET", "/v1/approvals?state=bogus", nil, 400},
		{"GET", "/v1/approvals?limit=0", nil, 400},
		{"GET", "/v1/approvals?color=red", nil, 400},
		{"POST", "/v1/approvals/" + id + "/approve", []byte(`{}`), 403}, // as the agent below
	} {
		who := "approver"
		if c.status == 403 {
			who = "agent"
		}
		if a := env.do(c.method, c.path, who, c.body); a.status != c.status {
			t.Errorf("%s %s %.60q: %d %s; want %d", c.method, c.path, c.body, a.status, a.body, c.status)
		}
	}
	if a := env.approval(t, "approver", id, ""); a.State != gateway.ApprovalPending {
		t.Errorf("after the bad requests the approval is %s", a.State)
	}
	if a := env.exec("agent", map[string]any{"argv": []string{"touch", "x"}, "wait_ms": -5}); a.status != 400 {
		t.Errorf("exec with a negative wait_ms: %d", a.status)
	}
}

// With approvals off, ask is refused at once, as before.
func TestApprovalsDisabled(t *testing.T) {
	t.Parallel()
	env := askEnv(t, func(o *gateway.Options) { o.Approvals.Disabled = true })
	a := env.exec("agent", map[string]any{"argv": []string{"touch", "x"}})
	if a.status != http.StatusForbidden || a.errorCode() != gateway.CodeDenied || strings.Contains(string(a.body), "approval_id") {
		t.Errorf("ask with approvals off: %d %s; want 403 DENIED without an approval", a.status, a.body)
	}
}

// Approvals survive a restart: one left pending is approved by the next gateway on the
// same data directory and runs.
func TestApprovalRestart(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := gateway.Options{Workspace: ws, DataDir: filepath.Join(base, "data"), Sandbox: gateway.SandboxProcess}
	opts.Policy.AllowedCommands.Exclude = []string{"touch"}
	opts.Policy.UnknownCommand = "ask"
	start := func() (*gateway.Server, *httptest.Server) {
		srv, err := gateway.New(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return srv, httptest.NewServer(New(srv).Handler())
	}
	srv, hs := start()
	agent, _, _ := srv.Tokens().Create("agent", gateway.RoleAgent)
	approver, _, _ := srv.Tokens().Create("approver", gateway.RoleApprover)
	env := &testEnv{t: t, srv: srv, url: hs.URL, ws: ws, tokens: map[string]string{"agent": "Bearer " + agent, "approver": "Bearer " + approver}}
	id := env.ask(t, "agent", map[string]any{"argv": []string{"touch", "after-restart"}}).Error.ApprovalID
	hs.Close()
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	srv, hs = start()
	defer func() { hs.Close(); srv.Close(context.Background()) }()
	env.srv, env.url = srv, hs.URL
	if a := env.approval(t, "approver", id, ""); a.State != gateway.ApprovalPending {
		t.Fatalf("after the restart the approval is %s", a.State)
	}
	if r := env.decideApproval("approver", id, "approve", nil); r.status != http.StatusOK {
		t.Fatalf("approve after the restart: %d %s", r.status, r.body)
	}
	if a := env.approval(t, "agent", id, "?wait_ms=20000"); a.State != gateway.ApprovalCompleted || !env.exists("after-restart") {
		t.Errorf("the approval approved after the restart: %s", a.State)
	}

	// A grant made before a restart allows after it.
	env.approveWith(t, "agent", map[string]any{"argv": []string{"touch", "granted"}}, map[string]any{"scope": "command"})
	hs.Close()
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, hs = start()
	env.srv, env.url = srv, hs.URL
	if got := env.status("agent", map[string]any{"argv": []string{"touch", "granted"}}); got != http.StatusOK {
		t.Errorf("the grant after a restart: %d, want 200", got)
	}
}

// The event stream opens with the pending approvals, then sends each change as it
// happens; agents may not read it.
func TestApprovalStream(t *testing.T) {
	t.Parallel()
	env := askEnv(t)
	if a := env.do("GET", "/v1/approvals/stream", "agent", nil); a.status != http.StatusForbidden {
		t.Errorf("an agent opening the stream: %d, want 403", a.status)
	}
	first := env.ask(t, "agent", map[string]any{"argv": []string{"touch", "one"}}).Error.ApprovalID
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", env.url+"/v1/approvals/stream", nil)
	req.Header.Set("Authorization", env.tokens["approver"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	type event struct {
		Type     string       `json:"type"`
		Approval approvalJSON `json:"approval"`
	}
	events := make(chan event, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var ev event
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev) == nil && ev.Type == name {
					events <- ev
				}
			}
		}
		close(events)
	}()
	next := func() event {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-time.After(20 * time.Second):
			t.Fatal("no event within 20 s")
		}
		return event{}
	}
	if ev := next(); ev.Type != "requested" || ev.Approval.ID != first {
		t.Errorf("the stream's first event: %+v; want the pending approval", ev)
	}
	second := env.ask(t, "agent", map[string]any{"argv": []string{"touch", "two"}}).Error.ApprovalID
	if ev := next(); ev.Type != "requested" || ev.Approval.ID != second || ev.Approval.State != "pending" {
		t.Errorf("after a new ask: %+v", ev)
	}
	env.decideApproval("approver", second, "approve", nil)
	if ev := next(); ev.Type != "approved" || ev.Approval.ID != second {
		t.Errorf("after the approval: %+v", ev)
	}
	if ev := next(); ev.Type != "completed" || ev.Approval.ID != second || ev.Approval.Result == nil {
		t.Errorf("after the run: %+v", ev)
	}
	env.decideApproval("approver", first, "deny", nil)
	if ev := next(); ev.Type != "denied" || ev.Approval.ID != first {
		t.Errorf("after the denial: %+v", ev)
	}
}
