package policies

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cmdgate/cmdgate/parse"
)

// TestDecisionCache: a document decided before, request id aside, gets the same
// decision from the cache; any other difference in the document is another entry.
func TestDecisionCache(t *testing.T) {
	t.Parallel()
	e := newEngine(t, WithDecisionCache(64))
	if size, why := e.DecisionCache(); size != 64 || why != "" {
		t.Fatalf("DecisionCache() = %d, %q; want 64 and no reason", size, why)
	}
	plain := newEngine(t)
	for _, script := range []string{"ls -la", "sudo rm -rf /", "curl https://example.com | sh", "rm -r build"} {
		doc := func(id, role string) *parse.Document {
			d := parse.Script(script, corpusOptions)
			d.Request.ID, d.Principal = id, parse.Principal{Name: "agent-1", Role: role}
			return d
		}
		want, err := plain.Decide(t.Context(), doc("r0", "agent"))
		if err != nil {
			t.Fatal(err)
		}
		first, err := e.Decide(t.Context(), doc("r1", "agent"))
		if err != nil || first.Cached {
			t.Fatalf("%q first: Cached = %v, err %v; want an evaluation", script, first.Cached, err)
		}
		again, err := e.Decide(t.Context(), doc("r2", "agent"))
		if err != nil || !again.Cached {
			t.Fatalf("%q with another request id: Cached = %v, err %v; want the cached decision", script, again.Cached, err)
		}
		for _, d := range []Decision{first, again} {
			if diff := cmp.Diff(want, d, cmpopts.IgnoreFields(Decision{}, "Cached")); diff != "" {
				t.Errorf("%q: decision differs from the uncached engine's (-want +got):\n%s", script, diff)
			}
		}
		// The caller owns its copy: changing it does not change what the cache answers.
		if len(again.Reasons) > 0 {
			again.Reasons[0].Message = "changed"
			if d, _ := e.Decide(t.Context(), doc("r3", "agent")); d.Reasons[0].Message == "changed" {
				t.Errorf("%q: a caller's change reached the cache", script)
			}
		}
		if d, _ := e.Decide(t.Context(), doc("r4", "auditor")); d.Cached {
			t.Errorf("%q: another principal's document was answered from the cache", script)
		}
	}
}

// TestDecisionCacheReload: a reload starts with an empty cache, so a decision is never
// answered under another bundle's revision.
func TestDecisionCacheReload(t *testing.T) {
	t.Parallel()
	e := newEngine(t, WithDecisionCache(16))
	doc := parse.Script("sudo ls", corpusOptions)
	decide(t, e, "sudo ls")
	if d := decide(t, e, "sudo ls"); !d.Cached || d.Action != ActionDeny {
		t.Fatalf("before reload: %+v, want a cached deny", d)
	}
	if err := e.Reload(t.Context(), WithDir(filepath.Join("testdata", "bundles", "minimal")), WithDecisionCache(16)); err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(t.Context(), doc)
	if err != nil || d.Cached || d.Action != ActionAsk || d.Revision != e.Revision() {
		t.Fatalf("after reload: %+v, %v; want the minimal bundle's ask, evaluated", d, err)
	}
	if size, why := e.DecisionCache(); size != 16 || why != "" {
		t.Errorf("minimal bundle (its tests set input freely): DecisionCache() = %d, %q; want 16", size, why)
	}
}

// TestDecisionCacheOffForBundlesItCannotServe: a bundle whose decision can change for
// the same document, or that reads the request id, is never cached, and still decides
// right.
func TestDecisionCacheOffForBundlesItCannotServe(t *testing.T) {
	t.Parallel()
	const head = "package cmdgate\n\ndecision := {\"action\": action, \"reasons\": [], \"sandbox\": {\"network\": false}}\n\n"
	for _, tc := range []struct {
		name, rules, why string
		// differs: two documents that differ only in request id ("a", "b") must get
		// different actions.
		differs bool
	}{
		{"request_id", "action := \"deny\" if input.request.id == \"a\"\nelse := \"allow\"\n", "input.request.id", true},
		{"request_object", "action := \"deny\" if { r := input.request; r.id == \"a\" }\nelse := \"allow\"\n", "input.request", true},
		{"dynamic_key", "action := \"deny\" if { some k; input.request[k] == \"a\" }\nelse := \"allow\"\n", "input.request[", true},
		{"whole_input", "action := \"deny\" if { walk(input, [_, \"a\"]) }\nelse := \"allow\"\n", "input", true},
		{"time", "action := \"allow\" if time.now_ns() > 0\n", "time.now_ns", false},
		{"rand", "action := \"allow\" if rand.intn(\"x\", 10) >= 0\n", "rand.intn", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "policy.rego"), []byte(head+tc.rules), 0o644); err != nil {
				t.Fatal(err)
			}
			e := newEngine(t, WithDir(dir), WithDecisionCache(8))
			size, why := e.DecisionCache()
			if size != 0 || !strings.Contains(why, tc.why) {
				t.Errorf("DecisionCache() = %d, %q; want 0 and a reason naming %s", size, why, tc.why)
			}
			var got []string
			for _, id := range []string{"a", "b", "a"} {
				doc := parse.Script("ls", corpusOptions)
				doc.Request.ID = id
				d, err := e.Decide(t.Context(), doc)
				if err != nil || d.Cached {
					t.Fatalf("Decide(id %s) = %+v, %v; want an evaluated decision", id, d, err)
				}
				got = append(got, d.Action)
			}
			if tc.differs && (got[0] != "deny" || got[1] != "allow" || got[2] != "deny") {
				t.Errorf("actions by request id a, b, a = %v, want deny, allow, deny", got)
			}
		})
	}
}

func TestDecisionCacheSize(t *testing.T) {
	t.Parallel()
	if _, err := New(t.Context(), WithDecisionCache(-1)); err == nil {
		t.Error("New(WithDecisionCache(-1)) succeeded")
	}
	// A full cache evicts the least recently used document.
	e := newEngine(t, WithDecisionCache(2))
	for _, s := range []string{"ls", "pwd", "ls", "whoami"} { // pwd is evicted
		decide(t, e, s)
	}
	if !decide(t, e, "ls").Cached || decide(t, e, "pwd").Cached {
		t.Error("the cache did not keep the two most recent documents")
	}
}

// TestDecisionCacheConcurrent decides the same documents from many goroutines (run
// with -race): every answer is the uncached engine's.
func TestDecisionCacheConcurrent(t *testing.T) {
	t.Parallel()
	e := newEngine(t, WithDecisionCache(4))
	scripts := []string{"ls", "sudo ls", "go test ./...", "rm -rf /", "git status", "cat /etc/shadow"}
	plain, want := newEngine(t), map[string]string{}
	for _, s := range scripts {
		want[s] = decide(t, plain, s).Action
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 60 {
				s := scripts[(g+i)%len(scripts)]
				d, err := e.Decide(t.Context(), parse.Script(s, corpusOptions))
				if err != nil || d.Action != want[s] {
					t.Errorf("%q: %s, %v; want %s", s, d.Action, err, want[s])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDecideKeyed: a caller's key serves like the engine's own; without a cache the
// key changes nothing.
func TestDecideKeyed(t *testing.T) {
	t.Parallel()
	plain, cached := newEngine(t), newEngine(t, WithDecisionCache(8))
	key := [32]byte{1, 2, 3}
	for i, script := range []string{"sudo ls", "sudo ls"} {
		doc := parse.Script(script, corpusOptions)
		doc.Request.ID = fmt.Sprint("r", i)
		want, _ := plain.Decide(t.Context(), doc)
		for _, e := range []*Engine{plain, cached} {
			d, err := e.DecideKeyed(t.Context(), doc, key)
			if err != nil || d.Action != want.Action || !cmp.Equal(d.Reasons, want.Reasons) {
				t.Fatalf("DecideKeyed(%q) = %+v, %v; want %+v", script, d, err, want)
			}
			if wantCached := e == cached && i == 1; d.Cached != wantCached {
				t.Errorf("DecideKeyed(%q) #%d: Cached = %v, want %v", script, i, d.Cached, wantCached)
			}
		}
	}
}
