package httpapi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"
)

// executeAnswer is POST /v1/execute's answer.
type executeAnswer struct {
	Decision   string `json:"decision"`
	DecisionID string `json:"decision_id"`
	Command    string `json:"command"`
	File       string `json:"file"`
	ExitCode   int    `json:"exit_code"`
	Error      string `json:"error_name"`
	Message    string `json:"message"`
	Text       string `json:"stdout_text"`
	Len        int    `json:"stdout_len"`
	Total      int64  `json:"total_bytes"`
	Truncated  bool   `json:"truncated"`
	HasNext    bool   `json:"has_next_start"`
	NextStart  int64  `json:"next_start"`
}

// readonlyEnv is a gateway whose read-only language may read docs/ (a directory) and
// notes.txt and .env (files) of its workspace, and ../keys/.env; secret.txt lies
// outside it.
func readonlyEnv(t *testing.T) *testEnv {
	t.Helper()
	var lines strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&lines, "line %d%s\n", i, map[bool]string{true: " TODO fix", false: ""}[i%7 == 0])
	}
	e := newEnv(t, func(o *gateway.Options) { o.Readonly.Allow = []string{"docs/", "notes.txt", ".env", "../keys/.env"} })
	write := func(rel, content string) {
		p := filepath.Join(e.ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.txt", lines.String())
	write("docs/.env", "TOKEN=docs-secret\n")
	write("docs/big.txt", strings.Repeat("x", 1<<20+1))
	write("docs/utf8.txt", strings.Repeat("日本語のテキスト🙂 é\n", 500))
	write("notes.txt", "one\ntwo\nthree\n")
	write(".env", "TOKEN=listed-exactly\n")
	write("../keys/.env", "TOKEN=outside\n")
	os.MkdirAll(filepath.Join(e.ws, "docs", "sub"), 0o755)
	outside := filepath.Join(filepath.Dir(e.ws), "secret.txt")
	os.WriteFile(outside, []byte("outside-secret\n"), 0o644)
	os.Symlink(outside, filepath.Join(e.ws, "docs", "link.txt"))
	return e
}

func (e *testEnv) execute(t *testing.T, who string, body map[string]any) executeAnswer {
	t.Helper()
	a := e.do("POST", "/v1/execute", who, mustJSON(t, body))
	if a.status != 200 {
		t.Fatalf("execute %v = %d %s", body, a.status, a.body)
	}
	var r executeAnswer
	a.decode(t, &r)
	return r
}

// TestExecute: seed 004's examples through the HTTP API, each decided and recorded, and
// every refusal a result with the language's error and exit code.
func TestExecute(t *testing.T) {
	t.Parallel()
	e := readonlyEnv(t)
	a, _ := os.ReadFile(filepath.Join(e.ws, "docs/a.txt"))
	var todo strings.Builder // grep -n numbers the lines of its input: nl's
	for i, l := range strings.SplitAfter(string(a), "\n") {
		if strings.Contains(l, "TODO") {
			fmt.Fprintf(&todo, "%d:%6d\t%s", i+1, i+1, l)
		}
	}
	ok := []struct{ command, normalised, want string }{
		{"cat docs/a.txt | head -n 2", "cat docs/a.txt | head -n 2", "line 1\nline 2\n"},
		{"cat docs/a.txt | nl | grep -n TODO", "cat docs/a.txt | nl | grep -n TODO", todo.String()},
		{"cat notes.txt | sed -n '2,3p'", "cat notes.txt | sed -n 2,3p", "two\nthree\n"},
		{"head -n 1 notes.txt", "cat notes.txt | head -n 1", "one\n"},
		{"sed -n 1,2p notes.txt", "cat notes.txt | sed -n 1,2p", "one\ntwo\n"},
		{"cat notes.txt | wc -l", "cat notes.txt | wc -l", "3\n"},
	}
	for _, c := range ok {
		r := e.execute(t, "agent", map[string]any{"command": c.command})
		if r.ExitCode != 0 || r.Decision != "allow" || r.Text != c.want || r.Command != c.normalised || r.File == "" || r.Truncated {
			t.Errorf("execute(%q) = %+v; want exit 0, allow, %q, normalised %q", c.command, r, c.want, c.normalised)
		}
		if !e.recorded(r.DecisionID) {
			t.Errorf("execute(%q): decision %s not recorded", c.command, r.DecisionID)
		}
	}
	refused := []struct {
		command, code string
		exit          int
	}{
		{"cat docs/a.txt; rm -rf /", "forbidden", 2},
		{"cat docs/a.txt | head -n 1 > out", "forbidden", 2},
		{"cat 'docs/a.txt' | grep '$(id)'", "forbidden", 2},
		{"awk 1 docs/a.txt", "forbidden", 2},
		{"grep TODO docs/a.txt", "mvp_requires", 2},
		{"cat docs/a.txt | sed s/a/b/", "mvp_unsupported_stage", 2},
		{"cat 'docs/a.txt", "parse_error", 2},
		{"   ", "empty", 2},
		{"cat docs/a.txt" + strings.Repeat(" | head", 8), "too_many_stages", 2},
		{"cat docs/.env", "file_not_allowed", 3},
		{"cat docs/link.txt", "file_not_allowed", 3},
		{"cat docs/../../secret.txt", "file_not_allowed", 3},
		{"cat /proc/self/root" + filepath.Join(filepath.Dir(e.ws), "secret.txt"), "file_not_allowed", 3},
		{"cat docs/missing.txt", "io_error", 1},
		{"cat docs/big.txt | wc -c", "file_too_large", 4},
		{"cat docs", "file_not_allowed", 3}, // a listed directory itself is not a file of it
		{"cat docs/sub", "invalid_path", 2},
		// On the allowlist, but the policy refuses to read a secret outside the workspace.
		{"cat ../keys/.env", "denied", 3},
	}
	for _, c := range refused {
		r := e.execute(t, "agent", map[string]any{"command": c.command})
		if r.ExitCode != c.exit || r.Error != c.code || r.Decision != "deny" || r.Text != "" || !e.recorded(r.DecisionID) {
			t.Errorf("execute(%q) = %+v; want exit %d, %s, denied and recorded", c.command, r, c.exit, c.code)
		}
		if !strings.Contains(c.command, "secret.txt") && strings.Contains(r.Message, "secret.txt") {
			t.Errorf("execute(%q) tells where a link leads: %q", c.command, r.Message)
		}
	}
	// The record holds the profile, the real path and the stages as commands.
	r := e.execute(t, "agent", map[string]any{"command": "head -n 1 docs/a.txt"})
	var input []byte
	for _, rec := range e.recordsOf("decision") {
		if rec.ID == r.DecisionID {
			input = rec.Input
		}
	}
	for _, want := range []string{`"profile":"readonly"`, `"source":"execute"`, `"path":"` + filepath.Join(e.ws, "docs/a.txt") + `"`, `"name":"head"`} {
		if !bytes.Contains(input, []byte(want)) {
			t.Errorf("the decision record's input lacks %s: %s", want, input)
		}
	}
}

// TestExecutePaging: the pages of an output, at any size, give it back whole, never
// cutting a character.
func TestExecutePaging(t *testing.T) {
	t.Parallel()
	e := readonlyEnv(t)
	want, _ := os.ReadFile(filepath.Join(e.ws, "docs/utf8.txt"))
	for _, size := range []int{4096, 1000, 5, 1} {
		var got []byte
		for start := int64(0); ; {
			r := e.execute(t, "agent", map[string]any{"command": "cat docs/utf8.txt", "start": start, "size": size})
			if r.Total != int64(len(want)) || r.Len != len(r.Text) || r.Len > max(size, 4) {
				t.Fatalf("page at %d of size %d: %+v", start, size, r)
			}
			got = append(got, r.Text...)
			if !r.HasNext {
				break
			}
			start = r.NextStart
		}
		if !bytes.Equal(got, want) {
			t.Errorf("pages of %d: %d bytes, want the file's %d", size, len(got), len(want))
		}
		if size == 1 {
			break
		}
	}
}

// TestExecuteBadInput: malformed bodies are INVALID_ARGUMENT, a gateway without an
// allowlist has no read-only language, and a reader token reads and runs nothing else.
func TestExecuteBadInput(t *testing.T) {
	t.Parallel()
	e := readonlyEnv(t)
	bad := map[string]string{
		"not JSON":        `cat notes.txt`,
		"empty":           ``,
		"array":           `["cat notes.txt"]`,
		"number command":  `{"command": 7}`,
		"null command":    `{"command": null}`,
		"unknown member":  `{"command": "cat notes.txt", "cwd": "/"}`,
		"repeated":        `{"command": "cat notes.txt", "command": "cat .env"}`,
		"fractional size": `{"command": "cat notes.txt", "size": 1.5}`,
		"size zero":       `{"command": "cat notes.txt", "size": 0}`,
		"negative start":  `{"command": "cat notes.txt", "start": -1}`,
		"start past end":  `{"command": "cat notes.txt", "start": 1000}`,
		"invalid UTF-8":   "{\"command\": \"cat \xff\"}",
		"trailing data":   `{"command": "cat notes.txt"} {}`,
		"NUL":             `{"command": "cat notes.txt\u0000"}`,
		"deep nesting":    `{"command": ` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	}
	for name, body := range bad {
		if a := e.do("POST", "/v1/execute", "agent", []byte(body)); a.status != 400 || a.errorCode() != gateway.CodeInvalidArgument {
			t.Errorf("%s: POST /v1/execute %.60q = %d %s, want 400 INVALID_ARGUMENT", name, body, a.status, a.body)
		}
	}
	if a := e.do("POST", "/v1/execute", "agent", []byte(`{"command": "cat `+strings.Repeat("a", 2<<20)+`"}`)); a.status != 413 {
		t.Errorf("a 2 MiB body = %d %s, want 413", a.status, a.body)
	}

	reader := "reader"
	if r := e.execute(t, reader, map[string]any{"command": "cat notes.txt"}); r.Text != "one\ntwo\nthree\n" {
		t.Errorf("reader execute = %+v", r)
	}
	for _, p := range []struct{ method, path, body string }{
		{"POST", "/v1/exec", `{"command": "true"}`}, {"POST", "/v1/decide", `{"command": "true"}`},
		{"POST", "/v1/jobs", `{"command": "true"}`}, {"GET", "/v1/audit", ""}, {"GET", "/v1/approvals", ""},
	} {
		var body []byte
		if p.body != "" {
			body = []byte(p.body)
		}
		if a := e.do(p.method, p.path, reader, body); a.status != 403 {
			t.Errorf("reader %s %s = %d %s, want 403", p.method, p.path, a.status, a.body)
		}
	}

	off := newEnv(t)
	if a := off.do("POST", "/v1/execute", "agent", []byte(`{"command": "cat x"}`)); a.status != 404 || !strings.Contains(string(a.body), "readonly.allow") {
		t.Errorf("execute without an allowlist = %d %s, want 404 naming readonly.allow", a.status, a.body)
	}
}
