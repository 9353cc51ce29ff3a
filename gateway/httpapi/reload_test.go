package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/policies"
)

// copyBundle copies the default policy bundle into a new directory.
func copyBundle(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "policies", "bundle"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

const brokenRego = "package cmdgate.broken\n\nthis is not rego {\n"

// TestReloadUnderConcurrentRequests breaks and fixes the bundle repeatedly while
// clients decide: every answer comes from a bundle that loaded (never an error, never a
// mix), its decision record names the same revision, and every load attempt is in the
// audit log, the rejected ones with their compile errors.
func TestReloadUnderConcurrentRequests(t *testing.T) {
	t.Parallel()
	dir := copyBundle(t)
	env := newEnv(t, func(o *gateway.Options) { o.PolicyDir, o.NoWatch = dir, true })
	loaded := map[string]bool{env.srv.Revision(): true}

	type result struct {
		status             int
		revision, decision string
		id                 string
		body               string
	}
	stop := make(chan struct{})
	var (
		resultsMu sync.Mutex
		results   []result
	)
	report := func(r result) {
		resultsMu.Lock()
		results = append(results, r)
		resultsMu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies := []string{`{"command":"ls -la"}`, `{"command":"rm -rf /"}`}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Not env.do: t.Fatal must not be called from this goroutine.
				req, _ := http.NewRequest("POST", env.url+"/v1/decide", strings.NewReader(bodies[(i+w)%2]))
				req.Header.Set("Authorization", env.tokens["agent"])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					report(result{status: -1, body: err.Error()})
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var out struct {
					Decision, Revision string
					DecisionID         string `json:"decision_id"`
				}
				json.Unmarshal(b, &out)
				report(result{resp.StatusCode, out.Revision, out.Decision, out.DecisionID, string(b)})
			}
		}()
	}

	const rounds = 6
	decisionFile := filepath.Join(dir, "cmdgate", "decision.rego")
	for i := range rounds {
		time.Sleep(20 * time.Millisecond)
		broken := filepath.Join(dir, "cmdgate", "broken.rego")
		if err := os.WriteFile(broken, []byte(brokenRego), 0o644); err != nil {
			t.Fatal(err)
		}
		before := env.srv.Revision()
		err := env.srv.ReloadPolicy(t.Context())
		var be *policies.BundleError
		if !errors.As(err, &be) || !strings.Contains(strings.Join(be.Errors, "\n"), "broken.rego") {
			t.Fatalf("round %d: ReloadPolicy(broken) = %v, want a BundleError naming broken.rego", i, err)
		}
		if env.srv.Revision() != before {
			t.Fatalf("round %d: a rejected bundle changed the revision", i)
		}
		time.Sleep(20 * time.Millisecond)
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
		appendFile(t, decisionFile, fmt.Sprintf("\n# reload round %d\n", i))
		if err := env.srv.ReloadPolicy(t.Context()); err != nil {
			t.Fatalf("round %d: ReloadPolicy(fixed) = %v", i, err)
		}
		loaded[env.srv.Revision()] = true
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()

	if len(loaded) != rounds+1 {
		t.Errorf("%d distinct revisions loaded, want %d", len(loaded), rounds+1)
	}
	n := len(results)
	for _, r := range results {
		if r.status != http.StatusOK || !loaded[r.revision] || (r.decision != "allow" && r.decision != "deny") {
			t.Errorf("answer during reloads: %d %s (revision %.12s known: %v)", r.status, r.body, r.revision, loaded[r.revision])
			continue
		}
		rec, err := env.srv.AuditStore().Get(t.Context(), r.id)
		if err != nil || rec.Revision != r.revision || rec.Decision != r.decision {
			t.Errorf("decision record %s = revision %.12s %s, %v; the answer said %.12s %s", r.id, rec.Revision, rec.Decision, err, r.revision, r.decision)
		}
	}
	if n < rounds {
		t.Errorf("only %d answers during the reloads", n)
	}

	var ok, rejected int
	for _, rec := range env.recordsOf(audit.KindPolicyLoad) {
		var d struct {
			OK     bool     `json:"ok"`
			Errors []string `json:"errors"`
		}
		json.Unmarshal(rec.Detail, &d)
		switch {
		case d.OK && rec.Decision == "loaded" && loaded[rec.Revision]:
			ok++
		case !d.OK && rec.Decision == "rejected" && len(d.Errors) > 0 && strings.Contains(d.Errors[0], "broken.rego"):
			rejected++
		default:
			t.Errorf("unexpected policy_load record: %s %s %s", rec.Decision, rec.Revision, rec.Detail)
		}
	}
	if ok != rounds+1 || rejected != rounds {
		t.Errorf("policy_load records: %d loaded, %d rejected; want %d and %d", ok, rejected, rounds+1, rounds)
	}
}

// TestWatcherReloads: a change in the policy directory reloads the bundle without a
// signal; a broken change is rejected and recorded while the old bundle serves.
func TestWatcherReloads(t *testing.T) {
	t.Parallel()
	dir := copyBundle(t)
	env := newEnv(t, func(o *gateway.Options) { o.PolicyDir, o.ReloadDebounce = dir, 50*time.Millisecond })
	first := env.srv.Revision()
	appendFile(t, filepath.Join(dir, "cmdgate", "decision.rego"), "\n# changed\n")
	second := waitFor(t, "the watcher to load the changed bundle", func() (string, bool) {
		var p struct{ Revision string }
		env.do("GET", "/v1/policy", "agent", nil).decode(t, &p)
		return p.Revision, p.Revision != first
	})

	// A new subdirectory is watched too; a broken file in it is rejected.
	sub := filepath.Join(dir, "cmdgate", "extra")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the watcher add the directory
	if err := os.WriteFile(filepath.Join(sub, "broken.rego"), []byte(brokenRego), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a rejected policy_load record", func() (string, bool) {
		for _, r := range env.recordsOf(audit.KindPolicyLoad) {
			if r.Decision == "rejected" && strings.Contains(string(r.Detail), "broken.rego") && strings.Contains(string(r.Detail), `"trigger":"file_change"`) {
				return r.Revision, true
			}
		}
		return "", false
	})
	if got := env.srv.Revision(); got != second {
		t.Errorf("revision after a broken change = %.12s, want %.12s (the previous bundle)", got, second)
	}
	if a := env.do("POST", "/v1/decide", "agent", []byte(`{"command":"ls"}`)); a.status != http.StatusOK {
		t.Errorf("decide with a broken bundle on disk: %d %s", a.status, a.body)
	}
}

// TestStartWithBrokenBundle: a bundle that does not compile stops the start with its
// errors, and the failed load is in the audit log.
func TestStartWithBrokenBundle(t *testing.T) {
	t.Parallel()
	dir := copyBundle(t)
	if err := os.WriteFile(filepath.Join(dir, "cmdgate", "broken.rego"), []byte(brokenRego), 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	_, err := gateway.New(t.Context(), gateway.Options{Workspace: t.TempDir(), DataDir: data, PolicyDir: dir, Sandbox: gateway.SandboxProcess})
	if err == nil || !strings.Contains(err.Error(), "broken.rego") {
		t.Fatalf("New with a broken bundle = %v, want an error naming broken.rego", err)
	}
	store, err := audit.Open(t.Context(), data, audit.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(t.Context())
	page, err := store.Query(t.Context(), audit.Query{Kind: audit.KindPolicyLoad})
	if err != nil || len(page.Records) != 1 || page.Records[0].Decision != "rejected" {
		t.Errorf("policy_load records after a failed start: %+v, %v; want one rejected", page, err)
	}
}

// TestStartErrors: what cannot work refuses to start, with a clear error.
func TestStartErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// An engine that does not answer: a socket path where nothing listens.
	noEngine, err := client.New(client.WithHost("unix://" + filepath.Join(t.TempDir(), "docker.sock")))
	if err != nil {
		t.Fatal(err)
	}
	defer noEngine.Close()
	for _, tc := range []struct {
		name string
		opts gateway.Options
		want string
	}{
		{"no data dir", gateway.Options{Workspace: t.TempDir()}, "no data directory"},
		{"linux sandbox without its init", gateway.Options{Workspace: t.TempDir(), DataDir: t.TempDir(), Sandbox: gateway.SandboxLinux,
			Linux: linux.Options{Helper: filepath.Join(file, "cmdgate-sandbox")}}, "sandbox linux cannot be honoured here"},
		{"docker sandbox without an engine", gateway.Options{Workspace: t.TempDir(), DataDir: t.TempDir(), Sandbox: gateway.SandboxDocker,
			Tasks: gateway.TaskOptions{Client: noEngine}}, "no Docker engine answers"},
		{"tasks in the allowlist mode", gateway.Options{Workspace: t.TempDir(), DataDir: t.TempDir(),
			Tasks: gateway.TaskOptions{Enabled: true, Client: noEngine, Network: "allowlist"}}, "allowlist mode is not available yet"},
		{"unknown sandbox", gateway.Options{Workspace: t.TempDir(), DataDir: t.TempDir(), Sandbox: "chroot"}, "unknown sandbox"},
		{"workspace is a file", gateway.Options{Workspace: file, DataDir: t.TempDir()}, "not a directory"},
		{"missing policy dir", gateway.Options{Workspace: t.TempDir(), DataDir: t.TempDir(), PolicyDir: filepath.Join(file, "x")}, "policy"},
		{"bad policy config", gateway.Options{Workspace: t.TempDir(), DataDir: t.TempDir(), Policy: policies.Config{UnknownCommand: "allow"}}, "unknown_command"},
		{"data dir is a file", gateway.Options{Workspace: t.TempDir(), DataDir: file}, "data directory"},
	} {
		_, err := gateway.New(t.Context(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

// waitFor polls cond every 20 ms for at most 10 s.
func waitFor(t *testing.T, what string, cond func() (string, bool)) string {
	t.Helper()
	for range 500 {
		if v, ok := cond(); ok {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
	return ""
}
