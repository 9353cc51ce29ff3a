package audit

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestAppendRefusesBadRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{MaxInputBytes: 4096})
	defer s.Close(ctx)
	ok := func(mod func(*Record)) Record {
		r := Record{Kind: KindDecision, Principal: Principal{"a", "agent"}, Input: json.RawMessage(`{"x":1}`), Decision: "allow"}
		mod(&r)
		return r
	}
	neg, big := -1, 1<<60
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	tests := []struct {
		name  string
		rec   Record
		field string
	}{
		{"unknown kind", ok(func(r *Record) { r.Kind = "coffee" }), "kind"},
		{"empty kind", ok(func(r *Record) { r.Kind = "" }), "kind"},
		{"input not JSON", ok(func(r *Record) { r.Input = json.RawMessage(`{"token":"SECRETVALUE"`) }), "input"},
		{"input with trailing data", ok(func(r *Record) { r.Input = json.RawMessage(`{} {}`) }), "input"},
		{"input too large", ok(func(r *Record) { r.Input = json.RawMessage(`"` + strings.Repeat("a", 5000) + `"`) }), "input"},
		{"input invalid UTF-8", ok(func(r *Record) { r.Input = json.RawMessage("{\"a\":\"\xff\xfe\"}") }), "input"},
		{"input raw NUL byte", ok(func(r *Record) { r.Input = json.RawMessage("{\"a\":\"x\x00y\"}") }), "input"},
		{"input control character", ok(func(r *Record) { r.Input = json.RawMessage("{\"a\":\"x\ny\"}") }), "input"},
		{"input nested too deep", ok(func(r *Record) { r.Input = json.RawMessage(deep) }), "input"},
		{"input duplicate key", ok(func(r *Record) { r.Input = json.RawMessage(`{"a":1,"a":2}`) }), "input"},
		{"input lone surrogate", ok(func(r *Record) { r.Input = json.RawMessage(`{"a":"\ud800"}`) }), "input"},
		{"input number out of range", ok(func(r *Record) { r.Input = json.RawMessage(`{"a":1e400}`) }), "input"},
		{"input bad literal", ok(func(r *Record) { r.Input = json.RawMessage(`{"a":tru}`) }), "input"},
		{"detail not JSON", ok(func(r *Record) { r.Detail = json.RawMessage(`nope`) }), "detail"},
		{"principal invalid UTF-8", ok(func(r *Record) { r.Principal.Name = "bad\xc3" }), "principal.name"},
		{"principal NUL", ok(func(r *Record) { r.Principal.Name = "a\x00b" }), "principal.name"},
		{"role too long", ok(func(r *Record) { r.Principal.Role = strings.Repeat("r", 600) }), "principal.role"},
		{"request id NUL", ok(func(r *Record) { r.RequestID = "\x00" }), "request_id"},
		{"decision referring to a decision", ok(func(r *Record) { r.DecisionID = "01J00000000000000000000000" }), "decision_id"},
		{"negative command index", ok(func(r *Record) { r.Reasons = []Reason{{Rule: "r", Command: &neg}} }), "reasons[0].command"},
		{"rule with blanks", ok(func(r *Record) { r.Reasons = []Reason{{Rule: "a"}, {Rule: "a b"}} }), "reasons[1].rule"},
		{"message invalid UTF-8", ok(func(r *Record) { r.Reasons = []Reason{{Rule: "r", Message: "\xff"}} }), "reasons[0].message"},
		{"too many reasons", ok(func(r *Record) { r.Reasons = make([]Reason, maxReasons+1) }), "reasons"},
		{"byte count beyond 2^53", Record{Kind: KindExecution, Execution: &Execution{StdoutBytes: int64(big)}}, "execution.stdout_bytes"},
		{"execution error NUL", Record{Kind: KindExecution, Execution: &Execution{Error: "x\x00"}}, "execution.error"},
	}
	for _, tc := range tests {
		_, err := s.Append(ctx, tc.rec)
		var re *RecordError
		if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("Append(%s) = %v, want a *RecordError", tc.name, err)
			continue
		}
		if re.Field != tc.field {
			t.Errorf("Append(%s) field = %q, want %q (%v)", tc.name, re.Field, tc.field, err)
		}
		if strings.Contains(err.Error(), "SECRETVALUE") {
			t.Errorf("Append(%s) error quotes the input: %v", tc.name, err)
		}
	}
	// Valid edge cases are accepted: escaped NUL and control characters, emoji, empty.
	for _, in := range []string{`{"a":"x\u0000y\n"}`, `{"😀":"\ud83d\ude00"}`, `null`, `[]`, `"just a string"`, ` {"a" : [ ] } `} {
		if _, err := s.Append(ctx, ok(func(r *Record) { r.Input = json.RawMessage(in) })); err != nil {
			t.Errorf("Append(input %s) = %v", in, err)
		}
	}
	res, err := s.Verify(ctx, VerifyOptions{})
	if err != nil || !res.OK || res.Records != 6 {
		t.Errorf("Verify() = %+v, %v; want ok with the 6 valid records only", res, err)
	}
}

// TestFailClosed makes the database refuse inserts for real (a trigger, as a broken or
// sabotaged store would) and checks that every append fails, nothing is stored, and the
// chain continues intact once the store works again.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	defer s.Close(ctx)
	for i := range 3 {
		if _, err := s.Append(ctx, sampleDecision(i)); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, DBFile)
	execSQL(t, db, `CREATE TRIGGER broken BEFORE INSERT ON records BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Append(ctx, sampleDecision(100+i))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil || !strings.Contains(err.Error(), "disk on fire") {
			t.Errorf("Append on a failing store = %v, want the store's error", err)
		}
	}
	page, err := s.Query(ctx, Query{})
	if err != nil || len(page.Records) != 3 {
		t.Fatalf("Query() after failed appends = %d records, %v; want 3", len(page.Records), err)
	}
	execSQL(t, db, `DROP TRIGGER broken`)
	r, err := s.Append(ctx, sampleDecision(200))
	if err != nil || r.Seq != 4 || r.PrevHash != page.Records[0].Hash {
		t.Fatalf("Append after recovery = seq %d prev %s, %v; want seq 4 after %s", r.Seq, r.PrevHash, err, page.Records[0].Hash)
	}
	if res, err := s.Verify(ctx, VerifyOptions{}); err != nil || !res.OK || res.Records != 4 {
		t.Errorf("Verify() = %+v, %v", res, err)
	}
}

func TestAppendContextCanceled(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(context.Background())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Append(ctx, sampleDecision(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Append(canceled ctx) = %v, want context.Canceled", err)
	}
}

// TestVerifyWhileAppending checks that verify reads a consistent snapshot while others
// append (and write checkpoints and the checkpoint file).
func TestVerifyWhileAppending(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{CheckpointEvery: 7})
	defer s.Close(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var appended atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Append(ctx, sampleDecision(w*100000+i)); err != nil {
					t.Error(err)
					return
				}
				appended.Add(1)
			}
		}()
	}
	for i := 0; i < 20 || appended.Load() < 500; i++ {
		res, err := s.Verify(ctx, VerifyOptions{})
		if err != nil || !res.OK {
			t.Errorf("Verify() during appends = %+v %v, %v", res, res.Problem, err)
			break
		}
	}
	close(stop)
	wg.Wait()
}

// TestTwoProcessesOneChain opens the store twice (as two processes would) and appends
// through both: the chain stays linear because each commit reads the head under
// SQLite's write lock.
func TestTwoStoresOneChain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	a := openTest(t, dir, Options{})
	b := openTest(t, dir, Options{})
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				if _, err := s.Append(ctx, sampleDecision(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := b.Verify(ctx, VerifyOptions{})
	if err != nil || !res.OK || res.Records != 120 {
		t.Errorf("Verify() = %+v %v, %v; want ok with 120 records", res, res.Problem, err)
	}
	b.Close(ctx)
}
