package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/google/go-cmp/cmp"
)

// runCLI runs cmdgate in process with an empty environment.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := &Main{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	code = m.Run(context.Background(), args)
	return code, out.String(), errOut.String()
}

// seedAudit appends n decision records and closes the store.
func seedAudit(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	s, err := audit.Open(ctx, dir, audit.Options{CheckpointEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		_, err := s.Append(ctx, audit.Record{Kind: audit.KindDecision, Principal: audit.Principal{Name: "ci-agent", Role: "agent"},
			RequestID: fmt.Sprintf("r%d", i), Input: json.RawMessage(fmt.Sprintf(`{"request":{"raw":"make t%d"}}`, i)), Decision: "allow"})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return dir
}

func sqlExec(t *testing.T, dir string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, audit.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestAuditVerifyNamesTamperedRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stmts  []string
		kind   audit.ProblemKind
		seq    int64
		record int64 // records that check out before it
	}{
		{"edited", []string{`UPDATE records SET decision = 'deny' WHERE seq = 6`}, audit.ProblemEdited, 6, 5},
		{"removed", []string{`DELETE FROM records WHERE seq = 3`}, audit.ProblemRemoved, 3, 2},
		{"reordered", []string{`UPDATE records SET seq = -1 WHERE seq = 2`, `UPDATE records SET seq = 2 WHERE seq = 3`, `UPDATE records SET seq = 3 WHERE seq = -1`}, audit.ProblemReordered, 2, 1},
		{"truncated", []string{`DELETE FROM records WHERE seq > 7`}, audit.ProblemTruncated, 8, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := seedAudit(t, 10)
			if code, out, _ := runCLI(t, "", "audit", "verify", "--data", dir); code != exitOK || !strings.Contains(out, `"ok":true`) {
				t.Fatalf("verify before tampering = %d, %s", code, out)
			}
			sqlExec(t, dir, tc.stmts...)
			code, out, errOut := runCLI(t, "", "audit", "verify", "--data", dir)
			if code != exitError {
				t.Errorf("verify after %s: exit %d, want %d", tc.name, code, exitError)
			}
			var got struct {
				OK    bool `json:"ok"`
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
				Records int64          `json:"records"`
				Problem *audit.Problem `json:"problem"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("verify output %q: %v", out, err)
			}
			if got.OK || got.Error.Code != "CHAIN_BROKEN" || got.Problem == nil {
				t.Fatalf("verify after %s = %s, want ok false, CHAIN_BROKEN and a problem", tc.name, out)
			}
			if got.Problem.Kind != tc.kind || got.Problem.Seq != tc.seq || got.Records != tc.record {
				t.Errorf("verify after %s = %s at %d after %d good records, want %s at %d after %d", tc.name, got.Problem.Kind, got.Problem.Seq, got.Records, tc.kind, tc.seq, tc.record)
			}
			if want := fmt.Sprintf("broken at record %d", tc.seq); !strings.Contains(got.Error.Message, want) || !strings.Contains(errOut, want) {
				t.Errorf("verify after %s: message %q / stderr %q, want %q", tc.name, got.Error.Message, errOut, want)
			}
		})
	}
}

func TestAuditQueryPages(t *testing.T) {
	t.Parallel()
	dir := seedAudit(t, 7)
	var seqs []int64
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		args := []string{"audit", "query", "--data", dir, "--limit", "3"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		code, out, errOut := runCLI(t, "", args...)
		if code != exitOK {
			t.Fatalf("query %v = %d: %s %s", args, code, out, errOut)
		}
		var page struct {
			Records    []audit.Record `json:"records"`
			NextCursor string         `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("query output %q: %v", out, err)
		}
		for _, r := range page.Records {
			seqs = append(seqs, r.Seq)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff([]int64{7, 6, 5, 4, 3, 2, 1}, seqs); diff != "" {
		t.Errorf("query pages (-want +got):\n%s", diff)
	}
}

// TestAuditReadOnly checks that the offline commands leave the store as they found it
// (no new records, no checkpoint) and run beside a writer.
func TestAuditReadOnly(t *testing.T) {
	t.Parallel()
	dir := seedAudit(t, 3)
	ctx := context.Background()
	s, err := audit.Open(ctx, dir, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if _, err := s.Append(ctx, audit.Record{Kind: audit.KindPolicyLoad, Revision: "rev-2"}); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"query", "verify", "export", "pubkey"} {
		if code, out, errOut := runCLI(t, "", "audit", sub, "--data", dir); code != exitOK {
			t.Errorf("audit %s beside a writer = %d: %s %s", sub, code, out, errOut)
		}
	}
	code, out, _ := runCLI(t, "", "audit", "verify", "--data", dir)
	if code != exitOK || !strings.Contains(out, `"records":4`) {
		t.Errorf("verify = %d %s, want ok with 4 records", code, out)
	}
}
