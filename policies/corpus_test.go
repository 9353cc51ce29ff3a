package policies

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/cmdgate/cmdgate/parse"
)

// corpusOptions are the parse options of the corpus: cwd and workspace /workspace/proj.
var corpusOptions = parse.Options{Cwd: "/workspace/proj", Workspace: "/workspace/proj"}

// corpusCase is one script of testdata/corpus with the action the default policy must
// give it and, optionally, a rule that must be among the reasons.
type corpusCase struct {
	file   string
	line   int
	script string
	action string
	rule   string
}

// loadCorpus reads testdata/corpus: allow.txt, ask.txt and deny.txt hold one script per
// line ("# " lines and blank lines are skipped; a trailing "  ## rule.name" names a rule
// the reasons must include); scripts.txtar holds multi-line scripts in files named
// "<action>/<label>" or "<action>/<label> ## rule.name".
func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	var cases []corpusCase
	for _, action := range []string{ActionAllow, ActionAsk, ActionDeny} {
		name := filepath.Join("testdata", "corpus", action+".txt")
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "# ") || line == "#" {
				continue
			}
			script, rule, _ := strings.Cut(line, "  ## ")
			cases = append(cases, corpusCase{file: name, line: n, script: script, action: action, rule: strings.TrimSpace(rule)})
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	ar, err := txtar.ParseFile(filepath.Join("testdata", "corpus", "scripts.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		head, rule, _ := strings.Cut(f.Name, " ## ")
		action, _, ok := strings.Cut(head, "/")
		if !ok || rank(action) < 0 {
			t.Fatalf("scripts.txtar: file %q is not named <action>/<label>", f.Name)
		}
		cases = append(cases, corpusCase{file: "scripts.txtar", script: string(f.Data), action: action, rule: strings.TrimSpace(rule)})
	}
	return cases
}

// TestCorpus decides every corpus script through parse and the default policy. The
// corpus is mostly commands the rules were not written from (GTFOBins entries for the
// allowed tools, published allowlist bypasses, everyday agent commands), so it tests
// the policy on classes rather than on its own examples.
func TestCorpus(t *testing.T) {
	t.Parallel()
	e, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, c := range loadCorpus(t) {
		counts[c.action]++
		d, err := e.Decide(t.Context(), parse.Script(c.script, corpusOptions))
		if err != nil {
			t.Errorf("%s:%d: Decide(%q) error: %v", c.file, c.line, c.script, err)
			continue
		}
		if d.Action != c.action {
			t.Errorf("%s:%d: Decide(%q) = %s, want %s\n%s", c.file, c.line, c.script, d.Action, c.action, formatReasons(d.Reasons))
			continue
		}
		if c.rule != "" && !hasRule(d.Reasons, c.rule) {
			t.Errorf("%s:%d: Decide(%q) reasons lack %s\n%s", c.file, c.line, c.script, c.rule, formatReasons(d.Reasons))
		}
	}
	t.Logf("corpus: %d allow, %d ask, %d deny", counts[ActionAllow], counts[ActionAsk], counts[ActionDeny])
}

func hasRule(rs []Reason, rule string) bool {
	for _, r := range rs {
		if r.Rule == rule {
			return true
		}
	}
	return false
}

func formatReasons(rs []Reason) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\t%s %s [%d]: %s\n", r.Effect, r.Rule, r.Command, r.Message)
	}
	return b.String()
}
