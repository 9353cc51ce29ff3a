package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// seedStore appends n records with a checkpoint every `every` records and closes the
// store (which adds the shutdown checkpoint). It returns the directory.
func seedStore(t *testing.T, n, every int) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	s := openTest(t, dir, Options{CheckpointEvery: every})
	for i := range n {
		if _, err := s.Append(ctx, sampleDecision(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rehash recomputes prev_hash and hash of every record from seq `from` on, as an
// attacker who knows the (public) encoding would after editing the database.
func rehash(t *testing.T, path string, from int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prev := genesisHash
	if from > 1 {
		if err := db.QueryRow(`SELECT hash FROM records WHERE seq < ? ORDER BY seq DESC LIMIT 1`, from).Scan(&prev); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(`SELECT `+verifyColumns+` FROM records WHERE seq >= ? ORDER BY seq`, from)
	if err != nil {
		t.Fatal(err)
	}
	type upd struct {
		seq        int64
		prev, hash string
	}
	var updates []upd
	for rows.Next() {
		var f canonicalFields[string]
		var input, execution, detail sql.NullString
		var oldPrev, oldHash string
		if err := rows.Scan(&f.seq, &f.id, &f.timeNS, &f.kind, &f.principal, &f.role, &f.requestID,
			&f.decisionID, &f.decision, &f.revision, &input, &f.reasons, &execution, &detail, &oldPrev, &oldHash); err != nil {
			t.Fatal(err)
		}
		f.input, f.execution, f.detail = input.String, execution.String, detail.String
		h, _ := chainHash(nil, prev, &f)
		updates = append(updates, upd{f.seq, prev, h})
		prev = h
	}
	rows.Close()
	for _, u := range updates {
		if _, err := db.Exec(`UPDATE records SET prev_hash = ?, hash = ? WHERE seq = ?`, u.prev, u.hash, u.seq); err != nil {
			t.Fatal(err)
		}
	}
}

// rehashOnly recomputes the hash of one record over its stored content and prev_hash.
func rehashOnly(t *testing.T, path string, seq int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var f canonicalFields[string]
	var input, execution, detail sql.NullString
	var prev, old string
	if err := db.QueryRow(`SELECT `+verifyColumns+` FROM records WHERE seq = ?`, seq).Scan(&f.seq, &f.id, &f.timeNS, &f.kind, &f.principal, &f.role, &f.requestID,
		&f.decisionID, &f.decision, &f.revision, &input, &f.reasons, &execution, &detail, &prev, &old); err != nil {
		t.Fatal(err)
	}
	f.input, f.execution, f.detail = input.String, execution.String, detail.String
	h, _ := chainHash(nil, prev, &f)
	if _, err := db.Exec(`UPDATE records SET hash = ? WHERE seq = ?`, h, seq); err != nil {
		t.Fatal(err)
	}
}

func verifyDir(t *testing.T, dir string, opts VerifyOptions) *VerifyResult {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open(read-only) = %v", err)
	}
	defer s.Close(context.Background())
	res, err := s.Verify(context.Background(), opts)
	if err != nil {
		t.Fatalf("Verify() = %v", err)
	}
	return res
}

func idAt(t *testing.T, path string, seq int64) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id string
	if err := db.QueryRow(`SELECT id FROM records WHERE seq = ?`, seq).Scan(&id); err != nil {
		t.Fatalf("id of record %d: %v", seq, err)
	}
	return id
}

// shift moves the records from seq `from` on by delta (the primary key forbids doing it
// in place).
func shift(from, delta int64) []string {
	return []string{
		fmt.Sprintf(`UPDATE records SET seq = seq + 1000000 WHERE seq >= %d`, from),
		fmt.Sprintf(`UPDATE records SET seq = seq - 1000000 + %d WHERE seq >= 1000000`, delta),
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	t.Parallel()
	const n, every = 30, 10 // checkpoints at 10, 20, 30 (the shutdown one is the same)
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir, db string)
		opts   func(t *testing.T, dir string) VerifyOptions // called before tampering
		kind   ProblemKind
		seq    int64
		idOf   int64 // seq of the record whose original id must be named; 0: none
	}{
		{
			name: "edit a field",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `UPDATE records SET principal = 'mallory' WHERE seq = 5`)
			},
			kind: ProblemEdited, seq: 5, idOf: 5,
		},
		{
			name: "edit the input",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `UPDATE records SET input = replace(input, 'rm -rf', 'ls -la') WHERE seq = 7`)
			},
			kind: ProblemEdited, seq: 7, idOf: 7,
		},
		{
			name: "edit and re-hash one record only",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `UPDATE records SET decision = 'allow' WHERE seq = 5`)
				rehashOnly(t, db, 5)
			},
			kind: ProblemEdited, seq: 5, idOf: 5,
		},
		{
			name:   "delete a record",
			tamper: func(t *testing.T, dir, db string) { execSQL(t, db, `DELETE FROM records WHERE seq = 12`) },
			kind:   ProblemRemoved, seq: 12,
		},
		{
			name:   "delete the first record",
			tamper: func(t *testing.T, dir, db string) { execSQL(t, db, `DELETE FROM records WHERE seq = 1`) },
			kind:   ProblemRemoved, seq: 1,
		},
		{
			name: "delete a record and renumber the rest",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `DELETE FROM records WHERE seq = 12`)
				execSQL(t, db, shift(13, -1)...)
			},
			kind: ProblemRemoved, seq: 12,
		},
		{
			name: "insert a forged record with a made-up hash",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, shift(8, +1)...)
				execSQL(t, db, `INSERT INTO records SELECT 8, '01J0000000000000000000FAKE', time_ns, kind, 'mallory', role, request_id, decision_id, 'allow', revision, input, '[]', execution, detail, hash, 'ff', rules, body FROM records WHERE seq = 7`)
			},
			kind: ProblemInserted, seq: 8,
		},
		{
			name: "insert a forged record with a correct hash",
			tamper: func(t *testing.T, dir, db string) {
				// A well-made forgery: an id and time between its neighbours', linked to
				// record 7, with its hash computed.
				forged, _ := parseID(idAt(t, db, 7))
				forged.lo++
				execSQL(t, db, shift(8, +1)...)
				execSQL(t, db, `INSERT INTO records SELECT 8, '`+forged.String()+`', time_ns, kind, 'mallory', role, request_id, decision_id, 'allow', revision, input, '[]', execution, detail, hash, 'ff', rules, body FROM records WHERE seq = 7`)
				rehashOnly(t, db, 8)
			},
			kind: ProblemInserted, seq: 8,
		},
		{
			name: "append a forged record with a made-up hash",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `INSERT INTO records SELECT 31, '7ZZZZZZZZZZZZZZZZZZZZZZZZZ', time_ns, kind, 'mallory', role, request_id, decision_id, 'allow', revision, input, '[]', execution, detail, hash, 'ff', rules, body FROM records WHERE seq = 30`)
			},
			kind: ProblemEdited, seq: 31,
		},
		{
			name: "append a forged record that links to a wrong hash",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `INSERT INTO records SELECT 31, '7ZZZZZZZZZZZZZZZZZZZZZZZZZ', time_ns, kind, 'mallory', role, request_id, decision_id, 'allow', revision, input, '[]', execution, detail, 'abcd', 'ff', rules, body FROM records WHERE seq = 30`)
				rehashOnly(t, db, 31)
			},
			kind: ProblemInserted, seq: 31,
		},
		{
			name: "swap two records",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `UPDATE records SET seq = -1 WHERE seq = 15`, `UPDATE records SET seq = 15 WHERE seq = 16`, `UPDATE records SET seq = 16 WHERE seq = -1`)
			},
			kind: ProblemReordered, seq: 15,
		},
		{
			name:   "truncate the tail",
			tamper: func(t *testing.T, dir, db string) { execSQL(t, db, `DELETE FROM records WHERE seq > 24`) },
			kind:   ProblemTruncated, seq: 25,
		},
		{
			name: "truncate the tail and its checkpoints",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `DELETE FROM records WHERE seq > 24`, `DELETE FROM checkpoints WHERE seq > 24`)
			},
			kind: ProblemTruncated, seq: 25, // the audit.checkpoint file still says 30
		},
		{
			name: "truncate the tail, its checkpoints and the checkpoint file",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `DELETE FROM records WHERE seq > 24`, `DELETE FROM checkpoints WHERE seq > 24`)
				os.Remove(filepath.Join(dir, CheckpointFile))
			},
			opts: func(t *testing.T, dir string) VerifyOptions {
				// The auditor kept the checkpoint of record 30 from an earlier verify.
				c, err := ReadCheckpointFile(filepath.Join(dir, CheckpointFile))
				if err != nil {
					t.Fatal(err)
				}
				return VerifyOptions{Checkpoints: []Checkpoint{c}}
			},
			kind: ProblemTruncated, seq: 25,
		},
		{
			name: "rewrite the chain from a record on",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `UPDATE records SET principal = 'mallory' WHERE seq = 13`)
				rehash(t, db, 13)
			},
			kind: ProblemRewritten, seq: 20,
		},
		{
			name: "forge a checkpoint signature",
			tamper: func(t *testing.T, dir, db string) {
				execSQL(t, db, `UPDATE checkpoints SET signature = 'AAAA' WHERE seq = 20`)
			},
			kind: ProblemBadSignature, seq: 20,
		},
		{
			name:   "verify with another public key",
			tamper: func(t *testing.T, dir, db string) {},
			opts: func(t *testing.T, dir string) VerifyOptions {
				pub, _, _ := ed25519.GenerateKey(rand.Reader)
				return VerifyOptions{PublicKey: pub}
			},
			kind: ProblemBadSignature,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := seedStore(t, n, every)
			db := filepath.Join(dir, DBFile)
			if res := verifyDir(t, dir, VerifyOptions{}); !res.OK {
				t.Fatalf("Verify() before tampering = %+v", res.Problem)
			}
			var wantID string
			if tc.idOf > 0 {
				wantID = idAt(t, db, tc.idOf)
			}
			var opts VerifyOptions
			if tc.opts != nil {
				opts = tc.opts(t, dir)
			}
			tc.tamper(t, dir, db)
			res := verifyDir(t, dir, opts)
			if res.OK || res.Problem == nil {
				t.Fatalf("Verify() after %s = ok, want %s", tc.name, tc.kind)
			}
			p := res.Problem
			if p.Kind != tc.kind || (tc.seq != 0 && p.Seq != tc.seq) || (wantID != "" && p.ID != wantID) {
				t.Errorf("Verify() after %s = %s at %d (id %q): %s\nwant %s at %d (id %q)", tc.name, p.Kind, p.Seq, p.ID, p.Message, tc.kind, tc.seq, wantID)
			}
			if p.Message == "" {
				t.Errorf("Verify() problem has no message")
			}
		})
	}
}
