package policies

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/cmdgate/cmdgate/parse"
)

// TestRoutedMatchesRego holds the routing the engine adds to the input ("routed")
// equal to what the bundle computes for an input without it (lib.computed_routed, kinds
// without commands left out), for every corpus script and a few shapes of their own:
// commands run by a path, with a run-time name, redirections alone.
func TestRoutedMatchesRego(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	s := e.state.Load()
	if s.routes == nil {
		t.Fatal("the default bundle computes no routes")
	}
	b, err := loadBundle(embedded, embeddedRoot, "embedded", "policies/bundle")
	if err != nil {
		t.Fatal(err)
	}
	pq, err := rego.New(rego.Query("data.cmdgate.lib.computed_routed"), rego.Compiler(b.compiler), rego.Store(s.store)).PrepareForEval(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	scripts := []string{
		"",
		"/usr/bin/tar -xf a.tar; ./gradlew build; $CMD -x; > out.txt",
		"git -c core.pager=less log; find / -name '*.pem'; rm -- *; FOO=1 npm publish",
	}
	for _, c := range loadCorpus(t) {
		scripts = append(scripts, c.script)
	}
	for _, script := range scripts {
		doc := parse.Script(script, corpusOptions)
		m := jsonInput(t, doc)
		for i := range doc.Commands {
			m["commands"].([]any)[i].(map[string]any)["contained"] = Contained(&doc.Commands[i])
		}
		rs, err := pq.Eval(t.Context(), rego.EvalInput(m))
		if err != nil || len(rs) != 1 {
			t.Fatalf("lib.computed_routed on %q: %v, %v", script, rs, err)
		}
		computed := map[string]any{}
		for k, v := range rs[0].Expressions[0].Value.(map[string]any) {
			if len(v.([]any)) > 0 {
				computed[k] = v
			}
		}
		raw, err := json.Marshal(computed)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(s.routes.value(doc).String()), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: routed differs (-bundle +engine):\n%s", script, diff)
		}
	}
}

// TestRoutedKinds: every kind of check the index routes commands to is read by a rule
// (input.routed.KIND), and every kind a rule reads is one the index routes to: a rule
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
	s := e.state.Load()
	full := &routes{kinds: s.routes.kinds, all: s.routes.all} // routes no name: every command meets every kind
	n := 0
	for _, c := range loadCorpus(t) {
		doc := parse.Script(c.script, corpusOptions)
		routed, err := e.decideIn(t.Context(), s, s.routes.input(doc))
		if err != nil {
			t.Fatal(err)
		}
		unrouted, err := e.decideIn(t.Context(), s, full.input(doc))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(unrouted, routed); diff != "" {
			t.Errorf("%s:%d: %q: decision with the routes differs (-every kind +routed):\n%s", c.file, c.line, c.script, diff)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("the corpus has %d scripts", n)
	}
}
