package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOutputExpiry: an output past its retention is NOT_FOUND at once and removed by
// the sweep, with the spool files and incomplete outputs a stopped gateway left.
func TestOutputExpiry(t *testing.T) {
	t.Parallel()
	s := benchServer(t)
	alice := Caller{Name: "alice", Role: RoleAgent, Endpoint: "exec", RequestID: NewRequestID()}
	o, err := s.Exec(context.Background(), alice, &Request{Script: "seq 1 3000", MaxOutput: 1000})
	if err != nil {
		t.Fatal(err)
	}
	id := o.Result.OutputID
	if id == "" {
		t.Fatal("a cut result kept no output")
	}
	if _, err := s.ReadOutput(context.Background(), alice, id, "", 0, 0); err != nil {
		t.Fatalf("ReadOutput of a live output: %v", err)
	}

	// Left over by a gateway that stopped: a spool file and an output without its
	// record, both old, and a fresh spool file still being written.
	dir := s.outputs.dir
	old := time.Now().Add(-2 * s.opts.Output.Retention)
	leftovers := []string{filepath.Join(dir, "tmp", "spool-old"), filepath.Join(dir, "01ARZ3NDEKTSV4RRFFQ69G5FAV")}
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o700)
	os.WriteFile(leftovers[0], []byte("x"), 0o600)
	os.Mkdir(leftovers[1], 0o700)
	for _, p := range leftovers {
		os.Chtimes(p, old, old)
	}
	fresh := filepath.Join(dir, "tmp", "spool-fresh")
	os.WriteFile(fresh, []byte("x"), 0o600)

	// Its record says it expired: it is gone to readers before the sweep.
	metaPath := filepath.Join(dir, id, "meta.json")
	b, _ := os.ReadFile(metaPath)
	var m outputMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m.Expires = time.Now().Add(-time.Second)
	b, _ = json.Marshal(m)
	os.WriteFile(metaPath, b, 0o600)
	if _, err := s.ReadOutput(context.Background(), alice, id, "", 0, 0); AsError(err).Code != CodeNotFound {
		t.Errorf("ReadOutput of an expired output: %v, want NOT_FOUND", err)
	}

	if err := s.outputs.sweep(time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(leftovers, filepath.Join(dir, id)) {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived the sweep (%v)", p, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the sweep removed a spool file being written: %v", err)
	}
}
