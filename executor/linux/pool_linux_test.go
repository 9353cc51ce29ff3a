package linux_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestRunTakesBuildAhead: commands back to back empty the pool faster than it refills;
// a command that finds it empty takes the sandbox a filler is building rather than
// building one of its own beside it. Every command runs, none builds its own.
func TestRunTakesBuildAhead(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	waitPoolFull(t, e)
	const n = 12 // several times the pool's size
	for i := range n {
		if res := run(t, e, ws, "echo $$"); res.ExitCode != 0 || strings.TrimSpace(res.Stdout) == "" {
			t.Fatalf("command %d: %+v", i, res)
		}
	}
	if got := e.InlineBuilds(); got != 0 {
		t.Errorf("%d of %d commands built their own sandbox; want every one from the pool or a build ahead", got, n)
	}
}

// TestRunWaitingForBuildAheadCancelled: a command waiting for a build ahead that does
// not come (the spawner is stopped: SIGSTOP) ends when its context does, not started,
// and the next command, once the builds go on, runs.
func TestRunWaitingForBuildAheadCancelled(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{Pool: 1})
	waitPoolFull(t, e)
	sp := e.SpawnerPid()
	if sp == 0 {
		t.Fatal("a probed Executor has no spawner")
	}
	if err := syscall.Kill(sp, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	cont := func() {
		if stopped {
			stopped = false
			if err := syscall.Kill(sp, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	defer cont()
	// The sandboxes built before the stop (the pool's, and one its filler may hold)
	// run their commands; then a command can only wait.
	cancelled := -1
	for i := range 4 {
		ctx, cancel := context.WithTimeoutCause(context.Background(), 300*time.Millisecond, errors.New("the caller gave up"))
		start := time.Now()
		res, err := e.Run(ctx, executor.Spec{Script: fmt.Sprintf("touch started-%d", i), Dir: ws, Timeout: 20 * time.Second})
		cancel()
		if err == nil && res.ExitCode == 0 {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "not started") || !strings.Contains(err.Error(), "the caller gave up") {
			t.Fatalf("command %d while no sandbox can come = %+v, %v; want not started: the caller gave up", i, res, err)
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Errorf("Run returned %v after its context ended", waited)
		}
		cancelled = i
		break
	}
	if cancelled < 0 {
		t.Fatal("4 commands ran with the spawner stopped: more than the sandboxes built before it")
	}
	if got := e.InlineBuilds(); got != 0 {
		t.Errorf("InlineBuilds = %d, want 0: the commands took or waited for the builds ahead", got)
	}
	cont()
	if res := run(t, e, ws, fmt.Sprintf("test ! -e started-%d", cancelled)); res.ExitCode != 0 {
		t.Fatalf("after the builds go on: %+v (the cancelled command must not have run)", res)
	}
}

// TestPoolReadyInits: an idle Executor keeps Pool sandboxes in its pool and, in each
// of its builders (up to two), the one that builder holds while the pool is full: the
// number its Options document. No more come while nothing runs.
func TestPoolReadyInits(t *testing.T) {
	t.Parallel()
	for _, pool := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(pool), func(t *testing.T) {
			t.Parallel()
			e, _ := newExecutor(t, linux.Options{Pool: pool})
			sp := e.SpawnerPid()
			if sp == 0 {
				t.Fatal("a probed Executor has no spawner")
			}
			want := pool + min(pool, 2)
			waitPoolFull(t, e)
			var got []int
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if got = testenv.Children(sp); len(got) >= want || time.Now().After(deadline) {
					break
				}
			}
			if len(got) != want {
				t.Fatalf("pool %d: the spawner has %d live inits %v; want %d", pool, len(got), got, want)
			}
			time.Sleep(300 * time.Millisecond) // time enough for a build too many
			if got = testenv.Children(sp); len(got) != want {
				t.Errorf("pool %d, idle: the spawner has %d live inits %v; want still %d", pool, len(got), got, want)
			}
		})
	}
}
