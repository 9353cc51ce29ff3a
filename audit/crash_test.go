//go:build unix

package audit

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const crashDirEnv = "CMDGATE_AUDIT_CRASH_DIR"

// TestCrashHelper is the child of TestCrashSafety: with CMDGATE_AUDIT_CRASH_DIR set, it
// appends from several goroutines, in bursts, until it is killed, and prints the id and
// request id of every append that returned success, one line each, as soon as it
// returns. Without the variable it does nothing.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		return
	}
	ctx := context.Background()
	s, err := Open(ctx, dir, Options{CheckpointEvery: 50})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	var pause sync.RWMutex // held by goroutine 0 to make everyone idle, so the writer indexes
	round := os.Getenv(crashDirEnv + "_ROUND")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if g == 0 && rand.IntN(100) == 0 {
					pause.Lock()
					time.Sleep(indexIdle + time.Duration(rand.IntN(200))*time.Millisecond)
					pause.Unlock()
				}
				pause.RLock()
				r := sampleDecision(i)
				r.RequestID = fmt.Sprintf("crash%sg%di%dz", round, g, i) // one word, unique
				got, err := s.Append(ctx, r)
				if err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(4)
				}
				mu.Lock()
				// os.Stdout is unbuffered: the line is out when Fprintf returns.
				fmt.Fprintf(os.Stdout, "%s %s\n", got.ID, got.RequestID)
				mu.Unlock()
				pause.RUnlock()
			}
		}()
	}
	wg.Wait()
}

// TestCrashSafety runs the helper in a real child process, kills it with SIGKILL at a
// random moment, reopens the store and checks that the chain verifies and that every
// append the child saw succeed is there (and found by search), over many rounds on the
// same directory.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs 25 child processes; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	type ack struct{ id, requestID string }
	var acked []ack
	const rounds = 25
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", crashDirEnv, round))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan ack)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				id, req, ok := strings.Cut(sc.Text(), " ")
				if ok && strings.HasPrefix(req, "crash") {
					lines <- ack{id, req}
				}
			}
		}()
		// Kill after a random number of acknowledged appends (so the child is busy), at a
		// random moment after that: inside a group commit, between commits, while the
		// writer indexes or writes a checkpoint.
		want := 1 + rand.IntN(800)
		var got []ack
		deadline := time.After(20 * time.Second)
	wait:
		for len(got) < want {
			select {
			case a, ok := <-lines:
				if !ok {
					break wait
				}
				got = append(got, a)
			case <-deadline:
				break wait
			}
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for a := range lines { // what the child printed before it died
			got = append(got, a)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child ended with %v before it was killed; stderr:\n%s", round, err, stderr.String())
		}
		if len(got) == 0 {
			t.Fatalf("round %d: the child acknowledged no append; stderr:\n%s", round, stderr.String())
		}
		acked = append(acked, got...)

		// Reopen as the restarted gateway would, and check.
		s, err := Open(ctx, dir, Options{CheckpointEvery: 50})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		// A crash is not tampering: the tail it left unsealed is counted, and even
		// Strict accepts it, since the store was not shut down cleanly.
		res, err := s.Verify(ctx, VerifyOptions{Strict: true})
		if err != nil || !res.OK {
			t.Fatalf("round %d: Verify() after SIGKILL = %+v %+v, %v", round, res, res.Problem, err)
		}
		if res.CleanShutdown {
			t.Fatalf("round %d: Verify() after SIGKILL reports a clean shutdown", round)
		}
		for _, a := range got {
			r, err := s.Get(ctx, a.id)
			if err != nil || r.RequestID != a.requestID {
				t.Fatalf("round %d: acknowledged record %s (%s) after SIGKILL: %+v, %v", round, a.id, a.requestID, r, err)
			}
		}
		// The search finds an acknowledged record, indexed or not.
		a := got[rand.IntN(len(got))]
		page, err := s.Query(ctx, Query{Text: a.requestID})
		if err != nil || len(page.Records) != 1 || page.Records[0].ID != a.id {
			t.Fatalf("round %d: Query(text %s) = %v, %v; want record %s only", round, a.requestID, seqs(page.Records), err, a.id)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("round %d: Close() = %v", round, err)
		}
	}
	s, err := Open(ctx, dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	res, err := s.Verify(ctx, VerifyOptions{Strict: true})
	if err != nil || !res.OK || !res.CleanShutdown || res.Unsealed != 0 {
		t.Fatalf("final Verify() = %+v, %v; want ok after a clean shutdown, nothing unsealed", res, err)
	}
	for _, a := range acked {
		if _, err := s.Get(ctx, a.id); err != nil {
			t.Errorf("acknowledged record %s lost: %v", a.id, err)
		}
	}
	t.Logf("%d rounds, %d acknowledged appends, %d records in the chain", rounds, len(acked), res.Records)
}
