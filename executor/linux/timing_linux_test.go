package linux_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// buildSteps are the steps of a sandbox's build, in order, after the cgroup's.
var buildSteps = []string{"spawn", "start", "layout", "namespaces", "root", "privileges", "landlock", "seccomp", "home"}

// checkTiming fails t unless tm has every step of a build, in order (the cgroup's first
// where the sandbox has one), none negative, the spawn above zero (a clone and an exec
// take time), and their sum within the total.
func checkTiming(t *testing.T, what string, tm linux.BuildTiming, cgroup bool) {
	t.Helper()
	want := buildSteps
	if cgroup {
		want = append([]string{"cgroup"}, buildSteps...)
	}
	var names []string
	var sum int64
	for _, st := range tm.Steps {
		names = append(names, st.Step)
		sum += st.US
		if st.US < 0 {
			t.Errorf("%s: step %s took %d µs", what, st.Step, st.US)
		}
		if st.Step == "spawn" && st.US == 0 {
			t.Errorf("%s: the init was spawned in no time: %+v", what, tm)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("%s: steps %v, want %v", what, names, want)
	}
	var text strings.Builder
	for _, st := range tm.Steps {
		fmt.Fprintf(&text, "%s=%d ", st.Step, st.US)
	}
	if want := fmt.Sprintf("%stotal=%d", text.String(), tm.TotalUS); tm.String() != want {
		t.Errorf("%s: String() = %q, want %q (the debug log's)", what, tm.String(), want)
	}
	if tm.TotalUS <= 0 || sum > tm.TotalUS {
		t.Errorf("%s: steps add up to %d µs of a total of %d µs", what, sum, tm.TotalUS)
	}
}

// TestBuildTiming: the probe says how long its sandbox took to build, step by step, and
// so does every sandbox built afterwards, for a command or ahead of one.
func TestBuildTiming(t *testing.T) {
	t.Parallel()
	e, err := linux.New(linux.Options{Workspace: t.TempDir(), Helper: helper, Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := e.Probe(ctx)
	if err != nil {
		testenv.Skip(t, "the linux sandbox cannot be built here: %v", err)
	}
	if st.Build == nil {
		t.Fatal("Probe's status has no build timing")
	}
	cgroup := st.Cgroup != 0 && len(st.Limits) > 0
	checkTiming(t, "probe", *st.Build, cgroup)

	var mu sync.Mutex
	var got []linux.BuildTiming
	e.OnBuild(func(tm linux.BuildTiming) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, tm)
	})
	res, err := e.Run(ctx, executor.Spec{Argv: []string{"true"}, ShellMode: executor.ShellDirect, Dir: e.Workspace(), Timeout: 10 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d builds timed for one command without a pool, want 1", len(got))
	}
	checkTiming(t, "command", got[0], cgroup)
}
