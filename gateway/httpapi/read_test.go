package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/policies"
)

// TestAuditEndpoints: the auditor reads back what happened, filters and pages, and
// verifies the chain.
func TestAuditEndpoints(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.exec("agent", map[string]any{"command": "echo one"})
	denied := env.exec("agent", map[string]any{"command": "rm -rf /"})
	var e errOut
	denied.decode(t, &e)

	type page struct {
		Records []struct {
			ID, Kind, Decision string
			RequestID          string `json:"request_id"`
			DecisionID         string `json:"decision_id"`
			Principal          struct{ Name, Role string }
			Reasons            []struct{ Rule string }
		}
		NextCursor string `json:"next_cursor"`
	}
	var p page
	env.do("GET", "/v1/audit?decision=deny", "auditor", nil).decode(t, &p)
	if len(p.Records) != 1 || p.Records[0].ID != e.Error.DecisionID || p.Records[0].RequestID != e.Error.RequestID ||
		p.Records[0].Principal.Name != "agent-tok" || len(p.Records[0].Reasons) == 0 {
		t.Errorf("deny records = %+v, want the denied request %s", p.Records, e.Error.DecisionID)
	}
	p = page{}
	env.do("GET", "/v1/audit?kind=execution&principal=agent-tok&since=1h", "auditor", nil).decode(t, &p)
	if len(p.Records) != 1 || p.Records[0].DecisionID == "" {
		t.Errorf("execution records = %+v, want one", p.Records)
	}
	p = page{}
	env.do("GET", "/v1/audit?rule=forbidden.rm_recursive_force&q="+url.QueryEscape("recursive"), "auditor", nil).decode(t, &p)
	if len(p.Records) != 1 {
		t.Errorf("records by rule and text = %+v, want the deny", p.Records)
	}
	// Paging walks every record once.
	seen := map[string]bool{}
	cursor := ""
	for range 100 {
		p = page{}
		env.do("GET", "/v1/audit?limit=2&cursor="+url.QueryEscape(cursor), "admin", nil).decode(t, &p)
		for _, r := range p.Records {
			if seen[r.ID] {
				t.Fatalf("record %s on two pages", r.ID)
			}
			seen[r.ID] = true
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	all := env.records()
	if len(seen) != len(all) {
		t.Errorf("paging saw %d records, the store has %d", len(seen), len(all))
	}

	var v struct {
		OK      bool
		Records int64
		Head    struct{ ID string }
	}
	env.do("GET", "/v1/audit/verify", "auditor", nil).decode(t, &v)
	if !v.OK || v.Head.ID == "" || v.Records < int64(len(all)) {
		t.Errorf("verify = %+v, want ok with at least %d records", v, len(all))
	}
}

func TestPolicyEndpoints(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	var p struct {
		Revision, Source, Sandbox, Profile string
		Files                              []gateway.PolicyFile
		Allowlist                          []struct{ Title string }
		Config                             struct {
			UnknownCommand string `json:"unknown_command"`
		}
	}
	env.do("GET", "/v1/policy", "approver", nil).decode(t, &p)
	if p.Revision != env.srv.Revision() || p.Source != "embedded" || p.Sandbox != gateway.SandboxProcess || p.Profile != policies.ProfileStrict ||
		len(p.Files) == 0 || len(p.Files[0].SHA256) != 64 || len(p.Allowlist) == 0 || p.Config.UnknownCommand != "deny" {
		t.Errorf("policy = %+v", p)
	}
	var pr struct{ Revision, Prompt string }
	env.do("GET", "/v1/policy/prompt", "agent", nil).decode(t, &pr)
	if pr.Revision != env.srv.Revision() || !strings.Contains(pr.Prompt, "## Command Execution Feature") || strings.Contains(pr.Prompt, "{allowed_commands_list}") {
		t.Errorf("prompt = %.200s", pr.Prompt)
	}
	a := env.do("GET", "/v1/policy/prompt?format=text", "auditor", nil)
	if a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") || string(a.body) != pr.Prompt {
		t.Errorf("prompt as text: %d %s %.100s", a.status, a.header.Get("Content-Type"), a.body)
	}
}

// TestMetricsCount: decisions are counted by action and decisive rule, requests by
// route and status, authentication failures by reason.
func TestMetricsCount(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.exec("agent", map[string]any{"command": "echo one"})
	env.exec("agent", map[string]any{"command": "rm -rf /"})
	env.do("GET", "/v1/policy", "bad", nil)
	env.do("GET", "/no/such/path/1", "admin", nil)
	env.do("GET", "/no/such/path/2", "admin", nil)
	m := string(env.do("GET", "/metrics", "admin", nil).body)
	for _, want := range []string{
		`cmdgate_decisions_total{action="allow",rule=""} 1`,
		`cmdgate_decisions_total{action="deny",rule="forbidden.rm_recursive_force"} 1`,
		`cmdgate_exec_duration_seconds_count 1`,
		`cmdgate_auth_failures_total{reason="unknown"} 1`,
		`cmdgate_http_requests_total{code="200",path="/v1/exec"} 1`,
		`cmdgate_http_requests_total{code="403",path="/v1/exec"} 1`,
		`cmdgate_http_requests_total{code="404",path="other"} 2`,
		`cmdgate_policy_reloads_total{result="ok"} 1`,
		`cmdgate_commands_in_flight 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !strings.Contains(m, "cmdgate_audit_append_seconds_count") {
		t.Error("metrics lack the audit append latency")
	}
}
