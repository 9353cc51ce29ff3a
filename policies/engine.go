package policies

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/cmdgate/cmdgate/parse"
)

// decisionQuery is the entry point of the bundle contract.
const decisionQuery = "data.cmdgate.decision"

// precomputed are documents that depend on data only (the lists and the
// configuration): the engine evaluates each query once when it loads a bundle and
// stores the result at path, where the rules read it instead of recomputing it per
// request. A bundle without the rule simply gets nothing stored.
var precomputed = []struct {
	query string
	path  []string
}{
	{"data.cmdgate.allowlist.computed", []string{"cmdgate", "effective"}},
	{"data.cmdgate.lib.computed_index", []string{"cmdgate", "index"}},
	{"data.cmdgate.lib.computed_routes", []string{"cmdgate", "routes"}},
}

// Engine evaluates a policy bundle. It loads and compiles the bundle once, prepares the
// decision query once, and evaluates it per request. It is safe for concurrent use;
// Reload swaps in another bundle or configuration atomically.
type Engine struct {
	state atomic.Pointer[state]

	grantsMu sync.Mutex     // SetGrants and Reload, one at a time
	grants   map[string]any // data.cmdgate.grants as last set; nil: none
}

// state is one loaded bundle with one configuration: everything Decide needs.
type state struct {
	query     rego.PreparedEvalQuery
	revision  string
	source    string
	files     []File
	config    Config
	effective Allowlist
	cache     *decisionCache // nil when off
	cacheSize int
	cacheWhy  string  // why the cache is off for this bundle, "" when it is on or not asked for
	routes    *routes // the bundle's routing of commands to its checks; nil: none
	store     storage.Store
	// gen counts the changes of the grants: a decision evaluated across a change is
	// not cached.
	gen atomic.Uint64
}

// Option configures New and Reload.
type Option func(*options)

type options struct {
	fsys    fs.FS
	root    string
	source  string
	display string
	config  Config
	cache   int
}

// WithDir loads the bundle from a directory instead of the embedded default bundle.
func WithDir(dir string) Option {
	return func(o *options) {
		o.fsys, o.root, o.source, o.display = os.DirFS(dir), ".", dir, filepath.ToSlash(dir)
	}
}

// WithFS loads the bundle under root in fsys.
func WithFS(fsys fs.FS, root string) Option {
	return func(o *options) {
		o.fsys, o.root, o.source, o.display = fsys, root, root, root
	}
}

// WithConfig sets the policy configuration (the default is Config{}).
func WithConfig(cfg Config) Option {
	return func(o *options) { o.config = cfg }
}

// WithDecisionCache keeps the decisions of the last size distinct input documents
// (request ids aside) and answers a repeated document from there instead of
// evaluating the policy again. The cache stays off, whatever the size, for a bundle
// whose decisions could differ for the same input: see Engine.DecisionCache. 0, the
// default, turns it off.
func WithDecisionCache(size int) Option {
	return func(o *options) { o.cache = size }
}

func buildOptions(opts []Option) options {
	o := options{fsys: embedded, root: embeddedRoot, source: "embedded", display: "policies/bundle"}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// New loads, validates and compiles a bundle (the embedded default bundle unless
// WithDir or WithFS says otherwise) with a configuration and prepares its decision
// query. Compile errors come back as a *BundleError naming file and line; an invalid
// configuration as a *ConfigError.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	s, err := load(ctx, buildOptions(opts), nil)
	if err != nil {
		return nil, err
	}
	e := &Engine{}
	e.state.Store(s)
	return e, nil
}

// Reload loads another bundle or configuration and swaps it in once it is ready.
// On error the engine keeps deciding with what it had.
func (e *Engine) Reload(ctx context.Context, opts ...Option) error {
	e.grantsMu.Lock()
	defer e.grantsMu.Unlock()
	s, err := load(ctx, buildOptions(opts), e.grants)
	if err != nil {
		return err
	}
	e.state.Store(s)
	return nil
}

func load(ctx context.Context, o options, grants map[string]any) (*state, error) {
	if err := o.config.Validate(); err != nil {
		return nil, err
	}
	if o.cache < 0 {
		return nil, fmt.Errorf("decision cache size %d: want 0 (off) or more", o.cache)
	}
	b, err := loadBundle(o.fsys, o.root, o.source, o.display)
	if err != nil {
		return nil, err
	}
	data, eff, err := prepareData(ctx, b, o.config)
	if err != nil {
		return nil, err
	}
	if grants != nil {
		if err := setPath(data, []string{"cmdgate", "grants"}, grants); err != nil {
			return nil, fmt.Errorf("policy bundle %s: %w", b.source, err)
		}
	}
	rt, err := routesOf(data)
	if err != nil {
		return nil, fmt.Errorf("policy bundle %s: %w", b.source, err)
	}
	store := newStore(data)
	pq, err := rego.New(
		rego.Query(decisionQuery),
		rego.Compiler(b.compiler),
		rego.Store(store),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy bundle %s: prepare %s: %w", b.source, decisionQuery, err)
	}
	s := &state{
		store:    store,
		query:    pq,
		revision: revision(b.files, o.config),
		source:   b.source,
		files:    b.files,
		config:   o.config.Effective(),
		routes:   rt,
	}
	if eff != nil {
		s.effective = allowlistFrom(eff)
	}
	if o.cache > 0 {
		if s.cacheWhy = uncacheable(b.compiler); s.cacheWhy == "" {
			s.cache, s.cacheSize = newDecisionCache(o.cache), o.cache
		}
	}
	return s, nil
}

// prepareData builds the data document of a loaded bundle for a configuration: the
// bundle's data files, data.cmdgate.config, data.cmdgate.checked_keys and the
// precomputed documents. It also returns the effective allowlist (nil when the bundle
// computes none).
func prepareData(ctx context.Context, b *bundle, cfg Config) (data, effective map[string]any, err error) {
	data = b.data
	if data == nil {
		data = map[string]any{}
	}
	if err := setPath(data, []string{"cmdgate", "config"}, cfg.document()); err != nil {
		return nil, nil, fmt.Errorf("policy bundle %s: %w", b.source, err)
	}
	if keys, ok := checkedKeys(b.modules); ok {
		if err := setPath(data, []string{"cmdgate", "checked_keys"}, keys); err != nil {
			return nil, nil, fmt.Errorf("policy bundle %s: %w", b.source, err)
		}
	}
	// Each precomputed document may read the ones before it.
	for i, p := range precomputed {
		v, err := evalOnce(ctx, b.compiler, data, p.query)
		if err != nil {
			return nil, nil, fmt.Errorf("policy bundle %s: compute %s: %w", b.source, p.query, err)
		}
		if v == nil {
			continue
		}
		if i == 0 {
			effective = v
		}
		if err := setPath(data, p.path, v); err != nil {
			return nil, nil, fmt.Errorf("policy bundle %s: %w", b.source, err)
		}
	}
	return data, effective, nil
}

func newStore(data map[string]any) storage.Store {
	return inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
}

// evalOnce evaluates a data-only query of the bundle (nil when the bundle has no such
// rule or it is undefined). The result must be an object.
func evalOnce(ctx context.Context, c *ast.Compiler, data map[string]any, query string) (map[string]any, error) {
	if len(c.GetRulesExact(ast.MustParseRef(query))) == 0 {
		return nil, nil
	}
	rs, err := rego.New(
		rego.Query(query),
		rego.Compiler(c),
		rego.Store(newStore(data)),
	).Eval(ctx)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil
	}
	m, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %T, not an object", query, rs[0].Expressions[0].Value)
	}
	return m, nil
}

// setPath sets data[p0][p1]... = v, creating objects on the way.
func setPath(data map[string]any, p []string, v any) error {
	m := data
	for i, k := range p[:len(p)-1] {
		next, ok := m[k]
		if !ok {
			n := map[string]any{}
			m[k] = n
			m = n
			continue
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("data.%s is not an object", joinPath(p[:i+1]))
		}
		m = nm
	}
	m[p[len(p)-1]] = v
	return nil
}

func joinPath(p []string) string {
	out := ""
	for i, k := range p {
		if i > 0 {
			out += "."
		}
		out += k
	}
	return out
}

// Revision is the content hash of the bundle's files and the effective configuration
// (hex sha256): two engines with the same revision decide alike.
func (e *Engine) Revision() string { return e.state.Load().revision }

// Files returns the bundle's policy and data files, sorted by path.
func (e *Engine) Files() []File {
	return append([]File(nil), e.state.Load().files...)
}

// Config returns the effective configuration (defaults filled in).
func (e *Engine) Config() Config { return e.state.Load().config }

// Allowlist returns the effective allowlist by category.
func (e *Engine) Allowlist() Allowlist { return e.state.Load().effective }

// Snapshot is the loaded policy as one consistent view: every field comes from the
// same load, so a Reload between reads cannot pair one bundle's files with another's
// revision.
type Snapshot struct {
	Revision  string    // as Revision
	Source    string    // the bundle: a directory, or "embedded"
	Files     []File    // as Files
	Config    Config    // as Config
	Allowlist Allowlist // as Allowlist
	Prompt    string    // as Prompt
}

// Snapshot returns the loaded policy's revision, source, files, configuration,
// allowlist and prompt from one load.
func (e *Engine) Snapshot() Snapshot {
	s := e.state.Load()
	return Snapshot{
		Revision:  s.revision,
		Source:    s.source,
		Files:     append([]File(nil), s.files...),
		Config:    s.config,
		Allowlist: s.effective,
		Prompt:    promptText(s.effective, PromptEnv{}),
	}
}

// Decide evaluates the policy on a command document. It always returns a decision:
// when evaluation fails, the policy gives no decision, or the decision is malformed, the
// decision is a deny whose reason says why (rules engine.error, engine.undefined,
// engine.malformed) and the error is returned too.
//
// With a decision cache (WithDecisionCache), a document already decided under the
// same bundle and configuration gets the decision it got then, with Cached set.
func (e *Engine) Decide(ctx context.Context, doc *parse.Document) (Decision, error) {
	s := e.state.Load()
	if s.cache == nil || doc == nil {
		return e.decideIn(ctx, s, s.routes.input(doc))
	}
	k, err := cacheKey(doc)
	if err != nil {
		return e.decideIn(ctx, s, s.routes.input(doc))
	}
	return e.decideCached(ctx, s, doc, k)
}

// DecideKeyed is Decide with the document's cache key given by the caller, who knows
// it without encoding the document (the gateway remembers the documents it parsed by
// what it parsed them from). key must be a collision-resistant digest (SHA-256) of
// everything in doc but Request.ID: two documents with the same key must be equal but
// for their request ids. Keys given and keys Decide computes share the cache: both are
// SHA-256 digests, so they do not collide.
func (e *Engine) DecideKeyed(ctx context.Context, doc *parse.Document, key [sha256.Size]byte) (Decision, error) {
	s := e.state.Load()
	if s.cache == nil || doc == nil {
		return e.decideIn(ctx, s, s.routes.input(doc))
	}
	return e.decideCached(ctx, s, doc, key)
}

func (e *Engine) decideCached(ctx context.Context, s *state, doc *parse.Document, k [sha256.Size]byte) (Decision, error) {
	if d, ok := s.cache.get(k); ok {
		return d, nil
	}
	gen := s.gen.Load()
	d, err := e.decideIn(ctx, s, s.routes.input(doc))
	if err == nil && s.gen.Load() == gen {
		s.cache.add(k, d)
	}
	return d, err
}

// SetGrants replaces data.cmdgate.grants, the live grants by principal name, which
// the bundle may read to allow what a person approved for more than one request (the
// default bundle: granted/granted.rego). Each principal's grants are indexed by what a
// request must hold for them to apply (see indexGrants), so a lookup does not grow
// with their number. The decision cache is emptied: decisions
// after it see the new grants. The grants stay across Reload.
func (e *Engine) SetGrants(ctx context.Context, byPrincipal map[string][]Grant) error {
	raw, err := json.Marshal(indexGrants(normalGrants(byPrincipal)))
	if err != nil {
		return fmt.Errorf("encode grants: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("encode grants: %w", err)
	}
	e.grantsMu.Lock()
	defer e.grantsMu.Unlock()
	s := e.state.Load()
	err = storage.Txn(ctx, s.store, storage.WriteParams, func(txn storage.Transaction) error {
		return s.store.Write(ctx, txn, storage.AddOp, storage.Path{"cmdgate", "grants"}, doc)
	})
	if err != nil {
		return fmt.Errorf("set grants: %w", err)
	}
	s.gen.Add(1)
	if s.cache != nil {
		s.cache.lru.Purge()
	}
	e.grants = doc
	return nil
}

// DecisionCache reports the decision cache of the loaded bundle: its size (0 when it
// is off) and, when a size was asked for but the bundle cannot be cached, why not.
func (e *Engine) DecisionCache() (size int, why string) {
	s := e.state.Load()
	return s.cacheSize, s.cacheWhy
}

// DecideInput is Decide on a raw input document (any JSON-like value), for rule
// authors testing hand-written inputs.
func (e *Engine) DecideInput(ctx context.Context, input any) (Decision, error) {
	v, err := ast.InterfaceToValue(input)
	if err != nil {
		s := e.state.Load()
		return failClosed(s.revision, "engine.error", fmt.Errorf("convert input: %w", err))
	}
	return e.decideIn(ctx, e.state.Load(), v)
}

// noMetrics spares each evaluation the metrics it would otherwise collect and drop.
var noMetrics = metrics.NoOp()

func (e *Engine) decideIn(ctx context.Context, s *state, input ast.Value) (Decision, error) {
	rs, err := s.query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalMetrics(noMetrics))
	if err != nil {
		return failClosed(s.revision, "engine.error", fmt.Errorf("evaluate %s: %w", decisionQuery, err))
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return failClosed(s.revision, "engine.undefined", ErrUndefined)
	}
	d, err := decisionFrom(rs[0].Expressions[0].Value)
	if err != nil {
		return failClosed(s.revision, "engine.malformed", err)
	}
	d.Revision = s.revision
	return d, nil
}

func failClosed(rev, rule string, err error) (Decision, error) {
	return Decision{
		Action:   ActionDeny,
		Reasons:  []Reason{{Effect: ActionDeny, Rule: rule, Message: err.Error(), Command: -1}},
		Revision: rev,
	}, err
}

// decisionFrom checks a policy result against contract 2 and converts it. The action
// is raised to the strongest effect among the reasons (deny over ask over allow), so a
// policy that lists a deny reason never allows.
func decisionFrom(v any) (Decision, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Decision{}, fmt.Errorf("%w: decision is %T, not an object", ErrMalformed, v)
	}
	action, ok := m["action"].(string)
	if !ok || rank(action) < 0 {
		return Decision{}, fmt.Errorf("%w: action %v is not allow, ask or deny", ErrMalformed, m["action"])
	}
	d := Decision{Action: action, Reasons: []Reason{}}
	rawReasons, ok := m["reasons"].([]any)
	if m["reasons"] != nil && !ok {
		return Decision{}, fmt.Errorf("%w: reasons is %T, not an array", ErrMalformed, m["reasons"])
	}
	for i, rr := range rawReasons {
		r, err := reasonFrom(rr)
		if err != nil {
			return Decision{}, fmt.Errorf("%w: reasons[%d]: %w", ErrMalformed, i, err)
		}
		if r.Effect == "" {
			r.Effect = action
		}
		if rank(r.Effect) < 0 {
			return Decision{}, fmt.Errorf("%w: reasons[%d]: effect %q is not allow, ask or deny", ErrMalformed, i, r.Effect)
		}
		if rank(r.Effect) > rank(d.Action) {
			d.Action = r.Effect
		}
		d.Reasons = append(d.Reasons, r)
	}
	if gs, ok := m["grants"].([]any); ok && d.Action == ActionAllow {
		for _, g := range gs {
			if id, ok := g.(string); ok {
				d.Grants = append(d.Grants, id)
			}
		}
	}
	if sb, ok := m["sandbox"].(map[string]any); ok {
		if n, ok := sb["network"].(bool); ok {
			d.Sandbox.Network = n && d.Action != ActionDeny
		}
	}
	return d, nil
}

func reasonFrom(v any) (Reason, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Reason{}, fmt.Errorf("reason is %T, not an object", v)
	}
	rule, ok1 := m["rule"].(string)
	msg, ok2 := m["message"].(string)
	if !ok1 || !ok2 {
		return Reason{}, errors.New("reason needs string rule and message")
	}
	r := Reason{Rule: rule, Message: msg, Command: -1}
	if eff, ok := m["effect"]; ok {
		s, ok := eff.(string)
		if !ok {
			return Reason{}, fmt.Errorf("effect is %T, not a string", eff)
		}
		r.Effect = s
	}
	if c, ok := m["command"]; ok {
		n, err := toInt(c)
		if err != nil {
			return Reason{}, fmt.Errorf("command: %w", err)
		}
		r.Command = n
	}
	return r, nil
}

func toInt(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		if n != math.Trunc(n) || n < math.MinInt32 || n > math.MaxInt32 {
			return 0, fmt.Errorf("%v is not an integer", n)
		}
		return int(n), nil
	case interface{ Int64() (int64, error) }: // json.Number
		i, err := n.Int64()
		if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			return 0, fmt.Errorf("%v is not an integer", v)
		}
		return int(i), nil
	}
	return 0, fmt.Errorf("%T is not a number", v)
}

// rank orders actions: deny > ask > allow; -1 for anything else.
func rank(action string) int {
	switch action {
	case ActionAllow:
		return 0
	case ActionAsk:
		return 1
	case ActionDeny:
		return 2
	}
	return -1
}
