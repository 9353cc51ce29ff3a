package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyDir copies the regular files of dir into a new directory (a backup an attacker
// keeps to roll the store back to).
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// replaceDir makes dir hold exactly the files of from.
func replaceDir(t *testing.T, dir, from string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// appendN appends n sample records starting at sample k.
func appendN(t *testing.T, s *Store, k, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.Append(context.Background(), sampleDecision(k+i)); err != nil {
			t.Fatal(err)
		}
	}
}

func wantProblem(t *testing.T, res *VerifyResult, kind ProblemKind) {
	t.Helper()
	if res.OK || res.Problem == nil || res.Problem.Kind != kind {
		t.Fatalf("Verify() = ok %v, problem %+v; want %s", res.OK, res.Problem, kind)
	}
}

func wantOK(t *testing.T, res *VerifyResult) {
	t.Helper()
	if !res.OK || res.Problem != nil {
		t.Fatalf("Verify() = ok %v, problem %+v; want ok", res.OK, res.Problem)
	}
}

// TestTimedCheckpoint: records appended are covered by a signed checkpoint once the
// interval has passed, without more appends and long before CheckpointEvery.
func TestTimedCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	witness := filepath.Join(t.TempDir(), "witness.jsonl")
	s := openTest(t, dir, Options{CheckpointInterval: 20 * time.Millisecond, Witness: witness})
	defer s.Close(ctx)
	appendN(t, s, 0, 3)
	// Bounded wait for the timer: the property is that it comes without appends. The
	// writer commits a checkpoint to the database before it publishes the copies in
	// audit.checkpoint and the witness, so the wait is for all three.
	var res *VerifyResult
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if res, err = s.Verify(ctx, VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
		c, ferr := ReadCheckpointFile(filepath.Join(dir, CheckpointFile))
		w, werr := ReadWitness(witness)
		published := ferr == nil && c.Seq == 3 && werr == nil && len(w) > 0 && w[len(w)-1].Seq == 3
		if res.Unsealed == 0 && published || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantOK(t, res)
	if res.Unsealed != 0 || res.LastCheckpoint == nil || res.LastCheckpoint.Seq != 3 {
		t.Fatalf("after the interval: unsealed %d, last checkpoint %+v; want 0 and a checkpoint of record 3", res.Unsealed, res.LastCheckpoint)
	}
	if res.CleanShutdown {
		t.Error("CleanShutdown is true while the store is open")
	}
	c, err := ReadCheckpointFile(filepath.Join(dir, CheckpointFile))
	if err != nil || c.Seq != 3 {
		t.Fatalf("audit.checkpoint = %+v, %v; want record 3", c, err)
	}
	// The witness holds every checkpoint written, the last one sealing record 3. (On a
	// loaded machine the interval may pass between two appends: a checkpoint of an
	// earlier record comes first then.)
	wcps, err := ReadWitness(witness)
	if err != nil || len(wcps) == 0 || wcps[len(wcps)-1] != c {
		t.Fatalf("witness = %+v, %v; want it to end with the checkpoint %+v", wcps, err, c)
	}
	for i := 1; i < len(wcps); i++ {
		if wcps[i].Seq <= wcps[i-1].Seq {
			t.Fatalf("witness checkpoints %d and %d do not move forward: %+v", i-1, i, wcps)
		}
	}
	// Idle: no new checkpoint without new records.
	time.Sleep(100 * time.Millisecond)
	if again, _ := ReadWitness(witness); len(again) != len(wcps) {
		t.Fatalf("the idle store wrote %d more checkpoints; want none", len(again)-len(wcps))
	}
}

// TestUnsealedCount: records after the last checkpoint are counted; without timed
// checkpoints (and with a large CheckpointEvery) they stay so until Close seals them
// and marks the clean shutdown.
func TestUnsealedCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1})
	appendN(t, s, 0, 6)
	res, err := s.Verify(ctx, VerifyOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, res) // a running writer: counted, not a problem
	if res.Unsealed != 2 || res.CleanShutdown {
		t.Fatalf("open store: unsealed %d, clean %v; want 2, false", res.Unsealed, res.CleanShutdown)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	res = verifyDir(t, dir, VerifyOptions{Strict: true})
	wantOK(t, res)
	if res.Unsealed != 0 || !res.CleanShutdown || res.Records != 6 {
		t.Fatalf("closed store: unsealed %d, clean %v, records %d; want 0, true, 6", res.Unsealed, res.CleanShutdown, res.Records)
	}
}

// TestTailCut: every way of cutting the tail of a cleanly closed store that the issue
// names is detected, each by the evidence that survives it.
func TestTailCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// seed: 10 records, a checkpoint every 4 (4, 8) and the shutdown one (10).
	seed := func(t *testing.T, witness string) string {
		dir := t.TempDir()
		s := openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1, Witness: witness})
		appendN(t, s, 0, 10)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	db := func(dir string) string { return filepath.Join(dir, DBFile) }
	// lastCheckpointGone removes the checkpoint of record 10 from the table and puts
	// the one of record 8 back into audit.checkpoint.
	lastCheckpointGone := func(t *testing.T, dir string) {
		execSQL(t, db(dir), `DELETE FROM checkpoints WHERE seq = 10`)
		if err := os.Remove(filepath.Join(dir, CheckpointFile)); err != nil {
			t.Fatal(err)
		}
		res := verifyDir(t, dir, VerifyOptions{})
		if res.LastCheckpoint == nil || res.LastCheckpoint.Seq != 8 {
			t.Fatalf("last checkpoint left %+v; want record 8's", res.LastCheckpoint)
		}
		if err := writeCheckpointFile(dir, *res.LastCheckpoint); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("tail cut", func(t *testing.T) {
		t.Parallel()
		dir := seed(t, "")
		execSQL(t, db(dir), `DELETE FROM records WHERE seq > 8`)
		wantProblem(t, verifyDir(t, dir, VerifyOptions{}), ProblemTruncated)
	})
	t.Run("tail cut and its checkpoint removed", func(t *testing.T) {
		t.Parallel()
		dir := seed(t, "")
		execSQL(t, db(dir), `DELETE FROM records WHERE seq > 9`)
		lastCheckpointGone(t, dir)
		res := verifyDir(t, dir, VerifyOptions{})
		wantProblem(t, res, ProblemTruncated) // the clean-shutdown mark says 10
		if !strings.Contains(res.Problem.Message, "shut down cleanly at record 10") {
			t.Errorf("message %q does not name the clean shutdown", res.Problem.Message)
		}
	})
	t.Run("last checkpoint removed", func(t *testing.T) {
		t.Parallel()
		dir := seed(t, "")
		lastCheckpointGone(t, dir)
		res := verifyDir(t, dir, VerifyOptions{})
		wantOK(t, res)
		if res.Unsealed != 2 || !res.CleanShutdown {
			t.Fatalf("unsealed %d, clean %v; want 2, true", res.Unsealed, res.CleanShutdown)
		}
		res = verifyDir(t, dir, VerifyOptions{Strict: true})
		wantProblem(t, res, ProblemUnsealedTail)
		if res.Problem.Seq != 9 {
			t.Errorf("problem at record %d; want 9", res.Problem.Seq)
		}
	})
	t.Run("rolled back to an old copy of the database", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1})
		appendN(t, s, 0, 5)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(db(dir))
		if err != nil {
			t.Fatal(err)
		}
		s = openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1})
		appendN(t, s, 5, 5)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(db(dir), old, 0o600); err != nil {
			t.Fatal(err)
		}
		res := verifyDir(t, dir, VerifyOptions{})
		wantProblem(t, res, ProblemTruncated) // audit.checkpoint is newer than the database
		if res.Records != 5 {
			t.Errorf("records %d; want the 5 of the old copy", res.Records)
		}
	})
	t.Run("whole directory rolled back, with a witness", func(t *testing.T) {
		t.Parallel()
		witness := filepath.Join(t.TempDir(), "witness.jsonl")
		dir := t.TempDir()
		s := openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1, Witness: witness})
		appendN(t, s, 0, 5)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		backup := copyDir(t, dir)
		s = openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1, Witness: witness})
		appendN(t, s, 5, 5)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		replaceDir(t, dir, backup)
		wantOK(t, verifyDir(t, dir, VerifyOptions{Strict: true})) // the directory alone is consistent
		res := verifyDir(t, dir, VerifyOptions{Witness: witness})
		wantProblem(t, res, ProblemTruncated)
		if res.WitnessCheckpoints != 4 { // 4, 5 (shutdown), 8, 10 (shutdown)
			t.Errorf("witness checkpoints %d; want 4", res.WitnessCheckpoints)
		}
	})
	t.Run("database, checkpoints and key deleted, with a witness", func(t *testing.T) {
		t.Parallel()
		witness := filepath.Join(t.TempDir(), "witness.jsonl")
		dir := seed(t, witness)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		// The gateway restarts on an empty directory: a new chain, a new key.
		s := openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1, Witness: witness})
		appendN(t, s, 100, 12)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		wantOK(t, verifyDir(t, dir, VerifyOptions{Strict: true}))
		res := verifyDir(t, dir, VerifyOptions{Witness: witness})
		wantProblem(t, res, ProblemBadSignature) // the witness holds the old key's checkpoints
	})
	t.Run("database and checkpoints deleted, key kept, with a witness", func(t *testing.T) {
		t.Parallel()
		witness := filepath.Join(t.TempDir(), "witness.jsonl")
		dir := seed(t, witness)
		for _, f := range []string{DBFile, DBFile + "-wal", DBFile + "-shm", CheckpointFile, "audit-index.db", "audit-index.db-wal", "audit-index.db-shm"} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		s := openTest(t, dir, Options{CheckpointEvery: 4, CheckpointInterval: -1, Witness: witness})
		appendN(t, s, 100, 12)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		wantOK(t, verifyDir(t, dir, VerifyOptions{}))
		wantProblem(t, verifyDir(t, dir, VerifyOptions{Witness: witness}), ProblemRewritten)
	})
}

// TestWitnessFile: the witness is appended to, never rewritten; a torn last line is
// skipped, anything else that is not a checkpoint is an error; a directory is refused
// at Open.
func TestWitnessFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tmp := t.TempDir()
	witness := filepath.Join(tmp, "witness.jsonl")
	if err := os.WriteFile(witness, []byte("# kept by the operator\n"), 0o600); err == nil {
		// A line that is not a checkpoint is reported with its number.
		if _, err := ReadWitness(witness); !errors.Is(err, ErrBadWitness) || !strings.Contains(err.Error(), "line 1") {
			t.Fatalf("ReadWitness(comment line) = %v; want an error naming line 1", err)
		}
	}
	if err := os.WriteFile(witness, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := openTest(t, dir, Options{CheckpointEvery: 2, CheckpointInterval: -1, Witness: witness})
	appendN(t, s, 0, 5)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(witness)
	if err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, Options{CheckpointEvery: 2, CheckpointInterval: -1, Witness: witness})
	appendN(t, s, 5, 2)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(witness)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(after), string(before)) || len(after) <= len(before) {
		t.Fatalf("the witness was not appended to:\nbefore %q\nafter %q", before, after)
	}
	cps, err := ReadWitness(witness)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, c := range cps {
		seqs = append(seqs, c.Seq)
	}
	if want := []int64{2, 4, 5, 6, 7}; len(seqs) != len(want) || seqs[0] != 2 || seqs[len(seqs)-1] != 7 {
		t.Fatalf("witness checkpoints at %v; want %v", seqs, want)
	}
	// A crash in the middle of a line: the torn line is skipped.
	if err := os.WriteFile(witness, append(after, `{"seq":9,"hash":"ab`...), 0o600); err != nil {
		t.Fatal(err)
	}
	if cps2, err := ReadWitness(witness); err != nil || len(cps2) != len(cps) {
		t.Fatalf("ReadWitness(torn last line) = %d checkpoints, %v; want %d", len(cps2), err, len(cps))
	}
	// A bad line in the middle is not skipped.
	if err := os.WriteFile(witness, append([]byte("{\"seq\":1}\n"), after...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWitness(witness); !errors.Is(err, ErrBadWitness) {
		t.Fatalf("ReadWitness(line without hash or signature) = %v; want ErrBadWitness", err)
	}
	if _, err := Open(ctx, t.TempDir(), Options{Witness: tmp}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Open(witness is a directory) = %v; want an error", err)
	}
	if _, err := Open(ctx, t.TempDir(), Options{Witness: filepath.Join(tmp, "missing", "w")}); err == nil {
		t.Fatal("Open(witness in a missing directory) = nil error")
	}
}
