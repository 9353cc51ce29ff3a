package policies

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cmdgate/cmdgate/parse"
)

func newEngine(t testing.TB, opts ...Option) *Engine {
	t.Helper()
	e, err := New(t.Context(), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func decide(t testing.TB, e *Engine, script string) Decision {
	t.Helper()
	d, err := e.Decide(t.Context(), parse.Script(script, corpusOptions))
	if err != nil {
		t.Fatalf("Decide(%q): %v", script, err)
	}
	return d
}

func TestEmbeddedBundle(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(e.Revision()) {
		t.Errorf("Revision() = %q, want 64 hex digits", e.Revision())
	}
	files := e.Files()
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
		if f.Content == "" {
			t.Errorf("file %s is empty", f.Path)
		}
	}
	for _, want := range []string{"cmdgate/decision.rego", "cmdgate/lists/data.yaml", "cmdgate/config/data.yaml"} {
		if !strings.Contains(strings.Join(paths, "\n"), want) {
			t.Errorf("Files() lacks %s (have %v)", want, paths)
		}
	}
	d := decide(t, e, "ls -la")
	if d.Action != ActionAllow || d.Revision != e.Revision() || len(d.Reasons) != 0 {
		t.Errorf("Decide(ls -la) = %+v, want allow with the engine's revision and no reasons", d)
	}
	d = decide(t, e, "sudo ls")
	want := []Reason{{Effect: ActionDeny, Rule: "forbidden.command", Message: "sudo: privilege escalation is forbidden", Command: 0}}
	if diff := cmp.Diff(want, d.Reasons); d.Action != ActionDeny || diff != "" {
		t.Errorf("Decide(sudo ls) = %s, reasons (-want +got):\n%s", d.Action, diff)
	}
}

func TestSandboxNetwork(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	for _, tc := range []struct {
		script string
		want   bool
	}{
		{"curl -s https://example.com", true},
		{"npm install", true},
		{"npm test", false},
		{"go test ./...", false},
		{"curl https://example.com && sudo ls", false},
	} {
		if got := decide(t, e, tc.script).Sandbox.Network; got != tc.want {
			t.Errorf("Decide(%q).Sandbox.Network = %v, want %v", tc.script, got, tc.want)
		}
	}
}

func TestBundleErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir  string
		want string
	}{
		{"syntax", `policy\.rego:4:\d+: rego_parse_error`},
		{"typeerror", `policy\.rego:6:\d+: rego_type_error`},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", "bundles", tc.dir)
			_, err := New(t.Context(), WithDir(dir))
			var be *BundleError
			if !errors.As(err, &be) {
				t.Fatalf("New(WithDir(%s)) error = %v, want a *BundleError", dir, err)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(filepath.ToSlash(dir)) + "/" + tc.want).MatchString(err.Error()) {
				t.Errorf("New(WithDir(%s)) error = %q, want it to match %s after the directory", dir, err, tc.want)
			}
		})
	}
}

// TestBundleTestsLeftOut: the engine compiles a bundle's rules without its tests
// (*_test.rego), so a test that does not compile leaves decisions alone and fails only
// the tests; one that does not parse still fails the load.
func TestBundleTestsLeftOut(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "bundles", "brokentest")
	e, err := New(t.Context(), WithDir(dir))
	if err != nil {
		t.Fatalf("New(WithDir(%s)) = %v, want the bundle loaded: its only error is in a test", dir, err)
	}
	if d, err := e.Decide(t.Context(), parse.Script("ls", parse.Options{})); err != nil || d.Action != ActionAllow {
		t.Errorf("Decide(ls) = %+v, %v; want allow", d, err)
	}
	if _, err := RunTests(t.Context(), TestOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), "policy_test.rego:4") {
		t.Errorf("RunTests(%s) error = %v; want the test's type error, at policy_test.rego:4", dir, err)
	}
	dir = filepath.Join("testdata", "bundles", "syntaxtest")
	var be *BundleError
	if _, err := New(t.Context(), WithDir(dir)); !errors.As(err, &be) || !strings.Contains(err.Error(), "policy_test.rego:5") {
		t.Errorf("New(WithDir(%s)) error = %v; want a *BundleError at policy_test.rego:5", dir, err)
	}
}

func TestBundleWithoutPolicy(t *testing.T) {
	t.Parallel()
	if _, err := New(t.Context(), WithDir(filepath.Join("testdata", "bundles", "empty"))); !errors.Is(err, ErrNoBundle) {
		t.Errorf("New(empty dir) error = %v, want ErrNoBundle", err)
	}
	if _, err := New(t.Context(), WithDir(filepath.Join(t.TempDir(), "missing"))); err == nil {
		t.Error("New(missing dir) succeeded")
	}
}

// TestFailClosed: whatever goes wrong in evaluation, the decision is a deny that says
// why, and the error comes back too.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir     string
		rule    string
		wantErr error
	}{
		{"undefined", "engine.undefined", ErrUndefined},
		{"malformed", "engine.malformed", ErrMalformed},
		{"conflict", "engine.error", nil},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, WithDir(filepath.Join("testdata", "bundles", tc.dir)))
			d, err := e.Decide(t.Context(), parse.Script("ls", corpusOptions))
			if err == nil {
				t.Fatalf("Decide error = nil, want one")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Decide error = %v, want %v", err, tc.wantErr)
			}
			if d.Action != ActionDeny || len(d.Reasons) != 1 || d.Reasons[0].Rule != tc.rule || d.Reasons[0].Command != -1 {
				t.Errorf("Decide = %+v, want a deny with the single reason %s", d, tc.rule)
			}
			if d.Sandbox.Network {
				t.Error("a failed decision grants the network")
			}
			if d.Revision != e.Revision() {
				t.Errorf("Revision = %q, want %q", d.Revision, e.Revision())
			}
		})
	}
}

func TestDenyReasonWinsOverAllowAction(t *testing.T) {
	t.Parallel()
	e := newEngine(t, WithDir(filepath.Join("testdata", "bundles", "denyreason")))
	d := decide(t, e, "ls")
	if d.Action != ActionDeny || d.Sandbox.Network {
		t.Errorf("Decide = %+v, want deny without network", d)
	}
}

func TestDecisionFromRejectsMalformed(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		nil,
		"allow",
		map[string]any{},
		map[string]any{"action": 1},
		map[string]any{"action": "ALLOW"},
		map[string]any{"action": "allow", "reasons": "none"},
		map[string]any{"action": "allow", "reasons": []any{"x"}},
		map[string]any{"action": "allow", "reasons": []any{map[string]any{"rule": "r"}}},
		map[string]any{"action": "allow", "reasons": []any{map[string]any{"rule": "r", "message": "m", "command": 1.5}}},
		map[string]any{"action": "allow", "reasons": []any{map[string]any{"rule": "r", "message": "m", "effect": "maybe"}}},
	} {
		if d, err := decisionFrom(v); !errors.Is(err, ErrMalformed) {
			t.Errorf("decisionFrom(%v) = %+v, %v; want ErrMalformed", v, d, err)
		}
	}
	d, err := decisionFrom(map[string]any{"action": "allow", "reasons": []any{map[string]any{"rule": "r", "message": "m", "effect": "ask", "command": 2.0}}})
	if err != nil || d.Action != ActionAsk || d.Reasons[0].Command != 2 {
		t.Errorf("decisionFrom(allow with an ask reason) = %+v, %v; want ask", d, err)
	}
}

func TestDecideInput(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	d, err := e.DecideInput(t.Context(), map[string]any{
		"request":  map[string]any{"cwd": "/w", "workspace": "/w"},
		"commands": []any{map[string]any{"index": 0, "name": "sudo", "path": "sudo", "argv": []any{"sudo"}, "dynamic_name": false}},
	})
	if err != nil || d.Action != ActionDeny {
		t.Errorf("DecideInput(sudo) = %+v, %v; want deny", d, err)
	}
	d, err = e.DecideInput(t.Context(), map[string]any{})
	if err != nil || d.Action != ActionDeny {
		t.Errorf("DecideInput({}) = %+v, %v; want deny", d, err)
	}
}

func TestConfigChangesDecisionsAndRevision(t *testing.T) {
	t.Parallel()
	def := newEngine(t)
	no := false
	cfg := Config{
		AllowedCommands: AllowedCommands{UseDefault: &no, CustomList: []string{"npm", "python", "grep"}},
		UnknownCommand:  ActionAsk,
	}
	e := newEngine(t, WithConfig(cfg))
	if e.Revision() == def.Revision() {
		t.Error("the revision does not change with the configuration")
	}
	if got := decide(t, e, "grep -rn x .").Action; got != ActionAllow {
		t.Errorf("custom list: grep = %s, want allow", got)
	}
	if got := decide(t, e, "ls").Action; got != ActionAsk {
		t.Errorf("custom list with unknown_command ask: ls = %s, want ask", got)
	}
	if got := decide(t, e, "sudo ls").Action; got != ActionDeny {
		t.Errorf("sudo = %s, want deny whatever the configuration", got)
	}
	if got := e.Config().UnknownCommand; got != ActionAsk {
		t.Errorf("Config().UnknownCommand = %q, want ask", got)
	}
}

func TestAdditionalNeverOverridesForbidden(t *testing.T) {
	t.Parallel()
	e := newEngine(t, WithConfig(Config{AllowedCommands: AllowedCommands{Additional: []string{"sudo", "rsync"}}}))
	for _, s := range []string{"sudo ls", "rsync -a a b"} {
		if got := decide(t, e, s).Action; got != ActionDeny {
			t.Errorf("additional %q: Decide = %s, want deny", s, got)
		}
	}
}

func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	_, err := New(t.Context(), WithConfig(Config{UnknownCommand: "allow"}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "unknown_command" {
		t.Errorf("New(unknown_command: allow) error = %v, want a ConfigError on unknown_command", err)
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	before := e.Revision()
	err := e.Reload(t.Context(), WithDir(filepath.Join("testdata", "bundles", "syntax")))
	var be *BundleError
	if !errors.As(err, &be) {
		t.Fatalf("Reload(broken bundle) error = %v, want a BundleError", err)
	}
	if e.Revision() != before || decide(t, e, "sudo ls").Action != ActionDeny {
		t.Fatal("a failed Reload changed the engine")
	}
	if err := e.Reload(t.Context(), WithDir(filepath.Join("testdata", "bundles", "minimal"))); err != nil {
		t.Fatalf("Reload(minimal): %v", err)
	}
	if e.Revision() == before {
		t.Error("Reload did not change the revision")
	}
	if got := decide(t, e, "sudo ls").Action; got != ActionAsk {
		t.Errorf("after Reload(minimal): sudo = %s, want ask", got)
	}
	if len(e.Allowlist()) != 0 {
		t.Errorf("minimal bundle Allowlist() = %v, want none", e.Allowlist())
	}
}

// TestConcurrentDecideAndReload runs decisions while the bundle is swapped: every
// decision comes from one bundle or the other, never from a mix or a failure.
func TestConcurrentDecideAndReload(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	doc := parse.Script("sudo ls", corpusOptions)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for range 50 {
				d, err := e.Decide(context.Background(), doc)
				if err != nil || (d.Action != ActionDeny && d.Action != ActionAsk) {
					errs <- errors.Join(err, errors.New("unexpected decision "+d.Action))
					return
				}
			}
		})
	}
	for i := range 4 {
		dir := filepath.Join("testdata", "bundles", "minimal")
		opts := []Option{WithDir(dir)}
		if i%2 == 1 {
			opts = nil
		}
		if err := e.Reload(t.Context(), opts...); err != nil {
			t.Errorf("Reload: %v", err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSnapshot: a snapshot is one load's view, also while Reload swaps the bundle.
func TestSnapshot(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	s := e.Snapshot()
	if s.Revision != e.Revision() || s.Source != "embedded" || s.Prompt != e.Prompt() ||
		len(s.Files) != len(e.Files()) || !cmp.Equal(s.Config, e.Config()) {
		t.Fatalf("Snapshot() = {%s %s %d files} disagrees with the getters", s.Revision, s.Source, len(s.Files))
	}
	minimal := filepath.Join("testdata", "bundles", "minimal")
	other := newEngine(t, WithDir(minimal), WithConfig(Config{AllowedCommands: AllowedCommands{Additional: []string{"custom-tool"}}})).Snapshot()
	want := map[string]Snapshot{s.Revision: s, other.Revision: other}

	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			got := e.Snapshot()
			w, ok := want[got.Revision]
			if !ok || got.Source != w.Source || got.Prompt != w.Prompt || len(got.Files) != len(w.Files) {
				errs <- fmt.Errorf("Snapshot() = revision %s source %s: a mix of two loads", got.Revision, got.Source)
				return
			}
		}
	}()
	for i := range 6 {
		opts := []Option{WithDir(minimal), WithConfig(Config{AllowedCommands: AllowedCommands{Additional: []string{"custom-tool"}}})}
		if i%2 == 1 {
			opts = nil
		}
		if err := e.Reload(t.Context(), opts...); err != nil {
			t.Errorf("Reload: %v", err)
		}
	}
	close(done)
	for err := range errs {
		t.Error(err)
	}
}

func TestRevisionIsAContentHash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("p.rego", "package cmdgate\n\ndecision := {\"action\": \"allow\", \"reasons\": []}\n")
	r1 := newEngine(t, WithDir(dir)).Revision()
	if r2 := newEngine(t, WithDir(dir)).Revision(); r2 != r1 {
		t.Errorf("same files: revisions %s and %s differ", r1, r2)
	}
	write("p.rego", "package cmdgate\n\ndecision := {\"action\": \"deny\", \"reasons\": []}\n")
	if r3 := newEngine(t, WithDir(dir)).Revision(); r3 == r1 {
		t.Error("changed policy: same revision")
	}
	write("data.json", `{"x": 1}`)
	r4 := newEngine(t, WithDir(dir)).Revision()
	write(".hidden.rego", "not rego at all")
	if r5 := newEngine(t, WithDir(dir)).Revision(); r5 != r4 {
		t.Error("a hidden file changed the revision")
	}
}

// The prompt says what is in force, and only that: the Docker text only for the docker
// backend.
func TestPromptFor(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	untrue := []string{"Docker", "/workspace/project", "Automatically installed", "MCP", "{allowed_commands_list}"}
	for _, tc := range []struct {
		name      string
		env       PromptEnv
		want, not []string
	}{
		{"linux", PromptEnv{Workspace: "/srv/ws", Backend: "linux", Isolated: true, PrivateTmp: true, Home: "/data/caches/ws-1/home", Caches: true,
			Network: "none, except for dependency installs", Tools: []string{"`POST /v1/exec`: run"}, DefaultTimeout: 30 * time.Second, MaxTimeout: 30 * time.Minute},
			[]string{"`/srv/ws`", "fresh Linux sandbox", "`/tmp` is private", "`/data/caches/ws-1/home`, kept between commands", "Network: none, except for dependency installs",
				"- `POST /v1/exec`: run", "30s per command", "at most 30m", "as commands of their own", "Build/Package Management: npm"},
			untrue},
		{"process", PromptEnv{Workspace: "/srv/ws", Backend: "process", Home: "/data/caches/ws-1/home", Caches: true, Network: "not isolated"},
			[]string{"`/srv/ws`", "Sandbox: none", "Network: not isolated", "File Operations: ls"},
			append([]string{"private", "fresh Linux sandbox", "Time limit"}, untrue...)},
		{"unknown", PromptEnv{},
			[]string{"not known here", "### Available Commands"},
			append([]string{"Working directory", "Network:", "Home directory"}, untrue...)},
		{"docker", PromptEnv{Backend: "docker"},
			[]string{"Docker execution environment", "/workspace/project/", "Build/Package Management: npm"},
			[]string{"{allowed_commands_list}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e.PromptFor(tc.env)
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Errorf("PromptFor(%s) lacks %q:\n%s", tc.name, w, p)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(p, n) {
					t.Errorf("PromptFor(%s) says %q:\n%s", tc.name, n, p)
				}
			}
		})
	}
}

func TestPrompt(t *testing.T) {
	t.Parallel()
	p := newEngine(t).Prompt()
	for _, want := range []string{
		"## Command Execution Feature",
		"### Available Commands",
		"Build/Package Management: npm, yarn, pnpm, pip, pip3, conda, mamba, python, python3, go, cargo, maven, mvn, gradle, make, cmake, bundle, gem, composer, dotnet\n",
		"Test Execution: pytest, jest, mocha, rspec, phpunit, go test, cargo test, dotnet test\n",
		"Version Control: git status, git diff, git log, git branch, git show, git blame, ",
		"Utilities: echo, pwd, cd, mkdir, rm, cp, mv, touch, chmod, env, which, curl, wget, tar, unzip, jq, sed, awk, sort, uniq, xargs, tee\n",
		"Shell builtins: exit, true, false, test, [, export, ",
		"### Recommended Usage",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("Prompt() lacks %q", want)
		}
	}
	if strings.Contains(p, "{allowed_commands_list}") {
		t.Error("Prompt() kept the placeholder")
	}
	ex := newEngine(t, WithConfig(Config{AllowedCommands: AllowedCommands{Exclude: []string{"curl", "wget"}, Additional: []string{"custom-build-tool"}}})).Prompt()
	if strings.Contains(ex, "curl") || !strings.Contains(ex, "Additional: custom-build-tool\n") {
		t.Errorf("Prompt() with exclude/additional:\n%s", ex)
	}
}
