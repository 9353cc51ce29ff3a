// Package testenv lets tests skip when the machine lacks something they need, except
// under CI=true, where a missing prerequisite fails the test so CI proves every feature;
// and builds the programs tests run for real.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// CI reports whether the tests run under CI (CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// Skip skips the test with the reason, or fails it under CI.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("CI=true forbids skipping: "+format, args...)
	}
	t.Skipf(format, args...)
}

// NeedCommand returns the path of the named program, skipping (or failing under CI)
// when it is not installed.
func NeedCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, "%s is not installed: %v", name, err)
	}
	return p
}

// BuildHelper builds the cmdgate-sandbox program from the source under test into a new
// temporary directory, without cgo as `make build` builds it, for a TestMain. The caller
// removes the directory it returns.
func BuildHelper() (path, dir string, err error) {
	dir, err = os.MkdirTemp("", "cmdgate-sandbox-test")
	if err != nil {
		return "", "", err
	}
	path, err = buildInto(dir, "cmdgate-sandbox", "github.com/cmdgate/cmdgate/cmd/cmdgate-sandbox")
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return path, dir, nil
}

// BuildCmdgate builds the cmdgate program and, beside it, cmdgate-sandbox, for tests
// that need the real program as a separate process (the job host). They go to a
// directory of the system's temporary one named after the user and name (one per test
// package), replaced on every build (each program is built aside, then renamed over the
// old one, which a job host left by an earlier run may still be running), so runs do
// not pile builds up. It returns the cmdgate program's path.
func BuildCmdgate(name string) (string, error) {
	if _, err := buildProgram(name, "cmdgate-sandbox", "github.com/cmdgate/cmdgate/cmd/cmdgate-sandbox"); err != nil {
		return "", err
	}
	return buildProgram(name, "cmdgate", "github.com/cmdgate/cmdgate/cmd/cmdgate")
}

// BuildSpawnFloor builds internal/spawnfloor, the benchmarks' floor for a sandboxed
// run built of Go programs, as BuildCmdgate builds cmdgate, and returns its path.
func BuildSpawnFloor(name string) (string, error) {
	return buildProgram(name, "spawnfloor", "github.com/cmdgate/cmdgate/internal/spawnfloor")
}

// buildProgram builds the package pkg with buildInto to out in the directory of
// BuildCmdgate's name, and returns its path.
func buildProgram(name, out, pkg string) (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("cmdgate-test-%d-%s", os.Getuid(), name))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return buildInto(dir, out, pkg)
}

// buildInto builds the package pkg without cgo, as `make build` builds the programs,
// aside in dir, then renames it to out there (over a program that may still be
// running), and returns its path.
func buildInto(dir, out, pkg string) (string, error) {
	tmp, err := os.CreateTemp(dir, ".build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	cmd := exec.Command("go", "build", "-o", tmp.Name(), pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, b)
	}
	path := filepath.Join(dir, out)
	return path, os.Rename(tmp.Name(), path)
}

// Processes lists the live processes (zombies left out) whose command line, split into
// its arguments, match accepts; it only looks (Linux /proc; none elsewhere).
func Processes(match func(args []string) bool) []int {
	return live(func(pid string, _ []string) bool {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		return err == nil && match(strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"))
	})
}

// Children lists the live processes (zombies left out) whose parent is pid.
func Children(pid int) []int {
	parent := strconv.Itoa(pid)
	return live(func(_ string, stat []string) bool { return len(stat) > 1 && stat[1] == parent })
}

// live lists the processes of /proc that keep accepts, given the pid and the fields of
// /proc/<pid>/stat after the command's name (state, parent's pid, ...; nil when it
// cannot be read), zombies (exited, not reaped yet) left out.
func live(keep func(pid string, stat []string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var stat []string
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i >= 0 {
				stat = strings.Fields(string(st[i+1:]))
			}
		}
		if len(stat) > 0 && stat[0] == "Z" || !keep(e.Name(), stat) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// StatusField is the value of key in process pid's /proc status file ("SigIgn",
// "NSpid", ...), trimmed, or "" when it cannot be read or has no such line.
func StatusField(pid int, key string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// SigIgnored is the set of signals process pid ignores, as its status file's SigIgn
// mask (bit n-1 for signal n), or 0 when it cannot be read.
func SigIgnored(pid int) uint64 {
	v, _ := strconv.ParseUint(StatusField(pid, "SigIgn"), 16, 64)
	return v
}

// ProcessesWith lists the live processes whose command line, its arguments joined by
// NUL bytes, contains marker (which may span arguments: "sleep\x00" + "1000.5").
func ProcessesWith(marker string) []int {
	return Processes(func(args []string) bool { return strings.Contains(strings.Join(args, "\x00"), marker) })
}

// JobHosts lists the job hosts (`cmdgate job host … --root ROOT`) whose root is root or
// lies under it.
func JobHosts(root string) []int {
	return Processes(func(args []string) bool {
		host := false
		for i := 0; i+1 < len(args); i++ {
			host = host || args[i] == "job" && args[i+1] == "host"
			if host && args[i] == "--root" && (args[i+1] == root || strings.HasPrefix(args[i+1], root+string(os.PathSeparator))) {
				return true
			}
		}
		return false
	})
}

// MachineCPU starts counting the CPU time the whole machine spends busy (user, system
// and interrupts: not idle, not waiting for I/O, not stolen), from /proc/stat; the
// function it returns reports it per iteration, as "machine-cpu-µs/op". A benchmark
// whose work spreads over other processes and goroutines (sandboxes built ahead, the
// audit's writer) cannot run back to back faster than this divided by the processor
// count, whatever its own wall time says. It counts every process of the machine, so
// it means something on a quiet one only; nothing is reported where /proc/stat cannot
// be read. Call the returned function once the benchmark's loop is over.
func MachineCPU(b *testing.B) (report func()) {
	start, ok := busyTicks()
	return func() {
		end, ok2 := busyTicks()
		if ok && ok2 && b.N > 0 {
			// /proc/stat counts in USER_HZ ticks, 100 per second on every Linux ABI.
			b.ReportMetric(float64(end-start)*1e4/float64(b.N), "machine-cpu-µs/op")
		}
	}
}

// busyTicks is the sum of the busy fields of /proc/stat's cpu line: user, nice, system,
// irq and softirq (guest time is within user).
func busyTicks() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var sum uint64
	for _, i := range []int{1, 2, 3, 6, 7} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += v
	}
	return sum, true
}
