package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range fixtureDirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// BenchmarkAppend measures durable appends (each Append returns after its fsync'd
// commit) with 1, 8 and 64 concurrent appenders; records/s is the figure to compare.
// wal-KB/record is the WAL's size at the end over the records appended: it falls as
// the run grows when checkpoints let the WAL start over, and stays put (a few KB per
// record) when the WAL only grows.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) { benchAppend(b, c, Options{}) })
	}
}

// BenchmarkAppendSealed measures what timed checkpoints cost appends: 8 concurrent
// appenders with them off (the peer), at the default interval (5 s) and at 10 ms (a
// checkpoint signed, committed and published a hundred times a second).
func BenchmarkAppendSealed(b *testing.B) {
	for _, iv := range []struct {
		name string
		d    time.Duration
	}{{"off", -1}, {"5s", 5 * time.Second}, {"10ms", 10 * time.Millisecond}} {
		b.Run(iv.name, func(b *testing.B) {
			benchAppend(b, 8, Options{CheckpointInterval: iv.d, Witness: b.TempDir() + "/witness.jsonl"})
		})
	}
}

func benchAppend(b *testing.B, c int, opts Options) {
	dir := b.TempDir()
	s := openTest(b, dir, opts)
	defer s.Close(context.Background())
	recs := make([]Record, 256)
	for i := range recs {
		recs[i] = sampleDecision(i)
	}
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, err := s.Append(ctx, recs[i%int64(len(recs))]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if fi, err := os.Stat(filepath.Join(dir, DBFile+"-wal")); err == nil {
		b.ReportMetric(float64(fi.Size())/1024/float64(b.N), "wal-KB/record")
	}
}

// BenchmarkVerify walks a chain of 100,000 records (realistic ~1.4 KB policy inputs)
// per op.
func BenchmarkVerify(b *testing.B) {
	const n = 100_000
	s := fixture(b, "verify", n, func(i int) Record { return sampleDecision(i) })
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		res, err := s.Verify(ctx, VerifyOptions{})
		if err != nil || !res.OK || res.Records != n {
			b.Fatalf("Verify() = %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkQuery runs filtered, limited queries (one page of 50, newest first) over a
// store of 1,000,000 records, plus 5,000 newer ones not yet in the search index.
func BenchmarkQuery(b *testing.B) {
	const n = 1_000_000
	s := fixture(b, "query", n, queryRecord)
	base := time.Unix(0, fixtureBase)
	ctx := context.Background()
	page, err := s.Query(ctx, Query{Principal: "agent-7", Limit: 50})
	if err != nil {
		b.Fatal(err)
	}
	queries := []struct {
		name string
		q    Query
	}{
		{"latest", Query{}},
		{"principal", Query{Principal: "agent-7"}},
		{"principal_rare", Query{Principal: "root-console"}},
		{"principal_page2", Query{Principal: "agent-7", Cursor: page.NextCursor}},
		{"decision_deny", Query{Decision: "deny"}},
		{"decision_ask", Query{Decision: "ask"}},
		{"kind_auth_failure", Query{Kind: KindAuthFailure}},
		{"rule", Query{Rule: "forbidden.rule_42"}},
		{"rule_rare", Query{Rule: "forbidden.rare"}},
		{"rule_and_principal", Query{Rule: "forbidden.rule_42", Principal: "agent-5"}},
		{"text_common", Query{Text: "git status"}},
		{"text_rare", Query{Text: "terraform"}},
		{"text_prefix", Query{Text: "kubect*"}},
		{"text_prefix_rare", Query{Text: "terra*"}},
		// Bounded before the records the index does not hold yet, so that the index
		// answers, not the scan of the newest records.
		{"text_common_indexed", Query{Text: "curl", Until: base.Add(900_000 * time.Second)}},
		{"text_two_words_indexed", Query{Text: "kubectl pods", Until: base.Add(900_000 * time.Second)}},
		{"text_prefix_indexed", Query{Text: "kube*", Until: base.Add(900_000 * time.Second)}},
		{"text_deep_page", Query{Text: "docker", Cursor: encodeCursor(300_000)}},
		{"time_window", Query{Since: base.Add(400_000 * time.Second), Until: base.Add(403_600 * time.Second)}},
		{"time_window_principal", Query{Since: base.Add(400_000 * time.Second), Until: base.Add(500_000 * time.Second), Principal: "agent-3"}},
		{"principal_decision", Query{Principal: "agent-11", Decision: "deny"}},
		{"text_rule", Query{Text: "curl", Rule: "forbidden.rule_7"}},
		{"nothing_matches", Query{Principal: "nobody"}},
	}
	for _, tc := range queries {
		b.Run(tc.name, func(b *testing.B) {
			q := tc.q
			q.Limit = 50
			page, err := s.Query(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			if tc.name != "nothing_matches" && len(page.Records) == 0 {
				b.Fatalf("Query(%+v) found nothing", q)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := s.Query(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const fixtureBase = int64(1_900_000_000) * int64(time.Second)

var (
	fixtureMu    sync.Mutex
	fixtureDirs  = map[string]string{}
	fixtureStore = map[string]*Store{}
)

// fixture builds (once per test process) a store of n records from gen, one second of
// record time apart, through bulkLoad.
func fixture(b *testing.B, name string, n int, gen func(int) Record) *Store {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if s := fixtureStore[name]; s != nil {
		return s
	}
	dir, err := os.MkdirTemp("", "cmdgate-audit-bench-")
	if err != nil {
		b.Fatal(err)
	}
	fixtureDirs[name] = dir
	var clock atomic.Int64
	s := openTest(b, dir, Options{Now: func() time.Time { return time.Unix(0, fixtureBase+clock.Add(1)*int64(time.Second)) }})
	start := time.Now()
	bulkLoad(b, s, 0, n, gen)
	if name == "query" {
		// Newer records that the search index does not hold yet.
		s.indexPaused.Store(true)
		bulkLoadNoIndex(b, s, n, n+5000, gen)
	}
	b.Logf("fixture %s: %d records in %v", name, n, time.Since(start).Round(time.Second))
	fixtureStore[name] = s
	return s
}

// bulkLoad appends records gen(from)..gen(to-1) through a writer of its own, in large
// transactions without fsync, and indexes them: the fixture path of the benchmarks. The
// chain code is the one Append uses.
func bulkLoad(b *testing.B, s *Store, from, to int, gen func(int) Record) {
	b.Helper()
	bulkLoadNoIndex(b, s, from, to, gen)
	if err := s.flushIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func bulkLoadNoIndex(b *testing.B, s *Store, from, to int, gen func(int) Record) {
	b.Helper()
	w := bulkWriter(b, s)
	defer w.close()
	load(b, s, w, from, to, gen)
}

func bulkWriter(b *testing.B, s *Store) *writer {
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = OFF"); err != nil {
		b.Fatal(err)
	}
	w, err := newWriter(ctx, s, conn)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

func load(b *testing.B, s *Store, w *writer, from, to int, gen func(int) Record) {
	ctx := context.Background()
	const chunk = 4096
	for start := from; start < to; start += chunk {
		reqs := make([]*appendReq, min(chunk, to-start))
		var wg sync.WaitGroup
		for part := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := part; i < len(reqs); i += 2 {
					p, err := s.prepare(gen(start + i))
					if err != nil {
						panic(err)
					}
					reqs[i] = &appendReq{p: p, done: make(chan struct{})}
				}
			}()
		}
		wg.Wait()
		w.commit(ctx, reqs)
		if reqs[0].err != nil {
			b.Fatal(reqs[0].err)
		}
	}
}

// queryRecord is record i of the query fixture: 50 agents and a rare principal, 80%
// allow, 15% deny, 5% ask, 100 rules and a rare one, a mix of commands, 2% executions
// and 0.1% auth failures. Attributes come from independent bits of a hash of i.
func queryRecord(i int) Record {
	h := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	pick := func(shift, n int) int { return int((h >> shift) % uint64(n)) }
	cmds := []string{"git status", "make test", "go build ./...", "ls -la src", "curl -s https://example.com/api",
		"rm -rf build", "docker ps", "npm install", "kubectl get pods", "cat README.md"}
	cmd := cmds[pick(0, len(cmds))]
	if i%100_003 == 0 {
		cmd = "terraform apply"
	}
	principal := fmt.Sprintf("agent-%d", pick(8, 50))
	if i%99_991 == 0 {
		principal = "root-console"
	}
	r := Record{
		Kind:      KindDecision,
		Principal: Principal{principal, "agent"},
		RequestID: fmt.Sprintf("req-%07d", i),
		Input: json.RawMessage(fmt.Sprintf(`{"principal":{"name":%q,"role":"agent"},"request":{"id":"req-%07d","raw":%q,"cwd":"/srv/ws/app"},"commands":[{"index":0,"argv":%q}]}`,
			principal, i, cmd, cmd)),
		Revision: "rev-3",
	}
	switch d := pick(16, 20); {
	case d < 16:
		r.Decision = "allow"
	case d < 19:
		r.Decision = "deny"
		r.Reasons = []Reason{{Rule: fmt.Sprintf("forbidden.rule_%d", pick(24, 100)), Message: "refused: " + cmd}}
	default:
		r.Decision = "ask"
		r.Reasons = []Reason{{Rule: "ask.network", Message: "needs approval: " + cmd}}
	}
	switch k := pick(32, 1000); {
	case k < 20:
		r.Kind, r.Decision, r.Reasons, r.DecisionID = KindExecution, "", nil, "01J00000000000000000000000"
		r.Execution = &Execution{ExitCode: pick(40, 3), DurationMS: int64(pick(42, 1000))}
	case k == 20:
		r.Kind, r.Decision, r.Reasons, r.Input = KindAuthFailure, "", nil, nil
		r.Detail = json.RawMessage(`{"reason":"unknown token"}`)
	}
	if i%77_777 == 0 {
		r.Kind, r.Decision, r.Execution, r.Detail = KindDecision, "deny", nil, nil
		r.Reasons = []Reason{{Rule: "forbidden.rare", Message: "refused: " + cmd}}
	}
	return r
}
