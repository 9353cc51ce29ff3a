package linux_test

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/linux/internal/seccomp"
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
//     (bwrapSame): the sandbox's binds, hidden files, /tmp, /dev/shm, /proc and /dev,
//     no capability and the sandbox's seccomp filter. It has no Landlock and no cgroup.
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
	b.Run("bwrap", func(b *testing.B) {
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			b.Skip("bubblewrap is not installed")
		}
		args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "/bin/true"}
		defer testenv.MachineCPU(b)()
		for b.Loop() {
			if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
				b.Fatalf("bwrap: %v\n%s", err, out)
			}
		}
	})
	b.Run("bwrap_same", func(b *testing.B) {
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			b.Skip("bubblewrap is not installed")
		}
		args, filter := bwrapSame(b, b.TempDir())
		run := func(command ...string) ([]byte, error) {
			f, err := os.Open(filter)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			cmd := exec.Command(bwrap, append(args, command...)...)
			cmd.ExtraFiles = []*os.File{f} // descriptor 3: --seccomp 3
			return cmd.CombinedOutput()
		}
		// The peer does the work it is credited with: the filter refuses a new user
		// namespace (unshare exits 1; 127 would be no unshare at all).
		if out, err := run("/bin/sh", "-c", "unshare -U true 2>/dev/null; test $? -eq 1"); err != nil {
			b.Fatalf("bwrap_same runs without the sandbox's seccomp filter in force: %v\n%s", err, out)
		}
		defer testenv.MachineCPU(b)()
		for b.Loop() {
			if out, err := run("/bin/true"); err != nil {
				b.Fatalf("bwrap: %v\n%s", err, out)
			}
		}
	})
}

// bwrapSame is the command line, up to the command, of a bubblewrap that does what it
// can of a cold sandbox's work on workspace ws, and the file of the seccomp filter it loads (from
// descriptor 3): the sandbox's read-only system directories (linux.DefaultReadOnly, those
// the host has) with its hidden files and directories (linux.DefaultHide: /dev/null over
// a file, an empty read-only tmpfs over a directory), the workspace read-write, a tmpfs
// /tmp and /dev/shm, a /proc and a /dev, the host name, every namespace, no capability,
// and the sandbox's own seccomp filter. What bubblewrap cannot do is left out: Landlock,
// the cgroup with its limits, the rlimits, the prohibit routes.
func bwrapSame(b *testing.B, ws string) (args []string, filter string) {
	prog, err := seccomp.Filter()
	if err != nil {
		b.Fatal(err)
	}
	var bpf []byte // struct sock_filter, as bubblewrap reads it
	for _, f := range prog {
		bpf = binary.NativeEndian.AppendUint16(bpf, f.Code)
		bpf = append(bpf, f.Jt, f.Jf)
		bpf = binary.NativeEndian.AppendUint32(bpf, f.K)
	}
	filter = filepath.Join(b.TempDir(), "filter.bpf")
	if err := os.WriteFile(filter, bpf, 0o600); err != nil {
		b.Fatal(err)
	}
	args = []string{"--unshare-all", "--die-with-parent", "--hostname", "cmdgate", "--cap-drop", "ALL"}
	for _, d := range linux.DefaultReadOnly {
		if _, err := os.Stat(d); err == nil {
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, p := range linux.DefaultHide {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			args = append(args, "--tmpfs", p, "--remount-ro", p)
		default:
			args = append(args, "--ro-bind", os.DevNull, p)
		}
	}
	args = append(args, "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp",
		"--bind", ws, ws, "--chdir", ws, "--seccomp", "3")
	return args, filter
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
