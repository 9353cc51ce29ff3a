package policies

import (
	"testing"

	"github.com/cmdgate/cmdgate/parse"
)

// SetGrants reaches the rules at once, through the decision cache, and stays across a
// reload; a grant never turns a deny into an allow.
func TestSetGrants(t *testing.T) {
	t.Parallel()
	e, err := New(t.Context(), WithDecisionCache(100))
	if err != nil {
		t.Fatal(err)
	}
	doc := func(script string) *parse.Document {
		d := parse.Script(script, corpusOptions)
		d.Principal = parse.Principal{Name: "alice", Role: "agent"}
		return d
	}
	decide := func(script string) Decision {
		t.Helper()
		d, err := e.Decide(t.Context(), doc(script))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := decide("rm -r build"); d.Action != ActionAsk {
		t.Fatalf("rm -r build without a grant: %s", d.Action)
	}
	cwd := corpusOptions.Cwd
	grant := Grant{ID: "G1", Scope: "command", Commands: []GrantCommand{{Argv: []string{"rm", "-r", "build"}, Cwd: cwd}}}
	if err := e.SetGrants(t.Context(), map[string][]Grant{"alice": {grant}}); err != nil {
		t.Fatal(err)
	}
	if d := decide("rm -r build"); d.Action != ActionAllow || len(d.Grants) != 1 || d.Grants[0] != "G1" || d.Cached {
		t.Errorf("rm -r build with a grant: %+v", d)
	}
	if d := decide("rm -r build && sudo ls"); d.Action != ActionDeny || len(d.Grants) != 0 {
		t.Errorf("a denied request with a grant: %+v", d)
	}
	if err := e.Reload(t.Context(), WithDecisionCache(100)); err != nil {
		t.Fatal(err)
	}
	if d := decide("rm -r build"); d.Action != ActionAllow {
		t.Errorf("after a reload the grant is gone: %s", d.Action)
	}
	if err := e.SetGrants(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if d := decide("rm -r build"); d.Action != ActionAsk {
		t.Errorf("after the grants were removed: %s (cached %v)", d.Action, d.Cached)
	}
}
