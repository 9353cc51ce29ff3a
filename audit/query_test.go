package audit

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// variedRecord returns record i of a mix of kinds, principals, decisions, rules and
// commands.
func variedRecord(i int) Record {
	principals := []string{"ci-agent", "dev-bot", "ops", "auditor-x"}
	cmds := []string{"git status", "curl https://example.com/x", "rm -rf build", "make test", "docker build .", "ls -la src",
		"echo Café—Bar ÉCOLE naïve", "grep -r 日本語 docs"}
	cmd := cmds[i%len(cmds)]
	r := Record{
		Principal: Principal{principals[i%len(principals)], "agent"},
		RequestID: fmt.Sprintf("req-%05d", i),
		Input:     json.RawMessage(fmt.Sprintf(`{"request":{"raw":%q,"cwd":"/srv/ws"},"n":%d}`, cmd, i)),
		Revision:  "rev-1",
	}
	switch i % 7 {
	case 0, 1, 2:
		r.Kind, r.Decision = KindDecision, "allow"
	case 3:
		r.Kind, r.Decision = KindDecision, "deny"
		r.Reasons = []Reason{{Rule: fmt.Sprintf("forbidden.rule_%d", i%5), Message: "refused " + cmd}}
	case 4:
		r.Kind, r.Decision = KindDecision, "ask"
		r.Reasons = []Reason{{Rule: "ask.network", Message: "needs approval"}, {Rule: fmt.Sprintf("forbidden.rule_%d", i%5), Message: "x"}}
	case 5:
		r.Kind, r.DecisionID = KindExecution, "01J00000000000000000000000"
		r.Execution = &Execution{ExitCode: i % 3, DurationMS: int64(i)}
	case 6:
		r.Kind = KindAuthFailure
		r.Input = nil
		r.Detail = json.RawMessage(`{"reason":"unknown token"}`)
	}
	return r
}

// refMatch is the reference semantics of Query filters.
func refMatch(r Record, q Query) bool {
	if !q.Since.IsZero() && r.Time.Before(q.Since) || !q.Until.IsZero() && !r.Time.Before(q.Until) {
		return false
	}
	if q.Principal != "" && r.Principal.Name != q.Principal || q.Decision != "" && r.Decision != q.Decision || q.Kind != "" && r.Kind != q.Kind {
		return false
	}
	if q.Rule != "" && !slices.ContainsFunc(r.Reasons, func(x Reason) bool { return x.Rule == q.Rule }) {
		return false
	}
	if q.Text == "" {
		return true
	}
	strs := []string{r.Principal.Name, r.Principal.Role, r.RequestID, r.DecisionID, string(r.Kind), r.Decision, r.Revision}
	for _, x := range r.Reasons {
		strs = append(strs, x.Rule, x.Message)
	}
	if r.Execution != nil {
		strs = append(strs, r.Execution.Error)
	}
	for _, doc := range []json.RawMessage{r.Input, r.Detail} {
		if len(doc) > 0 {
			v, _ := parseJSON(doc, maxJSONDepth)
			strs = stringLeaves(&v, strs)
		}
	}
	var words []string
	for _, s := range strs {
		words = appendWords(words, s)
	}
	for _, w := range queryWords(q.Text) {
		if !slices.ContainsFunc(words, func(x string) bool {
			return x == w.w || w.prefix && strings.HasPrefix(x, w.w)
		}) {
			return false
		}
	}
	return true
}

func TestQueryMatchesReference(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var clock atomic.Int64
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openTest(t, t.TempDir(), Options{Now: func() time.Time { return base.Add(time.Duration(clock.Add(1)) * time.Second) }})
	defer s.Close(ctx)
	s.indexPaused.Store(true)
	var all []Record
	add := func(from, to int) {
		for i := from; i < to; i++ {
			r, err := s.Append(ctx, variedRecord(i))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
	}
	queries := []Query{
		{}, {Limit: 7}, {Principal: "ops"}, {Principal: "nobody"}, {Decision: "deny"}, {Kind: KindExecution},
		{Kind: KindAuthFailure, Limit: 3}, {Rule: "forbidden.rule_3"}, {Rule: "ask.network", Principal: "dev-bot"},
		{Text: "curl"}, {Text: "rm -rf"}, {Text: "BUILD"}, {Text: "refused mak*"}, {Text: "refused mak"}, {Text: "unknown token"},
		{Text: "ex* htt*"}, {Text: "doc* BUIL*"},
		{Text: "req 00042"}, {Text: "zzz-not-there"}, {Text: "curl", Rule: "forbidden.rule_1"},
		{Text: "école"}, {Text: "BAR"}, {Text: "café"}, {Text: "NAÏ*"}, {Text: "日本語"}, {Text: "refused", Rule: "ask.network"},
		{Text: "appr*", Rule: "ask.network"},
		{Principal: "ops", Decision: "deny"}, {Kind: KindExecution, Principal: "dev-bot", Limit: 3},
		{Principal: "ci-agent", Decision: "allow", Kind: KindDecision, Limit: 4}, {Decision: "ask", Kind: KindExecution},
		{Since: base.Add(50 * time.Second)}, {Until: base.Add(30 * time.Second)},
		{Since: base.Add(20 * time.Second), Until: base.Add(90 * time.Second), Decision: "allow", Limit: 5},
		{Since: base.Add(20 * time.Second), Until: base.Add(90 * time.Second), Text: "git", Limit: 4},
	}
	check := func(state string) {
		for _, q := range queries {
			var want []Record
			for i := len(all) - 1; i >= 0; i-- {
				if refMatch(all[i], q) {
					want = append(want, all[i])
				}
			}
			// Follow every page.
			var got []Record
			qq := q
			for pages := 0; ; pages++ {
				page, err := s.Query(ctx, qq)
				if err != nil {
					t.Fatalf("%s: Query(%+v) = %v", state, qq, err)
				}
				limit := max(q.Limit, 0)
				if limit == 0 {
					limit = DefaultLimit
				}
				if len(page.Records) > limit {
					t.Fatalf("%s: Query(%+v) returned %d records, limit %d", state, qq, len(page.Records), limit)
				}
				got = append(got, page.Records...)
				if page.NextCursor == "" || pages > 1000 {
					break
				}
				qq.Cursor = page.NextCursor
			}
			if diff := cmp.Diff(seqs(want), seqs(got)); diff != "" {
				t.Errorf("%s: Query(%+v) seqs (-want +got):\n%s", state, q, diff)
			}
			if slices.Contains([]string{"école", "BAR", "NAÏ*", "日本語", "curl", "refused mak*", "ex* htt*"}, q.Text) && len(want) == 0 {
				t.Errorf("Query(%+v) matches nothing: the test data lost its point", q)
			}
		}
	}
	add(0, 120)
	if n := indexedUpTo(t, s); n != 0 {
		t.Fatalf("index_seq = %d before flushIndex, want 0", n)
	}
	check("not indexed yet")
	if err := s.flushIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if n := indexedUpTo(t, s); n != 120 {
		t.Fatalf("index_seq = %d after flushIndex, want 120", n)
	}
	check("indexed")
	add(120, 200)
	check("indexed with a tail")
}

func seqs(rs []Record) []int64 {
	out := []int64{}
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

func TestQueryErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	for _, q := range []Query{
		{Limit: -1}, {Limit: MaxLimit + 1}, {Cursor: "nope"}, {Cursor: "c1.!!"}, {Cursor: encodeCursor(1)[:3] + "LTU"},
		{Kind: "bogus"}, {Text: "-- ++"}, {Principal: "bad\xff"}, {Text: "a\x00b"},
	} {
		if _, err := s.Query(ctx, q); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("Query(%+v) = %v, want ErrInvalidQuery", q, err)
		}
	}
	if _, err := s.Export(ctx, &bytes.Buffer{}, Query{Cursor: encodeCursor(3)}); !errors.Is(err, ErrInvalidQuery) {
		t.Errorf("Export(with a cursor) = %v, want ErrInvalidQuery", err)
	}
	page, err := s.Query(ctx, Query{})
	if err != nil || page.Records == nil || len(page.Records) != 0 || page.NextCursor != "" {
		t.Errorf("Query(empty store) = %+v, %v; want an empty, non-nil page", page, err)
	}
}

func TestExportFields(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	var recs []Record
	for i := range 7 {
		r, err := s.Append(ctx, variedRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	var out bytes.Buffer
	if n, err := s.Export(ctx, &out, Query{}); err != nil || n != 7 {
		t.Fatalf("Export() = %d, %v", n, err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("Export() wrote %d lines, want 7", len(lines))
	}
	for i, l := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		r := recs[i] // oldest first
		wantDecisionID := r.DecisionID
		if r.Kind == KindDecision {
			wantDecisionID = r.ID
		}
		if got["decision_id"] != nil && got["decision_id"] != wantDecisionID || got["decision_id"] == nil && wantDecisionID != "" {
			t.Errorf("line %d decision_id = %v, want %q", i, got["decision_id"], wantDecisionID)
		}
		if got["timestamp"] != formatTime(r.Time.UnixNano()) || got["hash"] != r.Hash || got["prev_hash"] != r.PrevHash || got["kind"] != string(r.Kind) {
			t.Errorf("line %d = %s; does not carry record %d", i, l, r.Seq)
		}
		if r.Decision != "" {
			res, _ := got["result"].(map[string]any)
			if res["action"] != r.Decision {
				t.Errorf("line %d result = %v, want action %q", i, got["result"], r.Decision)
			}
		}
		if b, _ := got["bundles"].(map[string]any); b["cmdgate"].(map[string]any)["revision"] != "rev-1" {
			t.Errorf("line %d bundles = %v", i, got["bundles"])
		}
		if _, err := time.Parse(time.RFC3339Nano, got["timestamp"].(string)); err != nil {
			t.Errorf("line %d timestamp: %v", i, err)
		}
	}
	// Filters and limit apply; order is oldest first.
	out.Reset()
	if n, err := s.Export(ctx, &out, Query{Decision: "allow", Limit: 2}); err != nil || n != 2 {
		t.Fatalf("Export(allow, limit 2) = %d, %v", n, err)
	}
	if !strings.Contains(out.String(), `"id":"`+recs[0].ID+`"`) || !strings.Contains(out.String(), `"id":"`+recs[1].ID+`"`) {
		t.Errorf("Export(allow, limit 2) = %s; want records 1 and 2", out.String())
	}
}

func indexedUpTo(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	if err := s.sdb.QueryRowContext(t.Context(), `SELECT value FROM meta WHERE key = 'index_seq'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRuleAndTextPlansAgree runs queries with both a rule and text through both plans
// (driven by record_rules, driven by records_fts) and compares them.
func TestRuleAndTextPlansAgree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	for i := range 300 {
		if _, err := s.Append(ctx, variedRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flushIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Query{{Rule: "forbidden.rule_1", Text: "curl"}, {Rule: "ask.network", Text: "refused"}, {Rule: "ask.network", Text: "appr*"}, {Rule: "forbidden.rule_3", Text: "nothing"}} {
		var results [2][]int64
		for i, byRule := range []bool{false, true} {
			recs := runPlan(t, s, q, func(_ *sql.Tx, p *plan) { p.byRule = byRule })
			for _, r := range recs {
				if !refMatch(r, q) {
					t.Errorf("%+v (by rule %v) returned record %d, which does not match", q, byRule, r.Seq)
				}
			}
			results[i] = seqs(recs)
		}
		if diff := cmp.Diff(results[0], results[1]); diff != "" {
			t.Errorf("%+v: plans differ (-by text +by rule):\n%s", q, diff)
		}
	}
}

// TestFieldPlansAgree runs queries on several of principal, decision and kind driven by
// each of them in turn through record_fields, over indexed records and a tail, and checks
// each plan against the reference and that the indexed part searches record_fields
// rather than scanning the chain.
func TestFieldPlansAgree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	var all []Record
	add := func(from, to int) {
		for i := from; i < to; i++ {
			r, err := s.Append(ctx, variedRecord(i))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
	}
	add(0, 300)
	if err := s.flushIndex(ctx); err != nil {
		t.Fatal(err)
	}
	s.indexPaused.Store(true)
	add(300, 340)
	for _, q := range []Query{{Principal: "ops", Decision: "deny"}, {Principal: "dev-bot", Kind: KindExecution},
		{Principal: "ci-agent", Decision: "allow", Kind: KindDecision}, {Principal: "nobody", Decision: "allow"}} {
		var want []int64
		for i := len(all) - 1; i >= 0; i-- {
			if refMatch(all[i], q) {
				want = append(want, all[i].Seq)
			}
		}
		if len(want) == 0 && q.Principal != "nobody" {
			t.Fatalf("%+v matches nothing: the test data lost its point", q)
		}
		nfields := 0
		for _, v := range []string{q.Principal, q.Decision, string(q.Kind)} {
			if v != "" {
				nfields++
			}
		}
		for field := range nfields {
			var by string
			got := seqs(runPlan(t, s, q, func(tx *sql.Tx, p *plan) {
				p.field, by = field, p.fields[field].col
				checkFieldPlan(t, tx, q, p)
			}))
			if diff := cmp.Diff(append([]int64{}, want...), got); diff != "" {
				t.Errorf("%+v driven by %s (-want +got):\n%s", q, by, diff)
			}
		}
	}
}

// runPlan plans q in a read transaction of s, lets adjust change the plan, and returns
// the records the plan selects, newest first.
func runPlan(t *testing.T, s *Store, q Query, adjust func(*sql.Tx, *plan)) []Record {
	t.Helper()
	ctx := t.Context()
	tx, err := s.sdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	p, err := s.plan(ctx, tx, q)
	if err != nil {
		t.Fatal(err)
	}
	adjust(tx, p)
	got := []Record{}
	if err := s.each(ctx, tx, p, true, 0, func(r Record) (bool, error) {
		got = append(got, r)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// checkFieldPlan checks that the indexed part of p, driven by a field, searches
// record_fields by its key rather than scanning the chain.
func checkFieldPlan(t *testing.T, tx *sql.Tx, q Query, p *plan) {
	t.Helper()
	stmts, args := p.selects(true, 0)
	if len(stmts) != 2 {
		t.Fatalf("%+v: %d statements, want the tail's and the indexed part's", q, len(stmts))
	}
	var plan []string
	rows, err := tx.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+stmts[1], args[1]...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if joined := strings.Join(plan, "; "); !strings.Contains(joined, "SEARCH rf USING PRIMARY KEY (field=? AND value=? AND seq>? AND seq<?)") || strings.Contains(joined, "SCAN r") {
		t.Errorf("%+v by %s: the indexed part's plan is %q, want a search of record_fields", q, p.fields[p.field].col, joined)
	}
}

// TestSearchIndexUpgrades opens a store of the earlier layout (principal, decision and
// kind indexed in audit.db, an index of version 1 without record_fields), then one whose
// index an earlier version wrote into after the upgrade: a read-only open answers by
// scanning, a read-write open drops the chain's indexes and fills record_fields for
// exactly what the index holds, without indexing it all again.
func TestSearchIndexUpgrades(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	var all []Record
	for i := range 150 {
		r, err := s.Append(ctx, variedRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	execSQL(t, filepath.Join(dir, DBFile),
		`CREATE INDEX records_principal ON records(principal)`,
		`CREATE INDEX records_decision ON records(decision)`,
		`CREATE INDEX records_kind ON records(kind)`)
	index := filepath.Join(dir, IndexFile)
	execSQL(t, index, `DROP TABLE record_fields`, `DELETE FROM meta WHERE key = 'fields_seq'`, `PRAGMA user_version = 1`)

	queries := []Query{{Principal: "ops"}, {Decision: "deny", Kind: KindDecision}, {Kind: KindAuthFailure, Principal: "auditor-x"}}
	check := func(state string, ro bool) {
		s := openTest(t, dir, Options{ReadOnly: ro})
		defer s.Close(ctx)
		for _, q := range queries {
			var want []int64
			for i := len(all) - 1; i >= 0; i-- {
				if refMatch(all[i], q) {
					want = append(want, all[i].Seq)
				}
			}
			q.Limit = MaxLimit
			page, err := s.Query(ctx, q)
			if err != nil {
				t.Fatalf("%s: Query(%+v) = %v", state, q, err)
			}
			if len(want) == 0 {
				t.Fatalf("%+v matches nothing: the test data lost its point", q)
			}
			if diff := cmp.Diff(want, seqs(page.Records)); diff != "" {
				t.Errorf("%s: Query(%+v) (-want +got):\n%s", state, q, diff)
			}
		}
	}
	check("read-only, earlier layout", true)

	count := func(path, q string) (n int) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	// Every record has a principal and a kind; all but the authentication failures a
	// decision.
	want := 0
	for _, r := range all {
		want += 2
		if r.Decision != "" {
			want++
		}
	}
	upgraded := func(state string) {
		check(state+", read-write", false)
		if n := count(filepath.Join(dir, DBFile), `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name LIKE 'records_%'`); n != 0 {
			t.Errorf("%s: audit.db still has %d of its indexes of principal, decision and kind", state, n)
		}
		if v := count(index, `PRAGMA user_version`); v != indexVersion {
			t.Errorf("%s: search index version %d, want %d", state, v, indexVersion)
		}
		if n := count(index, `SELECT count(*) FROM record_fields`); n != want {
			t.Errorf("%s: record_fields holds %d rows, want %d", state, n, want)
		}
		if n := count(index, `SELECT count(*) FROM meta WHERE key = 'fields_seq' AND value = 150`); n != 1 {
			t.Errorf("%s: meta.fields_seq is not 150", state)
		}
		check(state+", then read-only", true)
	}
	upgraded("version 1")

	// A cmdgate of the earlier version indexes records into the index without their
	// fields, and its watermark update sets fields_seq to the hash.
	execSQL(t, index, `DELETE FROM record_fields WHERE seq > 100`,
		`UPDATE meta SET value = (SELECT value FROM meta WHERE key = 'index_hash') WHERE key = 'fields_seq'`)
	check("indexed by an earlier version, read-only", true)
	upgraded("indexed by an earlier version")
}

// TestSearchIndexRecovers: the search index is derived data. Missing, damaged or
// belonging to another chain, it is rebuilt by a read-write open and ignored by a
// read-only one, and queries give the same answers throughout.
func TestSearchIndexRecovers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	seed := func(t *testing.T, n int) string {
		dir := t.TempDir()
		s := openTest(t, dir, Options{})
		for i := range n {
			if _, err := s.Append(ctx, variedRecord(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	queries := []Query{{Text: "curl"}, {Rule: "forbidden.rule_3"}, {Rule: "ask.network", Text: "docker"}, {Principal: "ops"}}
	answers := func(t *testing.T, dir string, ro bool) [][]int64 {
		s := openTest(t, dir, Options{ReadOnly: ro})
		defer s.Close(ctx)
		var out [][]int64
		for _, q := range queries {
			q.Limit = MaxLimit
			page, err := s.Query(ctx, q)
			if err != nil {
				t.Fatalf("Query(%+v) = %v", q, err)
			}
			out = append(out, seqs(page.Records))
		}
		return out
	}
	dir := seed(t, 150)
	want := answers(t, dir, true)
	if len(want[0]) == 0 || len(want[1]) == 0 {
		t.Fatalf("test data lost its point: %v", want)
	}
	other := seed(t, 40)
	index := filepath.Join(dir, IndexFile)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T)
	}{
		{"missing", func(t *testing.T) { os.Remove(index) }},
		{"garbage", func(t *testing.T) { os.WriteFile(index, bytes.Repeat([]byte("not an index "), 500), 0o600) }},
		{"another chain's", func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(other, IndexFile))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(index, data, 0o600)
		}},
	} {
		tc.damage(t)
		if got := answers(t, dir, true); !cmp.Equal(want, got) {
			t.Errorf("%s index, read-only: %v, want %v", tc.name, got, want)
		}
		if got := answers(t, dir, false); !cmp.Equal(want, got) {
			t.Errorf("%s index, read-write: %v, want %v", tc.name, got, want)
		}
		s := openTest(t, dir, Options{})
		if err := s.flushIndex(ctx); err != nil {
			t.Fatal(err)
		}
		if n := indexedUpTo(t, s); n != 150 {
			t.Errorf("%s index: index_seq = %d after a read-write open, want 150", tc.name, n)
		}
		s.Close(ctx)
	}
}

func TestQueryWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]queryWord{
		"rm -rf":       {{"rm", false}, {"rf", false}},
		"kube* GET":    {{"kube", true}, {"get", false}},
		"a*b c*":       {{"a", true}, {"b", false}, {"c", true}},
		"ÉCOLE* naïve": {{"école", true}, {"naïve", false}},
		"x-ray* x":     {{"x", false}, {"ray", true}, {"x", false}},
		"*lead only*":  {{"lead", false}, {"only", true}},
	} {
		if diff := cmp.Diff(want, queryWords(in), cmp.AllowUnexported(queryWord{})); diff != "" {
			t.Errorf("queryWords(%q) (-want +got):\n%s", in, diff)
		}
	}
}
