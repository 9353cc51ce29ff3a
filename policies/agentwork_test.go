package policies

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/cmdgate/cmdgate/parse"
)

// agentworkMinRate is the share of testdata/agentwork that the sandboxed profile must
// allow.
const agentworkMinRate = 0.97

// agentworkSandbox is what the linux backend guarantees (gateway.Server.sandboxFor).
var agentworkSandbox = parse.Sandbox{Backend: "linux", Isolated: true, PrivateTmp: true, Home: "/var/lib/cmdgate/caches/ws/home"}

// agentworkScript is one ordinary script of testdata/agentwork.
type agentworkScript struct {
	file, name, script string
}

// loadAgentwork reads testdata/agentwork/*.txtar: each file's comment says what kind of
// work it holds, each of its files is one script as a coding agent would send it.
func loadAgentwork(t testing.TB) []agentworkScript {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "agentwork", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var out []agentworkScript
	for _, name := range files {
		ar, err := txtar.ParseFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.TrimSpace(string(f.Data)) == "" {
				t.Fatalf("%s: script %s is empty", name, f.Name)
			}
			out = append(out, agentworkScript{file: filepath.Base(name), name: f.Name, script: string(f.Data)})
		}
	}
	if len(out) < 400 {
		t.Fatalf("testdata/agentwork holds %d scripts, want at least 400", len(out))
	}
	return out
}

// agentworkRate decides every script of the corpus under profile with the linux
// backend's guarantees and returns the allowed share and the scripts not allowed.
func agentworkRate(t *testing.T, profile string, scripts []agentworkScript) (float64, []string) {
	t.Helper()
	e, err := New(t.Context(), WithConfig(Config{Profile: profile}))
	if err != nil {
		t.Fatal(err)
	}
	allowed := 0
	var refused []string
	for _, s := range scripts {
		doc := parse.Script(s.script, corpusOptions)
		doc.Sandbox = agentworkSandbox
		doc.Request.Profile = profile
		d, err := e.Decide(t.Context(), doc)
		if err != nil {
			t.Fatalf("%s %s: Decide error: %v", s.file, s.name, err)
		}
		if d.Action == ActionAllow {
			allowed++
			continue
		}
		refused = append(refused, fmt.Sprintf("%s %s → %s\n%s%s", s.file, s.name, d.Action, indent(s.script), formatReasons(d.Reasons)))
	}
	return float64(allowed) / float64(len(scripts)), refused
}

// TestAgentwork decides the scripts of testdata/agentwork, ordinary work of coding agents
// (builds, tests, dependency installs, git, searches, dev servers; multi-line scripts,
// cd chains, heredocs, pipes), under the sandboxed profile: at least 97% must be allowed.
// The strict profile's rate is printed beside it for comparison. The rates are printed
// on every run (make test shows them) and each refusal is listed with its reasons.
func TestAgentwork(t *testing.T) {
	t.Parallel()
	scripts := loadAgentwork(t)
	rate, refused := agentworkRate(t, ProfileSandboxed, scripts)
	strictRate, _ := agentworkRate(t, ProfileStrict, scripts)
	// Printed, not logged: make test runs without -v and the rate is a figure to read.
	fmt.Fprintf(os.Stdout, "agentwork corpus: %d scripts, allowed %.1f%% under sandboxed, %.1f%% under strict\n", len(scripts), 100*rate, 100*strictRate)
	for _, r := range refused {
		t.Logf("not allowed under sandboxed: %s", r)
	}
	if rate < agentworkMinRate {
		t.Errorf("sandboxed allows %.1f%% of testdata/agentwork, want at least %.0f%%", 100*rate, 100*agentworkMinRate)
	}
	if strictRate > rate {
		t.Errorf("strict allows more (%.1f%%) than sandboxed (%.1f%%)", 100*strictRate, 100*rate)
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("\t| ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
