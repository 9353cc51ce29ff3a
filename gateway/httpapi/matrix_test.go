package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/audit"
)

// TestRoleMatrix checks every endpoint with every kind of principal: the four roles,
// no token, an unknown token and a revoked one. Each cell is a real request over HTTP.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const (
		ok     = http.StatusOK
		unauth = http.StatusUnauthorized
		forbid = http.StatusForbidden
	)
	type row struct {
		method, path string
		body         string
		want         map[string]int // principal → status
	}
	agentOnly := map[string]int{"agent": ok, "approver": forbid, "auditor": forbid, "admin": ok, "none": unauth, "bad": unauth, "revoked": unauth}
	auditorOnly := map[string]int{"agent": forbid, "approver": forbid, "auditor": ok, "admin": ok, "none": unauth, "bad": unauth, "revoked": unauth}
	anyRole := map[string]int{"agent": ok, "approver": ok, "auditor": ok, "admin": ok, "none": unauth, "bad": unauth, "revoked": unauth}
	adminOnly := map[string]int{"agent": forbid, "approver": forbid, "auditor": forbid, "admin": ok, "none": unauth, "bad": unauth, "revoked": unauth}
	everyone := map[string]int{"agent": ok, "approver": ok, "auditor": ok, "admin": ok, "none": ok, "bad": ok, "revoked": ok}
	rows := []row{
		{"POST", "/v1/exec", `{"command":"echo matrix"}`, agentOnly},
		{"POST", "/v1/decide", `{"command":"echo matrix"}`, agentOnly},
		{"GET", "/v1/audit", "", auditorOnly},
		{"GET", "/v1/audit/verify", "", auditorOnly},
		{"GET", "/v1/policy", "", anyRole},
		{"GET", "/v1/policy/prompt", "", anyRole},
		{"GET", "/healthz", "", everyone},
		{"GET", "/metrics", "", adminOnly},
	}
	unauthCells := 0
	for _, r := range rows {
		for _, p := range principals {
			want, found := r.want[p]
			if !found {
				t.Fatalf("matrix row %s %s has no cell for %s", r.method, r.path, p)
			}
			var body []byte
			if r.body != "" {
				body = []byte(r.body)
			}
			a := env.do(r.method, r.path, p, body)
			if a.status != want {
				t.Errorf("%s %s as %s = %d %s, want %d", r.method, r.path, p, a.status, a.body, want)
				continue
			}
			switch want {
			case unauth:
				unauthCells++
				if c := a.errorCode(); c != gateway.CodeUnauthenticated {
					t.Errorf("%s %s as %s: code %q, want %s", r.method, r.path, p, c, gateway.CodeUnauthenticated)
				}
				if h := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
					t.Errorf("%s %s as %s: WWW-Authenticate %q, want Bearer", r.method, r.path, p, h)
				}
			case forbid:
				if c := a.errorCode(); c != gateway.CodeForbidden {
					t.Errorf("%s %s as %s: code %q, want %s", r.method, r.path, p, c, gateway.CodeForbidden)
				}
			case ok:
				checkOKBody(t, r.path, p, a)
			}
		}
	}

	// Every refused authentication is in the audit log, with its reason and without
	// the presented token.
	fails := env.recordsOf(audit.KindAuthFailure)
	if len(fails) != unauthCells {
		t.Fatalf("%d auth_failure records, want %d (one per 401)", len(fails), unauthCells)
	}
	reasons := map[string]int{}
	for _, r := range fails {
		var d struct {
			Reason, RemoteAddr, Method, Path string
		}
		json.Unmarshal(r.Detail, &d)
		reasons[d.Reason]++
		if strings.Contains(string(r.Detail), "cmdgate_") {
			t.Errorf("auth_failure record holds a token: %s", r.Detail)
		}
		if r.RequestID == "" {
			t.Errorf("auth_failure record %s has no request id", r.ID)
		}
	}
	perReason := unauthCells / 3
	if want := map[string]int{authMissing: perReason, authUnknown: perReason, authRevoked: perReason}; fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("auth_failure reasons %v, want %v", reasons, want)
	}
}

// checkOKBody checks that a 200 answer is the endpoint's real answer.
func checkOKBody(t *testing.T, path, who string, a answer) {
	t.Helper()
	var m map[string]any
	if path != "/metrics" {
		a.decode(t, &m)
	}
	var want string
	switch path {
	case "/v1/exec":
		if m["stdout"] != "matrix\n" || m["decision"] != "allow" {
			t.Errorf("exec as %s = %s, want stdout matrix and decision allow", who, a.body)
		}
		return
	case "/v1/decide":
		want = "decision"
	case "/v1/audit":
		want = "records"
	case "/v1/audit/verify":
		if m["ok"] != true {
			t.Errorf("verify as %s = %s, want ok", who, a.body)
		}
		return
	case "/v1/policy":
		want = "revision"
	case "/v1/policy/prompt":
		want = "prompt"
	case "/healthz":
		if m["status"] != "ok" {
			t.Errorf("healthz = %s", a.body)
		}
		return
	case "/metrics":
		for _, name := range []string{"cmdgate_decisions_total", "cmdgate_exec_duration_seconds", "cmdgate_audit_append_seconds", "cmdgate_commands_in_flight", "cmdgate_auth_failures_total", "cmdgate_policy_reloads_total", "cmdgate_http_requests_total", "go_goroutines"} {
			if !strings.Contains(string(a.body), name) {
				t.Errorf("metrics lack %s", name)
			}
		}
		return
	}
	if _, found := m[want]; !found {
		t.Errorf("%s as %s = %s, want a %q member", path, who, a.body, want)
	}
}

// TestAuthHeaderForms: malformed Authorization headers are 401 with reason malformed.
func TestAuthHeaderForms(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	agent := strings.TrimPrefix(env.tokens["agent"], "Bearer ")
	for _, h := range []string{
		"Basic " + agent,
		"Bearer",
		"Bearer ",
		"Bearer  " + agent,
		"Bearer " + agent + " x",
		agent,
		"Bearer\t" + agent,
	} {
		a := env.do("GET", "/v1/policy", h, nil)
		if a.status != http.StatusUnauthorized || a.errorCode() != gateway.CodeUnauthenticated {
			t.Errorf("Authorization %q: %d %s, want 401 UNAUTHENTICATED", h, a.status, a.body)
		}
	}
	// The scheme is case-insensitive (RFC 9110).
	if a := env.do("GET", "/v1/policy", "bearer "+agent, nil); a.status != http.StatusOK {
		t.Errorf("lowercase bearer: %d %s, want 200", a.status, a.body)
	}
	malformed := 0
	for _, r := range env.recordsOf(audit.KindAuthFailure) {
		if strings.Contains(string(r.Detail), `"reason":"malformed"`) {
			malformed++
		}
	}
	// "Bearer" and "Bearer " may reach the server as the same header value.
	if malformed != 7 {
		t.Errorf("%d malformed auth_failure records, want 7", malformed)
	}
}
