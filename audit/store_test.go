package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAppendAssignsChain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	var prev Record
	for i := range 5 {
		r, err := s.Append(ctx, sampleDecision(i))
		if err != nil {
			t.Fatalf("Append(%d) = %v", i, err)
		}
		if r.Seq != int64(i+1) {
			t.Errorf("Append(%d).Seq = %d, want %d", i, r.Seq, i+1)
		}
		if len(r.ID) != 26 || len(r.Hash) != 64 {
			t.Errorf("Append(%d) id %q hash %q: want 26 and 64 characters", i, r.ID, r.Hash)
		}
		want := genesisHash
		if i > 0 {
			want = prev.Hash
			if r.ID <= prev.ID {
				t.Errorf("Append(%d).ID = %s, not after %s", i, r.ID, prev.ID)
			}
			if r.Time.Before(prev.Time) {
				t.Errorf("Append(%d).Time = %v, before %v", i, r.Time, prev.Time)
			}
		}
		if r.PrevHash != want {
			t.Errorf("Append(%d).PrevHash = %s, want %s", i, r.PrevHash, want)
		}
		prev = r
	}
	got, err := s.Get(ctx, prev.ID)
	if err != nil {
		t.Fatalf("Get(%s) = %v", prev.ID, err)
	}
	if diff := cmp.Diff(prev, got); diff != "" {
		t.Errorf("Get(%s) differs from what Append returned (-append +get):\n%s", prev.ID, diff)
	}
	if _, err := s.Get(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(unknown id) = %v, want ErrNotFound", err)
	}
	res, err := s.Verify(ctx, VerifyOptions{})
	if err != nil || !res.OK || res.Records != 5 || res.Head.Hash != prev.Hash {
		t.Fatalf("Verify() = %+v, %v; want ok with 5 records and head %s", res, err, prev.Hash)
	}
}

func TestReopenReadOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := openTest(t, dir, Options{CheckpointEvery: 3})
	for i := range 7 {
		if _, err := s.Append(ctx, sampleDecision(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	ro := openTest(t, dir, Options{ReadOnly: true})
	defer ro.Close(ctx)
	res, err := ro.Verify(ctx, VerifyOptions{})
	if err != nil || !res.OK {
		t.Fatalf("Verify() = %+v, %v", res, err)
	}
	// Checkpoints at 3 and 6 and the shutdown one at 7; the file repeats the last.
	if res.Checkpoints != 4 || res.LastCheckpoint == nil || res.LastCheckpoint.Seq != 7 {
		t.Errorf("Verify() checkpoints = %d, last %+v; want 4, last at 7", res.Checkpoints, res.LastCheckpoint)
	}
	if _, err := ro.Append(ctx, sampleDecision(9)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Append on read-only store = %v, want ErrReadOnly", err)
	}
	page, err := ro.Query(ctx, Query{})
	if err != nil || len(page.Records) != 7 {
		t.Fatalf("Query() = %d records, %v; want 7", len(page.Records), err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	empty := t.TempDir()
	if _, err := Open(ctx, filepath.Join(empty, "nope"), Options{ReadOnly: true}); !errors.Is(err, ErrNoStore) {
		t.Errorf("Open(read-only, missing dir) = %v, want ErrNoStore", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only Open created the directory: %v", err)
	}
	if _, err := Open(ctx, empty, Options{ReadOnly: true}); !errors.Is(err, ErrNoStore) {
		t.Errorf("Open(read-only, empty dir) = %v, want ErrNoStore", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("read-only Open left files: %v", entries)
	}

	garbage := t.TempDir()
	os.WriteFile(filepath.Join(garbage, DBFile), []byte(strings.Repeat("not sqlite ", 200)), 0o600)
	for _, ro := range []bool{false, true} {
		if _, err := Open(ctx, garbage, Options{ReadOnly: ro}); !errors.Is(err, ErrNotStore) {
			t.Errorf("Open(read-only %v, garbage file) = %v, want ErrNotStore", ro, err)
		}
	}

	other := t.TempDir()
	makeSQLite(t, filepath.Join(other, DBFile), `CREATE TABLE t (x)`)
	if _, err := Open(ctx, other, Options{}); !errors.Is(err, ErrNotStore) {
		t.Errorf("Open(other sqlite database) = %v, want ErrNotStore", err)
	}

	newer := t.TempDir()
	s := openTest(t, newer, Options{})
	s.Close(ctx)
	execSQL(t, filepath.Join(newer, DBFile), `PRAGMA user_version = 99`)
	if _, err := Open(ctx, newer, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Open(schema 99) = %v, want ErrSchemaTooNew", err)
	}
}

func TestDirectoryModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	s := openTest(t, dir, Options{})
	defer s.Close(t.Context())
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, KeyFile): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("mode of %s = %v, want %v", path, st.Mode().Perm(), want)
		}
	}
}

func TestConcurrentAppendsFormOneChain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{CheckpointEvery: 100})
	defer s.Close(ctx)
	const workers, each = 16, 50
	var wg sync.WaitGroup
	ids := make(chan string, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r, err := s.Append(ctx, sampleDecision(w*each+i))
				if err != nil {
					t.Error(err)
					return
				}
				ids <- r.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	res, err := s.Verify(ctx, VerifyOptions{})
	if err != nil || !res.OK || res.Records != workers*each {
		t.Fatalf("Verify() = %+v, %v; want ok with %d records", res, err, workers*each)
	}
	for id := range ids {
		if _, err := s.Get(ctx, id); err != nil {
			t.Errorf("Get(%s) = %v", id, err)
		}
	}
}

func TestClockGoingBackwards(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(-time.Second)
		return now
	}
	s := openTest(t, t.TempDir(), Options{Now: clock})
	defer s.Close(ctx)
	var prev Record
	for i := range 4 {
		r, err := s.Append(ctx, sampleDecision(i))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (r.Time.Before(prev.Time) || r.ID <= prev.ID) {
			t.Errorf("record %d: time %v id %s after time %v id %s", r.Seq, r.Time, r.ID, prev.Time, prev.ID)
		}
		prev = r
	}
	if res, err := s.Verify(ctx, VerifyOptions{}); err != nil || !res.OK {
		t.Fatalf("Verify() = %+v, %v", res, err)
	}
}

func TestAppendAfterClose(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	s.Close(ctx)
	if _, err := s.Append(ctx, sampleDecision(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := s.Query(ctx, Query{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Query after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Verify(ctx, VerifyOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Verify after Close = %v, want ErrClosed", err)
	}
}

func TestRecordJSONRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	r, err := s.Append(ctx, sampleDecision(2))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("Unmarshal(%s) = %v", b, err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

// TestIdleIndexing: when appends stop, the writer indexes the backlog on its own.
func TestIdleIndexing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	for i := range 10 { // fewer than a chunk: only the idle timer indexes them
		if _, err := s.Append(ctx, sampleDecision(i)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for indexedUpTo(t, s) != 10 {
		if time.Now().After(deadline) {
			t.Fatalf("index_seq = %d 20s after the last append, want 10", indexedUpTo(t, s))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A decision record is looked up by its decision id like the records that refer to it:
// its JSON form carries its own id there, and an import of that form appends it again.
func TestDecisionRecordJSONCarriesItsID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	rec, err := s.Append(ctx, sampleDecision(0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		ID         string `json:"id"`
		DecisionID string `json:"decision_id"`
	}
	if err := json.Unmarshal(b, &j); err != nil || j.DecisionID == "" || j.DecisionID != j.ID {
		t.Fatalf("decision record JSON decision_id = %q, id %q (%v): want its own id", j.DecisionID, j.ID, err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, back); err != nil {
		t.Errorf("Append(the decision record read back) = %v", err)
	}
	other := back
	other.DecisionID = "01J00000000000000000000000"
	if _, err := s.Append(ctx, other); err == nil {
		t.Errorf("Append(decision record naming another decision) = nil, want a RecordError")
	}
	if res, err := s.Verify(ctx, VerifyOptions{}); err != nil || !res.OK {
		t.Errorf("Verify = %+v, %v", res, err)
	}
}
