package httpapi

import (
	"net/http"
	"testing"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/gateway"
)

// approveWith asks for body as agent, approves it as approver with verdict, waits for
// the run and returns the approval.
func (e *testEnv) approveWith(t *testing.T, who string, body map[string]any, verdict map[string]any) approvalJSON {
	t.Helper()
	id := e.ask(t, who, body).Error.ApprovalID
	if r := e.decideApproval("approver", id, "approve", verdict); r.status != http.StatusOK {
		t.Fatalf("approve %v with %v: %d %s", body, verdict, r.status, r.body)
	}
	a := e.approval(t, "approver", id, "?wait_ms=20000")
	if a.State != gateway.ApprovalCompleted {
		t.Fatalf("the approved request: %+v", a)
	}
	return a
}

// status is the status of exec of body as who: 200 ran, 202 asks, 403 denied.
func (e *testEnv) status(who string, body map[string]any) int {
	e.t.Helper()
	return e.exec(who, body).status
}

// Grants of each scope allow what they cover and nothing else: not another argv, cwd,
// task or principal; a use count runs out; a revoked grant allows nothing; deny wins
// over every grant; every step is in the audit chain, which verifies.
func TestGrantScopes(t *testing.T) {
	t.Parallel()
	env := askEnv(t)
	env.tokens["agent2"] = "Bearer " + env.token("agent-two", gateway.RoleAgent)

	// command: the same parsed command, in the same cwd, by the same principal, twice.
	env.approveWith(t, "agent", map[string]any{"argv": []string{"touch", "a"}}, map[string]any{"scope": "command", "max_uses": 2})
	var d struct {
		Decision string           `json:"decision"`
		Reasons  []gateway.Reason `json:"reasons"`
	}
	env.do("POST", "/v1/decide", "agent", mustJSON(t, map[string]any{"argv": []string{"touch", "a"}})).decode(t, &d)
	if d.Decision != "allow" || len(d.Reasons) != 1 || d.Reasons[0].Rule != "grant.used" {
		t.Errorf("decide of the granted command: %+v", d)
	}
	for _, c := range []struct {
		who  string
		body map[string]any
		want int
	}{
		{"agent", map[string]any{"argv": []string{"touch", "b"}}, http.StatusAccepted},
		{"agent", map[string]any{"argv": []string{"touch", "a"}, "cwd": "sub"}, http.StatusAccepted},
		{"agent2", map[string]any{"argv": []string{"touch", "a"}}, http.StatusAccepted},
		{"agent", map[string]any{"command": "touch a > out"}, http.StatusAccepted},
		{"agent", map[string]any{"argv": []string{"touch", "a"}}, http.StatusOK},
		{"agent", map[string]any{"command": "touch a"}, http.StatusOK},
		{"agent", map[string]any{"argv": []string{"touch", "a"}}, http.StatusAccepted}, // two uses: used up
	} {
		if got := env.status(c.who, c.body); got != c.want {
			t.Errorf("command grant: %s %v: %d, want %d", c.who, c.body, got, c.want)
		}
	}

	// prefix: the approver's first words.
	env.approveWith(t, "agent", map[string]any{"argv": []string{"touch", "p1"}, "cwd": "sub"}, map[string]any{"scope": "prefix", "prefix": "touch"})
	if got := env.status("agent", map[string]any{"command": "touch p2 p3 && touch p4"}); got != http.StatusOK {
		t.Errorf("prefix grant: %d, want 200", got)
	}
	if got := env.status("agent2", map[string]any{"command": "touch p2"}); got != http.StatusAccepted {
		t.Errorf("prefix grant, another principal: %d, want 202", got)
	}
	// A prefix that does not cover the held request is refused.
	id := env.ask(t, "agent2", map[string]any{"argv": []string{"touch", "q"}}).Error.ApprovalID
	if r := env.decideApproval("approver", id, "approve", map[string]any{"scope": "prefix", "prefix": []string{"touch", "z"}}); r.status != http.StatusBadRequest {
		t.Errorf("a prefix that does not cover the request: %d %s", r.status, r.body)
	}

	// session: every ask of the task; deny still wins.
	env.approveWith(t, "agent2", map[string]any{"argv": []string{"touch", "s1"}, "task": "t1"}, map[string]any{"scope": "session", "expires_in": "1h"})
	if got := env.status("agent2", map[string]any{"command": "touch s2", "task": "t1"}); got != http.StatusOK {
		t.Errorf("session grant, same task: %d, want 200", got)
	}
	if got := env.status("agent2", map[string]any{"command": "touch s2", "task": "t2"}); got != http.StatusAccepted {
		t.Errorf("session grant, another task: %d, want 202", got)
	}
	if a := env.exec("agent2", map[string]any{"command": "touch s3 && sudo ls", "task": "t1"}); a.status != http.StatusForbidden || a.errorCode() != gateway.CodeDenied {
		t.Errorf("deny with a session grant: %d %s; want 403 DENIED", a.status, a.body)
	}

	// The list, and revocation.
	var page struct {
		Grants []struct {
			ID    string `json:"id"`
			Scope string `json:"scope"`
			Uses  int    `json:"uses"`
		} `json:"grants"`
	}
	if a := env.do("GET", "/v1/grants", "agent", nil); a.status != http.StatusForbidden {
		t.Errorf("an agent listing grants: %d, want 403", a.status)
	}
	env.do("GET", "/v1/grants", "auditor", nil).decode(t, &page)
	if len(page.Grants) != 2 || page.Grants[0].Scope != "session" || page.Grants[1].Scope != "prefix" || page.Grants[0].Uses != 1 {
		t.Fatalf("live grants: %+v; want the session and prefix grants (the command grant is used up)", page.Grants)
	}
	session := page.Grants[0].ID
	if a := env.do("DELETE", "/v1/grants/"+session, "agent2", nil); a.status != http.StatusForbidden {
		t.Errorf("an agent revoking a grant: %d, want 403", a.status)
	}
	if a := env.do("DELETE", "/v1/grants/"+session, "approver", nil); a.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", a.status, a.body)
	}
	if a := env.do("DELETE", "/v1/grants/"+session, "approver", nil); a.status != http.StatusConflict {
		t.Errorf("revoke twice: %d, want 409", a.status)
	}
	if got := env.status("agent2", map[string]any{"command": "touch s4", "task": "t1"}); got != http.StatusAccepted {
		t.Errorf("after the revocation: %d, want 202", got)
	}

	events := map[string]int{}
	for _, rec := range env.recordsOf(audit.KindGrant) {
		events[rec.Decision]++
		if rec.Decision == "used" && rec.DecisionID == "" {
			t.Error("a grant use names no decision")
		}
	}
	if events["created"] != 3 || events["used"] != 4 || events["revoked"] != 1 {
		t.Errorf("grant records: %v; want 3 created, 4 used, 1 revoked", events)
	}
	var v struct {
		OK bool `json:"ok"`
	}
	env.do("GET", "/v1/audit/verify", "auditor", nil).decode(t, &v)
	if !v.OK {
		t.Error("the audit chain does not verify")
	}
}

// With persistent grants off, only once may be approved.
func TestGrantsForbidden(t *testing.T) {
	t.Parallel()
	env := askEnv(t, func(o *gateway.Options) { o.Approvals.OnceOnly = true })
	id := env.ask(t, "agent", map[string]any{"argv": []string{"touch", "a"}}).Error.ApprovalID
	if r := env.decideApproval("approver", id, "approve", map[string]any{"scope": "command"}); r.status != http.StatusForbidden {
		t.Errorf("a command grant with persistent grants off: %d %s; want 403", r.status, r.body)
	}
	if r := env.decideApproval("approver", id, "approve", map[string]any{"scope": "once"}); r.status != http.StatusOK {
		t.Errorf("once with persistent grants off: %d %s", r.status, r.body)
	}
}
