package policies

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/cmdgate/cmdgate/parse"
)

// The decision cache remembers the decisions of one loaded bundle and configuration by
// their input document. A decision is a function of the input and the bundle's data,
// so the same document gets the same decision without evaluating the policy again; an
// agent repeats its everyday commands (git status, go test ./..., ls) many times a
// session. The request id is left out of the key: it is new on every request, and a
// bundle that reads it is not cached at all (see uncacheable), nor is one that calls a
// builtin whose answer can change between two evaluations (time.now_ns, http.send,
// rand.intn, ...). A reload starts with an empty cache, as the cache belongs to the
// loaded state.
type decisionCache struct {
	lru *lru.Cache[[sha256.Size]byte, Decision]
}

func newDecisionCache(size int) *decisionCache {
	c, err := lru.New[[sha256.Size]byte, Decision](size)
	if err != nil {
		// Only a size below 1 fails, and the caller checks it.
		panic(err)
	}
	return &decisionCache{c}
}

// cacheKey is the SHA-256 of the document's JSON encoding without the request id. The
// JSON encoding carries every field InputValue reads (TestInputValueMatchesJSON), so two
// documents with the same key have the same input but for the id.
func cacheKey(doc *parse.Document) (k [sha256.Size]byte, err error) {
	d := *doc
	d.Request.ID = ""
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(&d); err != nil {
		return k, err
	}
	h.Sum(k[:0])
	return k, nil
}

func (c *decisionCache) get(k [sha256.Size]byte) (Decision, bool) {
	d, ok := c.lru.Get(k)
	if !ok {
		return Decision{}, false
	}
	d.Reasons = slices.Clone(d.Reasons) // the caller may change its copy
	d.Cached = true
	return d, true
}

func (c *decisionCache) add(k [sha256.Size]byte, d Decision) {
	d.Reasons = slices.Clone(d.Reasons)
	c.lru.Add(k, d)
}

// uncacheable says why the decisions of a compiled bundle cannot be cached, or "" when
// they can: a call of a nondeterministic builtin, or a read of the request id (or of an
// object that holds it, which could reach it dynamically).
func uncacheable(c *ast.Compiler) string {
	var why string
	var visit func(x any)
	visit = func(x any) {
		ast.WalkTerms(x, func(t *ast.Term) bool {
			if why != "" {
				return true
			}
			switch v := t.Value.(type) {
			case ast.Call:
				if b, ok := ast.BuiltinMap[v[0].String()]; ok && b.Nondeterministic {
					why = fmt.Sprintf("the policy calls %s, whose answer can change between evaluations", b.Name)
				}
			case ast.Ref:
				if v.HasPrefix(ast.InputRootRef) && readsRequestID(v) {
					why = fmt.Sprintf("the policy reads %s, which holds the request id", v)
					return true
				}
				for _, el := range v[1:] {
					visit(el)
				}
				return true
			case ast.Var:
				if v.Equal(ast.InputRootDocument.Value) {
					why = "the policy reads the whole input, which holds the request id"
				}
			}
			return false
		})
	}
	// The engine's compiler holds the bundle's rules without its tests (loadBundle),
	// which never run for a decision and set input freely.
	names := sortedKeys(c.Modules)
	for _, name := range names {
		visit(c.Modules[name])
		if why != "" {
			return why
		}
	}
	// Calls may also be expressions of their own (terms of Expr.Terms), not Call terms.
	for _, name := range names {
		ast.WalkExprs(c.Modules[name], func(e *ast.Expr) bool {
			if why == "" && e.IsCall() {
				if b, ok := ast.BuiltinMap[e.Operator().String()]; ok && b.Nondeterministic {
					why = fmt.Sprintf("the policy calls %s, whose answer can change between evaluations", b.Name)
				}
			}
			return why != ""
		})
	}
	return why
}

// readsRequestID reports whether a reference into input may read input.request.id: it
// names it, or stops above it (input, input.request), or picks a key it cannot know
// before evaluation on the way.
func readsRequestID(r ast.Ref) bool {
	want := []string{"request", "id"}
	for i, w := range want {
		if len(r) <= i+1 {
			return true // the whole input or the whole request
		}
		s, ok := r[i+1].Value.(ast.String)
		if !ok {
			return true // input[x], input.request[x]
		}
		if string(s) != w {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
