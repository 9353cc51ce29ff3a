package process_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

var markers atomic.Int64

// newMarker returns a string unique to this test run, and registers a cleanup that kills,
// by PID, any process still carrying it: only processes the test started carry it.
func newMarker(t *testing.T) string {
	t.Helper()
	m := fmt.Sprintf("exectest-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), markers.Add(1))
	t.Cleanup(func() {
		for _, pid := range survivors(t, m) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return m
}

// marked prefixes script with the marker: in the shell's command line (which the
// subshells it forks share) and in the environment of every program it executes.
func marked(marker, script string) string {
	return fmt.Sprintf("export EXECTEST_MARKER=%s; : %s; %s", marker, marker, script)
}

// survivors lists the live (not zombie) processes whose command line or environment
// holds marker.
func survivors(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list processes: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:]); len(f) == 0 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		for _, file := range []string{"cmdline", "environ"} {
			b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), file))
			if bytes.Contains(b, []byte(marker)) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// tree starts background jobs, nested pipelines and a grandchild shell with its own
// pipeline and background job, all of which would outlive the command if left alone.
const tree = `sleep 300 & (sleep 300 | cat) & (sleep 300; echo never) & bash -c 'sleep 300 & sleep 300 | cat' & `

// Seed 000 section 11: after a timeout no process of the command survives, whatever it
// started.
func TestRunTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	m := newMarker(t)
	res := run(t, process.New(process.Options{}), executor.Spec{
		Script:  marked(m, tree+"echo started; sleep 300"),
		Dir:     t.TempDir(),
		Timeout: 500 * time.Millisecond,
	})
	if res.ExitCode != 124 || !res.TimedOut || res.Stdout != "started\n" {
		t.Errorf("Run(tree) = exit %d, timed out %v, stdout %q; want 124, true, started", res.ExitCode, res.TimedOut, res.Stdout)
	}
	if pids := survivors(t, m); len(pids) > 0 {
		t.Errorf("after the timeout processes %v survive", pids)
	}
}

// The same tree stopped by cancellation; the survivor scan first sees the tree alive, so
// it is known to find what it looks for.
func TestRunCancelKillsTree(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	m := newMarker(t)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type outcome struct {
		res executor.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := process.New(process.Options{}).Run(ctx, executor.Spec{
			Script: marked(m, tree+"touch ready; sleep 300"),
			Dir:    dir,
		})
		done <- outcome{res, err}
	}()
	// Wait for the tree: the shell and its subshells, 6 sleeps, 2 cats, the grandchild
	// shell (11 processes once all have started).
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Stat(ready)
		pids := survivors(t, m)
		if err == nil && len(pids) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command did not start its tree: the scan finds %v", pids)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	got := <-done
	if !errors.Is(got.err, context.Canceled) || got.res.TimedOut {
		t.Errorf("Run(canceled tree) = %+v, %v; want context.Canceled, not timed out", got.res, got.err)
	}
	if pids := survivors(t, m); len(pids) > 0 {
		t.Errorf("after cancellation processes %v survive", pids)
	}
}

// A tree that ignores SIGTERM is killed once the grace has passed.
func TestRunTimeoutIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	m := newMarker(t)
	e := process.New(process.Options{Config: executor.Config{KillGrace: 200 * time.Millisecond}})
	res := run(t, e, executor.Spec{
		Script:  marked(m, "trap '' TERM; "+tree+"echo started; sleep 300"),
		Dir:     t.TempDir(),
		Timeout: 300 * time.Millisecond,
	})
	if res.ExitCode != 124 || !res.TimedOut || res.Stdout != "started\n" {
		t.Errorf("Run(tree ignoring SIGTERM) = exit %d, timed out %v, stdout %q; want 124, true, started",
			res.ExitCode, res.TimedOut, res.Stdout)
	}
	if pids := survivors(t, m); len(pids) > 0 {
		t.Errorf("after the timeout processes %v survive", pids)
	}
}

// A background job left by a command that finished does not outlive the run, whether or
// not it holds the output pipes, and does not hold the run up.
func TestRunKillsLeftovers(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	m := newMarker(t)
	res := run(t, process.New(process.Options{}), executor.Spec{
		Script: marked(m, tree+"(sleep 300 >/dev/null 2>&1 </dev/null &); echo done"),
		Dir:    t.TempDir(),
	})
	if res.ExitCode != 0 || res.TimedOut || res.Stdout != "done\n" {
		t.Errorf("Run(leave jobs behind) = exit %d, timed out %v, stdout %q; want 0, false, done", res.ExitCode, res.TimedOut, res.Stdout)
	}
	if pids := survivors(t, m); len(pids) > 0 {
		t.Errorf("after the command ended processes %v survive", pids)
	}
}

// A process that leaves the tree (setsid) escapes the process backend (documented), but
// holding the output pipe it cannot hang the run: reading stops after WaitDelay.
func TestRunEscapeeDoesNotHang(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	testenv.NeedCommand(t, "setsid")
	m := newMarker(t)
	dir := t.TempDir()
	e := process.New(process.Options{Config: executor.Config{WaitDelay: 200 * time.Millisecond}})
	res := run(t, e, executor.Spec{
		Script:  marked(m, `setsid sh -c 'echo $$ > escapee; exec sleep 300' & until [ -s escapee ]; do sleep 0.01; done; echo started`),
		Dir:     dir,
		Timeout: 30 * time.Second,
	})
	if res.ExitCode != 0 || res.Stdout != "started\n" {
		t.Errorf("Run(escapee) = exit %d, stdout %q; want 0, started", res.ExitCode, res.Stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "escapee"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if pids := survivors(t, m); !cmp.Equal(pids, []int{pid}) {
		t.Errorf("after the run, marked processes are %v, want the escapee %d only", pids, pid)
	}
	// newMarker's cleanup kills the escapee.
}

// The command leads its own session and process group, without a controlling terminal.
func TestRunSessionLeader(t *testing.T) {
	t.Parallel()
	res := run(t, process.New(process.Options{}), executor.Spec{
		Script: `echo "$$ $$ 0"; cut -d' ' -f5-7 /proc/$$/stat`, // pgrp, session, tty_nr
		Dir:    t.TempDir(),
	})
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 2 || lines[0] != lines[1] {
		t.Errorf("Run(group, session, tty) = %q, want the shell's PID twice and tty 0", res.Stdout)
	}
}

// limits parses /proc/PID/limits text into "Max open files" → {soft, hard}.
func limits(t *testing.T, text string) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Max ") || len(line) < 26 {
			continue
		}
		f := strings.Fields(line[26:])
		if len(f) >= 2 {
			out[strings.TrimSpace(line[:26])] = [2]string{f[0], f[1]}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no limits in %q", text)
	}
	return out
}

// The rlimits are in effect for the command. Stdin is written only once they are set,
// so a command that reads it first sees them deterministically.
func TestRunRlimits(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	self, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Fatal(err)
	}
	own := limits(t, string(self))
	hardMin := func(name string, v int64) string {
		if h, err := strconv.ParseInt(own[name][1], 10, 64); err == nil && h < v {
			return own[name][1]
		}
		return strconv.FormatInt(v, 10)
	}
	both := func(v string) [2]string { return [2]string{v, v} }
	tests := []struct {
		name string
		res  executor.Resources
		want map[string][2]string
	}{
		{"defaults", executor.Resources{}, map[string][2]string{
			"Max core file size": both("0"),
			"Max file size":      both(hardMin("Max file size", 8<<30)),
			"Max open files":     both(hardMin("Max open files", 8192)),
			"Max processes":      own["Max processes"],
		}},
		{"configured", executor.Resources{CoreDumps: true, FileSize: 1 << 20, OpenFiles: 64, Processes: 4096}, map[string][2]string{
			"Max core file size": own["Max core file size"],
			"Max file size":      both("1048576"),
			"Max open files":     both("64"),
			"Max processes":      both(hardMin("Max processes", 4096)),
		}},
		{"inherited", executor.Resources{CoreDumps: true, FileSize: executor.Inherit, OpenFiles: executor.Inherit}, map[string][2]string{
			"Max core file size": own["Max core file size"],
			"Max file size":      own["Max file size"],
			"Max processes":      own["Max processes"],
		}},
	}
	e := process.New(process.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, e, executor.Spec{Script: "read go; cat /proc/self/limits", Stdin: "go\n", Dir: t.TempDir(), Resources: tt.res})
			got := limits(t, res.Stdout)
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("Run(%+v): %s = %v, want %v", tt.res, name, got[name], want)
				}
			}
		})
	}
}

// A write beyond the file size limit fails: the limit is enforced, not just listed.
func TestRunFileSizeLimit(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	res := run(t, process.New(process.Options{}), executor.Spec{
		Script:    "read go; head -c 10000 /dev/zero > big; echo status $?; wc -c < big",
		Stdin:     "go\n",
		Dir:       dir,
		Resources: executor.Resources{FileSize: 4096},
	})
	// head is ended by SIGXFSZ (25): 128+25.
	if want := "status 153\n4096\n"; res.Stdout != want {
		t.Errorf("Run(write 10000 bytes under a 4096-byte limit) = %q, stderr %q; want %q", res.Stdout, res.Stderr, want)
	}
}

// Without bash the Linux default shell falls back to sh.
func TestRunShellFallback(t *testing.T) {
	sh := testenv.NeedCommand(t, "sh")
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	script := `echo "${BASH_VERSION:-no bash}"`
	e := process.New(process.Options{})
	if res := run(t, e, executor.Spec{Script: script, Dir: dir}); strings.TrimSpace(res.Stdout) == "no bash" {
		t.Fatalf("Run(%q) with bash in PATH = %q, want a bash version", script, res.Stdout)
	}
	if sh, err := filepath.EvalSymlinks(sh); err == nil && filepath.Base(sh) == "bash" {
		testenv.Skip(t, "sh is bash here")
	}
	bin := t.TempDir()
	if err := os.Symlink(sh, filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if res := run(t, e, executor.Spec{Script: script, Dir: dir}); strings.TrimSpace(res.Stdout) != "no bash" {
		t.Errorf("Run(%q) with only sh in PATH = %q, want %q", script, res.Stdout, "no bash")
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := e.Run(t.Context(), executor.Spec{Script: script, Dir: dir}); !errors.Is(err, executor.ErrInternal) {
		t.Errorf("Run(%q) with no shell in PATH error = %v, want INTERNAL", script, err)
	}
}
