//go:build !windows

package process_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// failingWriter fails every write.
type failingWriter struct{ calls int }

func (f *failingWriter) Write([]byte) (int, error) { f.calls++; return 0, errors.New("disk full") }

// Spec.Stdout and Spec.Stderr get every byte, past the capture's cap and invalid UTF-8
// included; a tee that fails is dropped and the command runs to its end.
func TestTees(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	e := process.New(process.Options{})
	var out, errOut bytes.Buffer
	script := `head -c 300000 /dev/zero | tr '\0' a; printf '\377\376'; echo oops >&2`
	res, err := e.Run(context.Background(), executor.Spec{Script: script, Dir: t.TempDir(), Timeout: 20 * time.Second,
		MaxOutputChars: 1000, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("a", 300000) + "\xff\xfe"
	if out.String() != want || errOut.String() != "oops\n" {
		t.Errorf("tees got %d and %q bytes; want 300002 and oops", out.Len(), errOut.String())
	}
	if !res.StdoutTruncated || len(res.Stdout) != 1000 || res.StdoutBytes != 300002 {
		t.Errorf("the result: truncated %v, %d chars, %d bytes", res.StdoutTruncated, len(res.Stdout), res.StdoutBytes)
	}

	bad := &failingWriter{}
	res, err = e.Run(context.Background(), executor.Spec{Script: `head -c 1000000 /dev/zero; echo done >&2`, Dir: t.TempDir(),
		Timeout: 20 * time.Second, Stdout: bad})
	if err != nil || res.ExitCode != 0 || res.Stderr != "done\n" || res.StdoutBytes != 1000000 || bad.calls != 1 {
		t.Errorf("with a failing tee: %v, exit %d, stderr %q, %d bytes, %d tee calls", err, res.ExitCode, res.Stderr, res.StdoutBytes, bad.calls)
	}
}

// A run whose context ends with ErrKillNow is killed at once: its TERM handler never
// runs. Ended with another cause, the tree gets TERM first and the handler runs.
func TestKillNow(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	e := process.New(process.Options{})
	script := `trap 'echo got-term; exit 3' TERM; echo started; while :; do sleep 0.05; done`
	for _, c := range []struct {
		cause   error
		handled bool
	}{{executor.ErrKillNow, false}, {errors.New("stop"), true}} {
		ctx, cancel := context.WithCancelCause(context.Background())
		var out syncBuffer
		done := make(chan executor.Result, 1)
		go func() {
			res, _ := e.Run(ctx, executor.Spec{Script: script, Dir: t.TempDir(), Timeout: 30 * time.Second, Stdout: &out})
			done <- res
		}()
		for i := 0; !strings.Contains(out.String(), "started"); i++ {
			if i == 1000 {
				t.Fatal("the command did not start within 10 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel(c.cause)
		res := <-done
		if handled := strings.Contains(res.Stdout, "got-term"); handled != c.handled {
			t.Errorf("cause %v: the TERM handler ran: %v (stdout %q, exit %d)", c.cause, handled, res.Stdout, res.ExitCode)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
