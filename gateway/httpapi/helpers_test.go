package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/policies"
)

// testEnv is a real gateway on 127.0.0.1 (httptest.Server around Handler) with a real
// SQLite audit store, the real process executor, a workspace and a token per role.
type testEnv struct {
	t      testing.TB
	srv    *gateway.Server
	front  *Front
	http   *httptest.Server
	url    string
	ws     string // the workspace (real path)
	data   string
	tokens map[string]string // principal kind → Authorization header value ("" = none)
}

// principals of the role matrix: the four roles, and three ways to have no valid token.
var principals = []string{"agent", "approver", "auditor", "admin", "none", "bad", "revoked"}

func newEnv(t testing.TB, configure ...func(*gateway.Options)) *testEnv {
	t.Helper()
	if _, bench := t.(*testing.B); bench && os.Getenv("GOGC") == "" {
		// A benchmark's gateway runs with the GC target cmdgate serve gives it (GOGC
		// wins, as there), not the test binary's, so that the figures are those of the
		// server as it is run.
		old := debug.SetGCPercent(gateway.DefaultGCPercent)
		t.Cleanup(func() { debug.SetGCPercent(old) })
	}
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := gateway.Options{
		Workspace: ws,
		DataDir:   filepath.Join(base, "data"),
		Sandbox:   gateway.SandboxProcess,
		// A generous budget: tests that look at rate limiting set their own.
		AuthFailureBurst: 1000,
		AuthFailureRate:  1000,
		// Commands the tests run that the default allowlist does not have.
		Policy: policies.Config{AllowedCommands: policies.AllowedCommands{Additional: []string{"sleep", "printf", "no-such-cmd-xyz"}}},
	}
	for _, c := range configure {
		c(&opts)
	}
	srv, err := gateway.New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	front := New(srv)
	hs := httptest.NewServer(front.Handler())
	env := &testEnv{t: t, srv: srv, front: front, http: hs, url: hs.URL, ws: srv.Workspace(), data: opts.DataDir, tokens: map[string]string{}}
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil && !strings.Contains(err.Error(), "closed") {
			t.Errorf("Close: %v", err)
		}
	})
	for _, r := range gateway.Roles {
		env.tokens[string(r)] = "Bearer " + env.token(string(r)+"-tok", r)
	}
	revoked := env.token("gone", gateway.RoleAdmin)
	if _, err := srv.Tokens().Revoke("gone"); err != nil {
		t.Fatal(err)
	}
	env.tokens["revoked"] = "Bearer " + revoked
	env.tokens["bad"] = "Bearer cmdgate_" + strings.Repeat("A", 43)
	env.tokens["none"] = ""
	return env
}

// token creates a token through the store the server reads.
func (e *testEnv) token(name string, role gateway.Role) string {
	e.t.Helper()
	secret, _, err := e.srv.Tokens().Create(name, role)
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// errorCode is the contract error code of the answer ("" when it has none).
func (a answer) errorCode() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(a.body, &b)
	return b.Error.Code
}

func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %d %q is not the expected JSON: %v", a.status, a.body, err)
	}
}

// do sends a request as the given principal ("agent", "none", ...) or with a raw
// Authorization value when auth starts with "Bearer"/"Basic".
func (e *testEnv) do(method, path, auth string, body []byte, headers ...string) answer {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if v, ok := e.tokens[auth]; ok {
		auth = v
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

func (e *testEnv) exec(auth string, body any) answer {
	e.t.Helper()
	return e.do("POST", "/v1/exec", auth, mustJSON(e.t, body))
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// records returns every audit record, oldest first, straight from the store.
func (e *testEnv) records() []audit.Record {
	e.t.Helper()
	var out []audit.Record
	q := audit.Query{Limit: audit.MaxLimit}
	for {
		page, err := e.srv.AuditStore().Query(e.t.Context(), q)
		if err != nil {
			e.t.Fatalf("Query: %v", err)
		}
		out = append(out, page.Records...)
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func (e *testEnv) recordsOf(kind audit.Kind) []audit.Record {
	var out []audit.Record
	for _, r := range e.records() {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// exists reports whether a file exists in the workspace.
func (e *testEnv) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(e.ws, name))
	return err == nil
}

// metric is the value of a gauge or counter of the gateway's registry, with the given
// label name and value pairs (0 when it has no such series yet).
func (e *testEnv) metric(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.srv.Registry().Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
