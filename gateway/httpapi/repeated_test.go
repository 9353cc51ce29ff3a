package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/google/go-cmp/cmp"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/parse"
)

// TestRepeatedRequests: a request the gateway remembers gets the answer and the audit
// record a fresh one gets, with its own request id and principal; nothing of one
// request leaks into another.
func TestRepeatedRequests(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	fresh := newEnv(t, func(o *gateway.Options) { o.DecisionCache = -1 })
	body := mustJSON(t, map[string]any{"command": "grep -rn TODO . | head -5 && rm -rf /", "cwd": "sub", "task": "t1"})
	type out struct {
		Decision   string
		DecisionID string `json:"decision_id"`
		Revision   string
		Reasons    []gateway.Reason
		Commands   []parse.Command
		Sandbox    json.RawMessage
	}
	decide := func(e *testEnv, who, id string) (out, audit.Record) {
		t.Helper()
		a := e.do("POST", "/v1/decide", who, body, "X-Request-Id", id)
		// The two gateways have workspaces of their own: compare the rest.
		a.body = bytes.ReplaceAll(a.body, []byte(e.ws), []byte("/WS"))
		var o out
		a.decode(t, &o)
		if a.status != http.StatusOK {
			t.Fatalf("%s: %d %s", who, a.status, a.body)
		}
		rec, err := e.srv.AuditStore().Get(t.Context(), o.DecisionID)
		if err != nil {
			t.Fatal(err)
		}
		o.DecisionID = ""
		return o, rec
	}
	input := func(e *testEnv, rec audit.Record) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(bytes.ReplaceAll(rec.Input, []byte(e.ws), []byte("/WS")), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	want, wantRec := decide(fresh, "agent", "req-fresh")
	for i, tc := range []struct{ who, id string }{{"agent", "req-1"}, {"agent", "req-2"}, {"admin", "req-3"}, {"agent", "req-4"}} {
		got, rec := decide(env, tc.who, tc.id)
		got.Revision, want.Revision = "", ""
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d: answer differs from a fresh gateway's (-fresh +remembered):\n%s", i, diff)
		}
		in, wantIn := input(env, rec), input(fresh, wantRec)
		req := in["request"].(map[string]any)
		if req["id"] != tc.id || rec.RequestID != tc.id {
			t.Errorf("request %d: recorded input request id %v, record %s; want %s", i, req["id"], rec.RequestID, tc.id)
		}
		if p := in["principal"].(map[string]any); p["role"] != tc.who || p["name"] != tc.who+"-tok" {
			t.Errorf("request %d: recorded principal %v, want %s", i, p, tc.who)
		}
		// Apart from request id and principal, the input is the fresh gateway's.
		for _, m := range []map[string]any{in, wantIn} {
			delete(m["request"].(map[string]any), "id")
			delete(m, "principal")
		}
		if diff := cmp.Diff(wantIn, in); diff != "" {
			t.Errorf("request %d: recorded input differs (-fresh +remembered):\n%s", i, diff)
		}
		if rec.Decision != wantRec.Decision || !cmp.Equal(rec.Reasons, wantRec.Reasons) {
			t.Errorf("request %d: recorded decision %s %v, want %s %v", i, rec.Decision, rec.Reasons, wantRec.Decision, wantRec.Reasons)
		}
	}
	if hits := env.metric("cmdgate_decision_cache_total", "result", "hit"); hits != 2 {
		// agent req-2 and req-4 repeat req-1; admin is a shape of its own.
		t.Errorf("decision cache hits = %v, want 2", hits)
	}
}
