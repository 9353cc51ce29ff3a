package policies

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/cmdgate/cmdgate/parse"
)

// TestRouted: the routing the engine adds to the input, on commands of each shape: a
// contained command of an allowed tool does not meet the name rules and an open one
// does, a tool's own kinds are there, a kind with a trigger only when the words match
// it, and a command run by a path or with a run-time name meets every kind.
func TestRouted(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	rt := e.state.Load().routes
	if rt == nil {
		t.Fatal("the default bundle computes no routes")
	}
	var all []string
	for _, k := range rt.kinds {
		all = append(all, string(k.Value.(ast.String)))
	}
	for _, tc := range []struct {
		script     string
		has, lacks []string
	}{
		{"ls src", nil, []string{"names", "exec_options_path", "git_config", "search"}},
		{"ls /etc", []string{"names"}, []string{"exec_options_path"}},
		{"git -c core.pager=less log", []string{"names", "git_config", "checked"}, []string{"search"}},
		{"find . -name x.go", []string{"search"}, []string{"git_config"}},
		{"go test ./...", []string{"exec_options"}, []string{"names", "search", "special", "checked", "network"}},
		// Kinds with triggers: special (the output options of the profile), checked (the
		// tool's check_triggers), network (a subcommand that needs it, or an option first).
		{"go test -coverprofile=c.out ./...", []string{"special"}, []string{"checked", "network"}},
		{"sort -o out.txt in.txt", []string{"special"}, nil},
		{"sort in.txt", nil, []string{"special"}},
		{"go test -toolexec=/tmp/x ./...", []string{"checked"}, []string{"network"}},
		{"go env -w GOFLAGS=-x", []string{"checked"}, nil},
		{"go get example.com/m", []string{"network"}, []string{"checked"}},
		{"go -C sub get example.com/m", []string{"network"}, nil},
		{"npm ci", []string{"network"}, nil},
		{"npm run build", nil, []string{"network"}},
		{"mvn dependency:go-offline", []string{"network"}, nil},
		{"git fetch origin", []string{"network"}, nil},
		{"git status", nil, []string{"network"}},
		{"find . -name '*.go'", []string{"search"}, []string{"checked"}},
		{"find . -name '*.o' -delete", []string{"search", "checked"}, nil},
		{"curl https://example.com", []string{"network"}, nil},
		{"/bin/ls src", all, nil},
		{"$CMD src", all, nil},
		{"> out.txt", all, nil},
		{"frobnicate src", all, nil},
	} {
		doc := parse.Script(tc.script, corpusOptions)
		var routed map[string][]int
		if err := json.Unmarshal([]byte(rt.value(doc).String()), &routed); err != nil {
			t.Fatal(err)
		}
		for k, is := range routed {
			if !slices.Contains(all, k) || !slices.Equal(is, []int{0}) {
				t.Errorf("%q: routed[%q] = %v, want a kind of the table routing command 0", tc.script, k, is)
			}
		}
		for _, k := range tc.has {
			if _, ok := routed[k]; !ok {
				t.Errorf("%q: routed %v lacks %q", tc.script, routed, k)
			}
		}
		for _, k := range tc.lacks {
			if _, ok := routed[k]; ok {
				t.Errorf("%q: routed %v has %q", tc.script, routed, k)
			}
		}
	}
}

// TestRoutedKinds: every kind of check the table routes commands to is read by a rule
// (input.routed.KIND), and every kind a rule reads is one the table routes to: a rule
// reading another would never run.
func TestRoutedKinds(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	s := e.state.Load()
	var kinds []string
	for _, k := range s.routes.kinds {
		kinds = append(kinds, string(k.Value.(ast.String)))
	}
	b, err := loadBundle(embedded, embeddedRoot, "embedded", "policies/bundle")
	if err != nil {
		t.Fatal(err)
	}
	routed := ast.MustParseRef("input.routed")
	var read []string
	for _, m := range b.compiler.Modules {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if len(r) > len(routed) && r.HasPrefix(routed) {
				k, ok := r[len(routed)].Value.(ast.String)
				if !ok {
					t.Errorf("%v: a rule reads input.routed with a key known at run time: %v", r[0].Location, r)
					return false
				}
				if !slices.Contains(read, string(k)) {
					read = append(read, string(k))
				}
			}
			return false
		})
	}
	slices.Sort(read)
	want := slices.Clone(kinds)
	slices.Sort(want)
	if diff := cmp.Diff(want, read); diff != "" {
		t.Errorf("kinds of check_kinds (-) and read by rules (+) differ:\n%s", diff)
	}
}

// TestRoutesChangeNoDecision: the routes leave out only checks that find nothing. For
// every corpus script (attacks and everyday commands), the decision with the engine's
// routing equals the decision with every command routed to every kind (each check's
// own conditions deciding alone).
func TestRoutesChangeNoDecision(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	n := 0
	for _, c := range loadCorpus(t) {
		if diff := routingDiff(t, e, c.script); diff != "" {
			t.Errorf("%s:%d: %q: decision with the routes differs (-every kind +routed):\n%s", c.file, c.line, c.script, diff)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("the corpus has %d scripts", n)
	}
}

// routingDiff is how the decision on script with the engine's routing differs from the
// one with every command routed to every kind ("" when they are equal).
func routingDiff(t *testing.T, e *Engine, script string) string {
	t.Helper()
	s := e.state.Load()
	full := &routes{kinds: s.routes.kinds, all: s.routes.all} // routes no name: every command meets every kind
	doc := parse.Script(script, corpusOptions)
	routed, err := e.decideIn(t.Context(), s, s.routes.input(doc))
	if err != nil {
		t.Fatal(err)
	}
	unrouted, err := e.decideIn(t.Context(), s, full.input(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cmp.Diff(unrouted, routed)
}

// TestRouteTriggerThatDoesNotCompile: a bundle whose routing table has a trigger that
// is not a regular expression does not load (its check would never match it either),
// and the error names the name and the kind.
func TestRouteTriggerThatDoesNotCompile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policy := `package cmdgate

decision := {"action": "allow", "reasons": []}
`
	lib := `package cmdgate.lib

computed_routes := {
	"names": {"sort": {"contained": ["special"], "open": ["special"], "triggers": {"special": "^-(o"}}},
	"kinds": ["special"],
}
`
	for name, content := range map[string]string{"p.rego": policy, "lib.rego": lib} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := New(t.Context(), WithDir(dir))
	if err == nil || !strings.Contains(err.Error(), `names["sort"].triggers["special"]`) {
		t.Fatalf("New with a trigger that does not compile: %v, want an error naming it", err)
	}
	// The same table with a trigger that compiles loads and routes by it.
	lib = strings.Replace(lib, `"^-(o"`, `"(?m)^-o$"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "lib.rego"), []byte(lib), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, WithDir(dir))
	rt := e.state.Load().routes
	for script, want := range map[string]string{"sort -o x y": `{"special": [0]}`, "sort y": `{}`} {
		if got := rt.value(parse.Script(script, corpusOptions)).String(); got != want {
			t.Errorf("%q: routed %s, want %s", script, got, want)
		}
	}
}

// FuzzRoutes is TestRoutesChangeNoDecision on scripts nobody wrote: the decision with
// the engine's routing (route tables and triggers) equals the one with every command
// routed to every kind. A route or trigger that leaves out a check which would find
// something fails it.
func FuzzRoutes(f *testing.F) {
	for _, s := range []string{
		"go test ./...", "go -C sub get example.com/m", "go test -toolexec=/tmp/x ./...", "go env -w GOFLAGS=-x",
		"npm ci && npm run build", "npm --prefix x install", "git status --short", "git -c core.pager=less log",
		"git fetch origin", "sort -o /etc/passwd x", "find . -name '*.o' -delete", "find . -exec sh -c 'id' \\;",
		"cd src && ls ../..", "curl -o /tmp/x https://example.com", "tar -xf a.tar --to-command=sh", "pip install -r req.txt",
		"mvn dependency:go-offline", "cargo install ripgrep", "sed -i 's/a/b/' /etc/hosts", "FOO=1 go build -o /usr/bin/x .",
	} {
		f.Add(s)
	}
	e, err := New(f.Context())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, script string) {
		if diff := routingDiff(t, e, script); diff != "" {
			t.Errorf("%q: decision with the routes differs (-every kind +routed):\n%s", script, diff)
		}
	})
}
