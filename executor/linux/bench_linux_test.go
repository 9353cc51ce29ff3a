package linux_test

import (
	"context"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/linux/bwrappeer"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// BenchmarkSandbox measures one command, /bin/true, from Run to its result in a fresh
// sandbox with every protection on (namespaces, new root, Landlock, seccomp, no
// capabilities, rlimits, a cgroup where the host allows). The targets: linux at most 0.6×
// bwrap, linux_cold at most 1.0× (make bench prints the ratios).
//
//   - linux: the backend as the gateway runs it, with sandboxes built ahead: what an agent
//     waits for a command. Between commands the timer stops until the pool is full again,
//     as it is between an agent's commands; a burst that drains the pool waits as
//     linux_cold does.
//   - linux_cold: no pool: every sandbox is built, and its init started, inside the timed
//     region.
//   - linux_network: as linux_cold, granted the network: the uplink (slirp4netns) is
//     started and attached, and the host's addresses closed off, inside the timed region
//     (sandboxes with network are never built ahead).
//   - linux_floor: the least a cold sandbox whose init is a Go program pays, nothing
//     built: a spawner (internal/spawnfloor, a small Go program as the backend's is)
//     starts a Go init in the same new namespaces, which execs /bin/true, and answers
//     once it has ended.
//   - bwrap: bubblewrap sharing nothing either, for reference.
//   - bwrap_same: bubblewrap doing what it can of the sandbox's own work, for reference
//     (package bwrappeer): the sandbox's binds, hidden files, /tmp, /dev/shm, /proc and
//     /dev, no capability and the sandbox's seccomp filter. It has no Landlock and no
//     cgroup.
func BenchmarkSandbox(b *testing.B) {
	spec := func(ws string) executor.Spec {
		return executor.Spec{Argv: []string{"/bin/true"}, ShellMode: executor.ShellDirect, Dir: ws, Timeout: 10 * time.Second}
	}
	run := func(b *testing.B, e *linux.Executor, sp executor.Spec) {
		res, err := e.Run(context.Background(), sp)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
	b.Run("linux", func(b *testing.B) {
		e, ws := newExecutor(b, linux.Options{})
		sp := spec(ws)
		waitPoolFull(b, e)
		defer testenv.MachineCPU(b)()
		for b.Loop() {
			b.StopTimer()
			waitPoolFull(b, e)
			b.StartTimer()
			run(b, e, sp)
		}
	})
	b.Run("linux_cold", func(b *testing.B) {
		e, ws := newExecutor(b, linux.Options{Pool: -1})
		sp := spec(ws)
		defer reportBuildSteps(b, e)()
		defer testenv.MachineCPU(b)()
		for b.Loop() {
			run(b, e, sp)
		}
	})
	b.Run("linux_network", func(b *testing.B) {
		e, ws := newExecutor(b, linux.Options{Pool: -1})
		sp := spec(ws)
		sp.Network = true
		defer testenv.MachineCPU(b)()
		for b.Loop() {
			run(b, e, sp)
		}
	})
	b.Run("linux_floor", func(b *testing.B) {
		floor, err := testenv.BuildSpawnFloor("bench")
		if err != nil {
			b.Fatal(err)
		}
		sp := exec.Command(floor, "spawner", "--", "/bin/true")
		in, err := sp.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := sp.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := sp.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			in.Close()
			if err := sp.Wait(); err != nil {
				b.Errorf("spawnfloor spawner: %v", err)
			}
		}()
		buf := []byte{'x'}
		defer testenv.MachineCPU(b)()
		for b.Loop() {
			if _, err := in.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(out, buf); err != nil {
				b.Fatalf("spawnfloor spawner: %v", err)
			}
		}
	})
	b.Run("bwrap", func(b *testing.B) { bwrappeer.BenchmarkPlain(b, 0) })
	b.Run("bwrap_same", func(b *testing.B) { bwrappeer.Benchmark(b, b.TempDir()) })
}

// reportBuildSteps has the benchmark report, when its returned func is called, how long
// each step of e's sandbox builds took on average (build_STEP-µs/op, and build_total),
// the builds' own timing (linux.BuildTiming): where a cold start goes on this host.
func reportBuildSteps(b *testing.B, e *linux.Executor) (report func()) {
	var mu sync.Mutex
	sum := map[string]int64{}
	var order []string
	builds := 0
	e.OnBuild(func(t linux.BuildTiming) {
		mu.Lock()
		defer mu.Unlock()
		builds++
		sum["total"] += t.TotalUS
		for _, st := range t.Steps {
			if _, ok := sum[st.Step]; !ok {
				order = append(order, st.Step)
			}
			sum[st.Step] += st.US
		}
	})
	return func() {
		e.OnBuild(nil)
		mu.Lock()
		defer mu.Unlock()
		if builds == 0 {
			return
		}
		for _, name := range append(order, "total") {
			b.ReportMetric(float64(sum[name])/float64(builds), "build_"+name+"-µs/op")
		}
	}
}

// waitPoolFull waits, bounded, until e has its sandboxes built ahead and the inits of
// the previous commands are gone.
func waitPoolFull(t testing.TB, e *linux.Executor) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !e.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill within 30 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
}
