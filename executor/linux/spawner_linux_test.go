package linux_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"golang.org/x/sys/unix"
)

// TestSpawnerGone: when the spawner dies (killed from outside), the commands of the
// inits it started die with it, the runs waiting for them end, and the next command
// gets a new spawner.
func TestSpawnerGone(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{Pool: -1})
	first := e.SpawnerPid()
	if first == 0 {
		t.Fatal("a probed Executor has no spawner")
	}
	if comm, err := os.ReadFile("/proc/" + strconv.Itoa(first) + "/cmdline"); err != nil || !strings.Contains(string(comm), "spawn") {
		t.Fatalf("pid %d is not the spawner: %q, %v", first, comm, err)
	}
	running, wait := runAsync(e, executor.Spec{Script: nsScript + "sleep 100", Dir: ws, Timeout: 60 * time.Second})
	ino := sandboxNamespace(t, ws, running)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var res executor.Result
	var err error
	go func() { res, err = wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20 s of its spawner's death")
	}
	if err == nil && res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("Run = %+v, want the command killed (exit 137) or an error", res)
	}
	noSurvivors(t, ino, 5*time.Second)

	res = run(t, e, ws, "echo again")
	if res.ExitCode != 0 || res.Stdout != "again\n" {
		t.Fatalf("after the spawner's death: %+v", res)
	}
	if again := e.SpawnerPid(); again == 0 || again == first {
		t.Errorf("spawner pid after its death = %d, want a new one (the dead one was %d)", again, first)
	}
}

// TestSpawnerClose: Close ends the spawner.
func TestSpawnerClose(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	if res := run(t, e, ws, "true"); res.ExitCode != 0 {
		t.Fatalf("true: %+v", res)
	}
	pid := e.SpawnerPid()
	if pid == 0 {
		t.Fatal("a probed Executor has no spawner")
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Reaped by Close: the pid names no process of ours any more (or, reused, another
	// program).
	if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && strings.Contains(string(cmd), linux.HelperName) {
		t.Errorf("the spawner %d is still there after Close: %q", pid, cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Run(ctx, executor.Spec{Script: "true", Dir: ws, Timeout: time.Second}); err == nil {
		t.Error("Run after Close succeeded")
	}
}

// TestSpawnerBadRequest: a request without the five descriptors an init needs is
// refused with the reason, and the spawner goes on serving.
func TestSpawnerBadRequest(t *testing.T) {
	t.Parallel()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, n := range []int{0, 1, 4} {
		files := make([]*os.File, n)
		for i := range files {
			files[i] = null
		}
		first, after := linux.SpawnWith(helper, files)
		if first == nil || !strings.Contains(first.Error(), "want 5") {
			t.Errorf("%d descriptors: %v, want a refusal naming the 5 descriptors", n, first)
		}
		if after != nil {
			t.Errorf("after a request with %d descriptors, a good one: %v", n, after)
		}
	}
}

// TestHelperByHand: cmdgate-sandbox run by hand, in any of its roles, says what is
// wrong and exits without doing anything.
func TestHelperByHand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 125, "started without its descriptors"},
		{[]string{"spawn"}, 125, "started without its socket"},
		{[]string{"run"}, 2, "give either -c SCRIPT or -- ARGV"},
		{[]string{"run", "-c", "true", "--", "true"}, 2, "give either -c SCRIPT or -- ARGV"},
		{[]string{"run", "-bogus"}, 1, "flag provided but not defined"},
	} {
		cmd := exec.Command(helper, tc.args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("cmdgate-sandbox %q: %v, stderr %q; want exit %d and %q", tc.args, err, stderr.String(), tc.code, tc.stderr)
		}
	}
}

// TestSpawnerCPUs: the spawner keeps its threads on one CPU (copy-on-write faults after
// each init's start then flush no other CPU's TLB), but the command, and whatever it
// starts, runs on every CPU this process may use, from a pooled sandbox or one built
// for it.
func TestSpawnerCPUs(t *testing.T) {
	t.Parallel()
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	want := cpuList(t, "/proc/self/status")
	for _, pool := range []int{0, -1} {
		e, ws := newExecutor(t, linux.Options{Pool: pool})
		// The command's shell, and a process it starts.
		res := run(t, e, ws, `grep Cpus_allowed_list /proc/self/status | cut -f2; sh -c 'grep Cpus_allowed_list /proc/self/status' | cut -f2`)
		if res.ExitCode != 0 {
			t.Fatalf("pool %d: %+v", pool, res)
		}
		if got := strings.Fields(res.Stdout); len(got) != 2 || got[0] != want || got[1] != want {
			t.Errorf("pool %d: the command's CPUs are %q, want %q twice (this process's)", pool, got, want)
		}
		sp := e.SpawnerPid()
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(sp) + "/task")
		if err != nil || len(tasks) == 0 {
			t.Fatalf("threads of the spawner %d: %v", sp, err)
		}
		first := ""
		for _, task := range tasks {
			got := cpuList(t, "/proc/"+strconv.Itoa(sp)+"/task/"+task.Name()+"/status")
			if first == "" {
				first = got
			} else if got != first {
				t.Errorf("spawner thread %s: CPUs %q, another thread's are %q: want them all on one", task.Name(), got, first)
			}
			if mine.Count() == 1 && got != want {
				t.Errorf("spawner thread %s: CPUs %q, want this process's only one, %q", task.Name(), got, want)
			}
			cpu, err := strconv.Atoi(got)
			if mine.Count() > 1 && (err != nil || !mine.IsSet(cpu)) {
				t.Errorf("spawner thread %s: CPUs %q, want one of this process's (%q)", task.Name(), got, want)
			}
		}
	}
}

// cpuList is the Cpus_allowed_list of a status file of /proc.
func cpuList(t *testing.T, status string) string {
	t.Helper()
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no Cpus_allowed_list", status)
	return ""
}

// TestInitCPUsInvalid: New refuses an init CPU that is no CPU number.
func TestInitCPUsInvalid(t *testing.T) {
	t.Parallel()
	for _, cpus := range [][]int{{-1}, {0, 1 << 20}} {
		if e, err := linux.New(linux.Options{Workspace: t.TempDir(), Helper: helper, InitCPUs: cpus}); err == nil || !strings.Contains(err.Error(), "not a CPU number") {
			if e != nil {
				e.Close()
			}
			t.Errorf("New with InitCPUs %v: %v, want an error naming the CPU", cpus, err)
		}
	}
}
