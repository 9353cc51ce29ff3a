package audit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

const appendersDirEnv = "CMDGATE_TEST_APPENDERS_DIR"

// TestAppenderHelper is a child process of TestProcessesAppendOneChain: it appends its
// share of records to the store in the directory the environment names.
func TestAppenderHelper(t *testing.T) {
	dir := os.Getenv(appendersDirEnv)
	if dir == "" {
		t.Skip("a helper of TestProcessesAppendOneChain")
	}
	worker, _ := strconv.Atoi(os.Getenv(appendersDirEnv + "_WORKER"))
	s, err := Open(context.Background(), dir, Options{CheckpointEvery: 50})
	if err != nil {
		t.Fatal(err)
	}
	for i := range appendsEach {
		r := sampleDecision(worker*appendsEach + i)
		r.RequestID = fmt.Sprintf("w%d-%d", worker, i)
		if _, err := s.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

const appenders, appendsEach = 4, 150

// Several processes appending to one store at once (cmdgate serve, cmdgate mcp, and
// the job supervisors on one data directory) keep one chain: every record is there
// once, and it verifies.
func TestProcessesAppendOneChain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	// The store exists (and has its key) before the children start.
	s := openTest(t, dir, Options{})
	s.Close(context.Background())
	appendAtOnce(t, dir)
}

// The same on a data directory nobody opened yet: the processes create the store, its
// key and its search index at the same moment (the first `cmdgate job run`s of a new
// user, started together), and still keep one chain.
func TestProcessesFirstOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes; skipped with -short")
	}
	t.Parallel()
	appendAtOnce(t, t.TempDir())
}

// appendAtOnce runs the appender processes on dir at once and checks the chain.
func appendAtOnce(t *testing.T, dir string) {
	cmds := make([]*exec.Cmd, appenders)
	outs := make([]*strings.Builder, appenders)
	for w := range appenders {
		cmds[w] = exec.Command(os.Args[0], "-test.run=^TestAppenderHelper$", "-test.count=1")
		cmds[w].Env = append(os.Environ(), appendersDirEnv+"="+dir, fmt.Sprintf("%s_WORKER=%d", appendersDirEnv, w))
		outs[w] = &strings.Builder{}
		cmds[w].Stdout, cmds[w].Stderr = outs[w], outs[w]
		if err := cmds[w].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for w, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("appender %d: %v\n%s", w, err, outs[w])
		}
	}
	s := openTest(t, dir, Options{})
	defer s.Close(context.Background())
	res, err := s.Verify(context.Background(), VerifyOptions{})
	if err != nil || !res.OK || res.Records != appenders*appendsEach {
		t.Fatalf("Verify() = %+v, %v; want ok with %d records", res, err, appenders*appendsEach)
	}
	seen := map[string]bool{}
	switches, last := 0, ""
	q := Query{Limit: MaxLimit}
	for {
		page, err := s.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if seen[r.RequestID] {
				t.Errorf("request %s recorded twice", r.RequestID)
			}
			seen[r.RequestID] = true
			if w, _, _ := strings.Cut(r.RequestID, "-"); w != last {
				switches, last = switches+1, w
			}
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	if len(seen) != appenders*appendsEach {
		t.Errorf("%d distinct requests recorded, want %d", len(seen), appenders*appendsEach)
	}
	// The processes really appended at the same time: their records interleave.
	if switches <= appenders {
		t.Errorf("the chain changes process %d times: the appenders ran one after another, not at once", switches)
	}
}
