package httpapi

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestMalformedBodies: every malformed exec body is a 4xx with a clear code and message,
// never a 500 and never an execution (each body would touch a marker file if it ran).
func TestMalformedBodies(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	// The control: a well-formed body does run and create the marker.
	if a := env.do("POST", "/v1/exec", "agent", []byte(`{"command":"touch control"}`)); a.status != http.StatusOK || !env.exists("control") {
		t.Fatalf("control request: %d %s; the marker test would prove nothing", a.status, a.body)
	}
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	huge := `{"command":"touch m","stdin":"` + strings.Repeat("x", 2<<20) + `"}`
	for _, tc := range []struct {
		name, body string
		status     int
		code, msg  string
	}{
		{"not json", `touch m`, 400, gateway.CodeInvalidArgument, "not JSON"},
		{"truncated", `{"command":"touch m"`, 400, gateway.CodeInvalidArgument, "not JSON"},
		{"empty", ``, 400, gateway.CodeInvalidArgument, "empty"},
		{"spaces", "  \n ", 400, gateway.CodeInvalidArgument, "empty"},
		{"array", `["touch m"]`, 400, gateway.CodeInvalidArgument, "JSON object"},
		{"string", `"touch m"`, 400, gateway.CodeInvalidArgument, "JSON object"},
		{"null", `null`, 400, gateway.CodeInvalidArgument, "JSON object"},
		{"number", `42`, 400, gateway.CodeInvalidArgument, "JSON object"},
		{"command array", `{"command":["touch","m"]}`, 400, gateway.CodeInvalidArgument, "use argv"},
		{"command number", `{"command":1}`, 400, gateway.CodeInvalidArgument, "command must be a string"},
		{"command null", `{"command":null}`, 400, gateway.CodeInvalidArgument, "command must be a string, got null"},
		{"command object", `{"command":{"x":"touch m"}}`, 400, gateway.CodeInvalidArgument, "command must be"},
		{"command empty", `{"command":""}`, 400, gateway.CodeInvalidArgument, "command is empty"},
		{"command blank", `{"command":"  "}`, 400, gateway.CodeInvalidArgument, "command is empty"},
		{"argv string", `{"argv":"touch m"}`, 400, gateway.CodeInvalidArgument, "argv must be an array"},
		{"argv null element", `{"argv":["touch",null]}`, 400, gateway.CodeInvalidArgument, "argv[1] must be a string, got null"},
		{"argv number element", `{"argv":["touch",1]}`, 400, gateway.CodeInvalidArgument, "argv[1] must be a string"},
		{"argv empty", `{"argv":[]}`, 400, gateway.CodeInvalidArgument, "argv is empty"},
		{"argv empty name", `{"argv":["","m"]}`, 400, gateway.CodeInvalidArgument, "argv[0] is empty"},
		{"neither", `{"cwd":"sub"}`, 400, gateway.CodeInvalidArgument, "no command"},
		{"both", `{"command":"touch m","argv":["touch","m"]}`, 400, gateway.CodeInvalidArgument, "not both"},
		{"unknown field", `{"command":"touch m","sudo":true}`, 400, gateway.CodeInvalidArgument, `unknown field \"sudo\"`},
		{"unknown field case", `{"Command":"touch m"}`, 400, gateway.CodeInvalidArgument, `unknown field \"Command\"`},
		{"duplicate field", `{"command":"echo hi","command":"touch m"}`, 400, gateway.CodeInvalidArgument, "appears twice"},
		{"trailing object", `{"command":"touch m"} {"x":1}`, 400, gateway.CodeInvalidArgument, "after the JSON object"},
		{"trailing garbage", `{"command":"touch m"}x`, 400, gateway.CodeInvalidArgument, "after the JSON object"},
		{"nul in command", `{"command":"touch m\u0000"}`, 400, gateway.CodeInvalidArgument, "command contains a NUL"},
		{"nul in argv", `{"argv":["touch","m\u0000x"]}`, 400, gateway.CodeInvalidArgument, "argv[1] contains a NUL"},
		{"nul in stdin", `{"command":"touch m","stdin":"\u0000"}`, 400, gateway.CodeInvalidArgument, "stdin contains a NUL"},
		{"nul in cwd", `{"command":"touch m","cwd":"sub\u0000"}`, 400, gateway.CodeInvalidArgument, "cwd contains a NUL"},
		{"nul in task", `{"command":"touch m","task":"a\u0000"}`, 400, gateway.CodeInvalidArgument, "task contains a NUL"},
		{"raw nul", "{\"command\":\"touch m\x00\"}", 400, gateway.CodeInvalidArgument, "not JSON"},
		{"invalid utf-8", "{\"command\":\"touch m\xff\"}", 400, gateway.CodeInvalidArgument, "not valid UTF-8"},
		{"invalid utf-8 in key", "{\"command\":\"touch m\",\"\xc3\":1}", 400, gateway.CodeInvalidArgument, "not valid UTF-8"},
		{"overlong utf-8", "{\"command\":\"touch m\xc0\xaf\"}", 400, gateway.CodeInvalidArgument, "not valid UTF-8"},
		{"lone high surrogate", `{"command":"touch m\ud800"}`, 400, gateway.CodeInvalidArgument, "surrogate"},
		{"lone low surrogate", `{"command":"touch m\udc00x"}`, 400, gateway.CodeInvalidArgument, "surrogate"},
		{"reversed surrogates", `{"command":"touch m\udc00\ud800"}`, 400, gateway.CodeInvalidArgument, "surrogate"},
		{"timeout string", `{"command":"touch m","timeout_ms":"100"}`, 400, gateway.CodeInvalidArgument, "timeout_ms must be an integer, got a string"},
		{"timeout fraction", `{"command":"touch m","timeout_ms":1.5}`, 400, gateway.CodeInvalidArgument, "timeout_ms must be an integer"},
		{"timeout exponent", `{"command":"touch m","timeout_ms":1e3}`, 400, gateway.CodeInvalidArgument, "timeout_ms must be an integer"},
		{"timeout zero", `{"command":"touch m","timeout_ms":0}`, 400, gateway.CodeInvalidArgument, "timeout_ms must be between"},
		{"timeout negative", `{"command":"touch m","timeout_ms":-5}`, 400, gateway.CodeInvalidArgument, "timeout_ms must be between"},
		{"timeout too long", `{"command":"touch m","timeout_ms":120001}`, 400, gateway.CodeInvalidArgument, "timeout_ms must be between"},
		{"timeout overflow", `{"command":"touch m","timeout_ms":123456789012345678901234567890}`, 400, gateway.CodeInvalidArgument, "out of range"},
		{"timeout bool", `{"command":"touch m","timeout_ms":true}`, 400, gateway.CodeInvalidArgument, "got a boolean"},
		{"output too small", `{"command":"touch m","max_output_chars":999}`, 400, gateway.CodeInvalidArgument, "max_output_chars must be between"},
		{"output too large", `{"command":"touch m","max_output_chars":1000001}`, 400, gateway.CodeInvalidArgument, "max_output_chars must be between"},
		{"shell mode bogus", `{"command":"touch m","shell_mode":"zsh"}`, 400, gateway.CodeInvalidArgument, "shell_mode must be"},
		{"direct script", `{"command":"touch m","shell_mode":"direct"}`, 400, gateway.CodeInvalidArgument, "direct needs argv"},
		{"cwd empty", `{"command":"touch m","cwd":""}`, 400, gateway.CodeInvalidArgument, "cwd is empty"},
		{"cwd null", `{"command":"touch m","cwd":null}`, 400, gateway.CodeInvalidArgument, "cwd must be a string, got null"},
		{"cwd number", `{"command":"touch m","cwd":1}`, 400, gateway.CodeInvalidArgument, "cwd must be a string"},
		{"stdin object", `{"command":"touch m","stdin":{}}`, 400, gateway.CodeInvalidArgument, "stdin must be a string, got an object"},
		{"task control", `{"command":"touch m","task":"a\nb"}`, 400, gateway.CodeInvalidArgument, "task holds a control"},
		{"task long", `{"command":"touch m","task":"` + strings.Repeat("t", 129) + `"}`, 400, gateway.CodeInvalidArgument, "task must be"},
		{"deep nesting in a value", `{"command":"touch m","task":` + deep + `}`, 400, gateway.CodeInvalidArgument, "task"},
		{"deep nesting", deep, 400, gateway.CodeInvalidArgument, "JSON object"},
		{"deep objects", strings.Repeat(`{"command":`, 50_000), 400, gateway.CodeInvalidArgument, ""},
		{"script too long", `{"command":"touch m #` + strings.Repeat("x", 70_000) + `"}`, 400, gateway.CodeInvalidArgument, "more than the 65536"},
		{"argv too long", `{"argv":["touch","m","` + strings.Repeat("x", 70_000) + `"]}`, 400, gateway.CodeInvalidArgument, "more than the 65536"},
		{"huge body", huge, 413, gateway.CodeTooLarge, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := env.do("POST", "/v1/exec", "agent", []byte(tc.body))
			if a.status != tc.status || a.errorCode() != tc.code || !strings.Contains(string(a.body), tc.msg) {
				t.Errorf("POST /v1/exec %.80q = %d %.300s, want %d %s mentioning %q", tc.body, a.status, a.body, tc.status, tc.code, tc.msg)
			}
			if env.exists("m") {
				t.Fatalf("the command ran")
			}
		})
	}

	// A huge body without Content-Length (chunked) is refused while it is read.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", env.url+"/v1/exec",
		io.MultiReader(strings.NewReader(`{"command":"touch m","stdin":"`), bytes.NewReader(bytes.Repeat([]byte("x"), 3<<20)), strings.NewReader(`"}`)))
	req.Header.Set("Authorization", env.tokens["agent"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), gateway.CodeTooLarge) || req.ContentLength != 0 {
		t.Errorf("chunked huge body: %d %s, want 413 TOO_LARGE", resp.StatusCode, body)
	}
	if env.exists("m") {
		t.Fatal("the command ran")
	}
	// Nothing malformed reached the policy or the executor: the only decision and
	// execution are the control's.
	if d, x := len(env.recordsOf(audit.KindDecision)), len(env.recordsOf(audit.KindExecution)); d != 1 || x != 1 {
		t.Errorf("%d decision and %d execution records, want only the control's", d, x)
	}
}

// TestCwdEscapes: traversal and symlinks out of the workspace are INVALID_ARGUMENT,
// missing directories NOT_DIRECTORY; nothing runs, inside or outside.
func TestCwdEscapes(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.ws, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, filepath.Join(env.ws, "escape"))
	mustSymlink(t, filepath.Join("..", ".."), filepath.Join(env.ws, "sub", "up"))
	mustSymlink(t, filepath.Join(env.ws, "sub"), filepath.Join(env.ws, "inner"))
	rel, err := filepath.Rel(env.ws, outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cwd, code string
	}{
		{"..", gateway.CodeInvalidArgument},
		{"../", gateway.CodeInvalidArgument},
		{`..\..`, gateway.CodeInvalidArgument},
		{"sub/../..", gateway.CodeInvalidArgument},
		{`sub\..\..\` + filepath.Base(outside), gateway.CodeInvalidArgument},
		{rel, gateway.CodeInvalidArgument},
		{"/", gateway.CodeInvalidArgument},
		{"/etc", gateway.CodeInvalidArgument},
		{outside, gateway.CodeInvalidArgument},
		{env.ws + "/../" + filepath.Base(env.ws) + "x", gateway.CodeInvalidArgument},
		{"escape", gateway.CodeInvalidArgument},
		{"escape/deeper", gateway.CodeInvalidArgument},
		{`escape\deeper`, gateway.CodeInvalidArgument},
		{"sub/up", gateway.CodeInvalidArgument},
		{"missing", gateway.CodeNotDirectory},
		{"file.txt", gateway.CodeNotDirectory},
		{"escape/missing", gateway.CodeNotDirectory},
	} {
		a := env.exec("agent", map[string]any{"command": "touch cwd-marker", "cwd": tc.cwd})
		status := http.StatusBadRequest
		if tc.code == gateway.CodeNotDirectory {
			status = http.StatusUnprocessableEntity
		}
		if a.status != status || a.errorCode() != tc.code || !strings.Contains(string(a.body), "cwd") {
			t.Errorf("cwd %q: %d %s, want %d %s", tc.cwd, a.status, a.body, status, tc.code)
		}
	}
	for _, dir := range []string{outside, filepath.Join(outside, "deeper"), env.ws, filepath.Join(env.ws, "sub")} {
		if _, err := os.Stat(filepath.Join(dir, "cwd-marker")); err == nil {
			t.Errorf("a command ran in %s", dir)
		}
	}
	// Ways in that stay inside are fine, and the answer names the real directory.
	for _, cwd := range []string{"inner", "sub/", `sub\`, "./sub/../sub", env.ws + "/sub", "escape/.."} {
		a := env.exec("agent", map[string]any{"argv": []string{"pwd"}, "cwd": cwd})
		var out execOut
		a.decode(t, &out)
		want := filepath.Join(env.ws, "sub")
		if cwd == "escape/.." {
			want = env.ws
		}
		if a.status != http.StatusOK || out.Cwd != want || strings.TrimSpace(out.Stdout) != want {
			t.Errorf("cwd %q: %d %s, want to run in %s", cwd, a.status, a.body, want)
		}
	}
}

// TestRateLimitedAuthFailures: past the failure budget of an address, every request
// from it is 429 RATE_LIMITED with Retry-After, valid token or not, and the refusals
// are not audited one by one; another address is not affected.
func TestRateLimitedAuthFailures(t *testing.T) {
	t.Parallel()
	env := newEnv(t, func(o *gateway.Options) { o.AuthFailureBurst, o.AuthFailureRate = 3, 0.001 })
	for i := range 3 {
		if a := env.do("GET", "/v1/policy", "bad", nil); a.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d %s, want 401", i+1, a.status, a.body)
		}
	}
	for _, who := range []string{"bad", "none", "agent", "admin"} {
		a := env.do("GET", "/v1/policy", who, nil)
		retry, _ := strconv.Atoi(a.header.Get("Retry-After"))
		if a.status != http.StatusTooManyRequests || a.errorCode() != gateway.CodeRateLimited || retry < 1 {
			t.Errorf("after 3 failures, as %s: %d (Retry-After %q) %s, want 429 RATE_LIMITED with Retry-After", who, a.status, a.header.Get("Retry-After"), a.body)
		}
	}
	if n := len(env.recordsOf(audit.KindAuthFailure)); n != 3 {
		t.Errorf("%d auth_failure records, want 3 (the refusals past the budget are counted, not audited)", n)
	}
	// /healthz needs no token and is not limited.
	if a := env.do("GET", "/healthz", "bad", nil); a.status != http.StatusOK {
		t.Errorf("healthz from a limited address: %d", a.status)
	}

	// Another client address (127.0.0.2, also loopback on Linux) is served.
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	other := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}}}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", env.url+"/v1/policy", nil)
	req.Header.Set("Authorization", env.tokens["agent"])
	resp, err := other.Do(req)
	if err != nil {
		testenv.Skip(t, "cannot connect from 127.0.0.2: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("from another address: %d, want 200", resp.StatusCode)
	}
}

// TestRoutingErrors: unknown paths and methods answer contract codes, never echo's
// default body.
func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/nope", 404, gateway.CodeNotFound},
		{"GET", "/v1/nope", 404, gateway.CodeNotFound},
		{"GET", "/v1/exec", 405, gateway.CodeMethodNotAllowed},
		{"DELETE", "/v1/audit", 405, gateway.CodeMethodNotAllowed},
		{"PUT", "/healthz", 405, gateway.CodeMethodNotAllowed},
		{"GET", "/v1/audit?limit=abc", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit?limit=0", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit?since=yesterday", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit?decison=allow", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit?kind=bogus", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit?cursor=zzz", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit?q=%ff", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit?limit=1&limit=2", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/audit/verify?x=1", 400, gateway.CodeInvalidArgument},
		{"GET", "/v1/policy/prompt?format=xml", 400, gateway.CodeInvalidArgument},
	} {
		a := env.do(tc.method, tc.path, "admin", nil)
		if a.status != tc.status || a.errorCode() != tc.code || strings.Contains(string(a.body), `"message":"Not Found"`) {
			t.Errorf("%s %s = %d %s, want %d %s", tc.method, tc.path, a.status, a.body, tc.status, tc.code)
		}
	}
}

// TestTokenStoreUnreadable: a token file the gateway must not trust (readable by other
// users) fails closed: 503 UNAVAILABLE, not 401, and not counted against the client.
func TestTokenStoreUnreadable(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if err := os.Chmod(filepath.Join(env.data, gateway.TokensFile), 0o644); err != nil {
		t.Fatal(err)
	}
	a := env.exec("agent", map[string]any{"command": "touch tok-marker"})
	if a.status != http.StatusServiceUnavailable || a.errorCode() != gateway.CodeUnavailable || strings.Contains(string(a.body), "chmod") {
		t.Errorf("exec with an untrusted token file: %d %s, want 503 UNAVAILABLE without details", a.status, a.body)
	}
	if env.exists("tok-marker") || len(env.recordsOf(audit.KindAuthFailure)) != 0 {
		t.Error("a request went through, or was audited as an authentication failure")
	}
}
