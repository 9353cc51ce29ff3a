package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// runBin runs the program bin with args in dir and returns what it printed and its
// exit status.
func runBin(t *testing.T, dir string, env []string, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return out.String(), errb.String(), code
}

// handoverEnv builds cmdgate for a test of `sandbox run` and returns it with a new
// workspace and an empty configuration file (cmdgate's defaults, but run by cmdgate
// itself); a host where the linux sandbox cannot be built skips (fails under CI).
func handoverEnv(t *testing.T) (bin, ws, empty string) {
	t.Helper()
	bin, err := testenv.BuildCmdgate("handover")
	if err != nil {
		t.Fatal(err)
	}
	ws = t.TempDir()
	empty = filepath.Join(t.TempDir(), "cmdgate.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runBin(t, ws, nil, bin, "sandbox", "check", "--workspace", ws); code != 0 {
		testenv.Skip(t, "the linux sandbox cannot be built here: %s", stderr)
	}
	return bin, ws, empty
}

// TestSandboxRunHandover: cmdgate hands an ordinary `sandbox run` over to
// cmdgate-sandbox before the policy engine's initialisers run, and the run handed over
// prints and exits exactly as cmdgate's own does (forced here by a configuration file,
// empty: the same defaults).
func TestSandboxRunHandover(t *testing.T) {
	t.Parallel()
	bin, ws, empty := handoverEnv(t)
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	// The initialisers that ran: the handover's are cmdgate's first ones, then
	// cmdgate-sandbox's; cmdgate's own run goes through the policy engine's.
	trace := []string{"GODEBUG=inittrace=1"}
	const opa, helperInit = "init github.com/open-policy-agent/opa/v1/ast @", "init github.com/cmdgate/cmdgate/executor/linux/sandboxinit @"
	stdout, stderr, code := runBin(t, ws, trace, bin, "sandbox", "run", "--workspace", ws, "--", "/bin/echo", "hi")
	if code != 0 || stdout != "hi\n" || strings.Contains(stderr, opa) || !strings.Contains(stderr, helperInit) {
		t.Errorf("handed over: exit %d, stdout %q; the policy engine initialised: %v; cmdgate-sandbox ran: %v",
			code, stdout, strings.Contains(stderr, opa), strings.Contains(stderr, helperInit))
	}
	// And it hands over as soon as the packages it imports are initialised: os is the
	// last of them with initialisers. (Importing a package late in the alphabet, such
	// as strings, made 56 other packages initialise between os and the handover.)
	if after, ok := initsAfter(stderr, "os"); !ok || len(after) > 2 {
		t.Errorf("cmdgate initialised os: %v; then, before handing over: %q; want at most 2", ok, after)
	}
	stdout, stderr, code = runBin(t, ws, trace, bin, "sandbox", "run", "--config", empty, "--workspace", ws, "--", "/bin/echo", "hi")
	if code != 0 || stdout != "hi\n" || !strings.Contains(stderr, opa) {
		t.Errorf("with --config: exit %d, stdout %q; the policy engine initialised: %v (cmdgate ran it)", code, stdout, strings.Contains(stderr, opa))
	}

	for _, args := range [][]string{
		{"-c", "echo out; echo err >&2; exit 3"},
		{"--", "/bin/echo", "hello", "--", "x"},
		{"--cwd", "sub", "-c", "pwd; ls /"},
		{"--cwd", "/", "--", "/bin/true"},
		{"--", "no-such-program-xyz"},
		{"--timeout", "1s", "-c", "echo before; sleep 10"},
		{"-c", "head -c 3000000 /dev/zero | tr '\\0' x"},
		{"--network=false", "-c", "cat /proc/self/status | grep -c ^Cap"},
	} {
		full := append([]string{"sandbox", "run", "--workspace", ws}, args...)
		viaConfig := append([]string{"sandbox", "run", "--config", empty, "--workspace", ws}, args...)
		o1, e1, c1 := runBin(t, ws, nil, bin, full...)
		o2, e2, c2 := runBin(t, ws, nil, bin, viaConfig...)
		if o1 != o2 || e1 != e2 || c1 != c2 {
			t.Errorf("%q: handed over: exit %d, stdout %q, stderr %q\ncmdgate's own: exit %d, stdout %q, stderr %q",
				args, c1, trim(o1), trim(e1), c2, trim(o2), trim(e2))
		}
	}
}

// initsAfter returns the packages whose initialisers the first program of a
// GODEBUG=inittrace=1 trace ran after pkg's, up to its end: the trace of the next
// program (the one it executed) starts again with the package it started with. ok is
// false when pkg's is not in the first program's trace.
func initsAfter(trace, pkg string) (after []string, ok bool) {
	var first string
	for line := range strings.Lines(trace) {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "init" || !strings.HasPrefix(f[2], "@") {
			continue
		}
		switch {
		case first == "":
			first = f[1]
		case f[1] == first:
			return after, ok
		}
		if ok {
			after = append(after, f[1])
		}
		ok = ok || f[1] == pkg
	}
	return after, ok
}

// trim shortens long output in failure messages.
func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestSandboxRunCPUs: cmdgate-sandbox keeps its own threads on one CPU while it starts
// the init (linux.KeepToOneCPU), but the command runs on every CPU the caller may use,
// as it does when cmdgate runs it itself.
func TestSandboxRunCPUs(t *testing.T) {
	t.Parallel()
	bin, ws, empty := handoverEnv(t)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			want = strings.TrimSpace(v) + "\n"
		}
	}
	const script = "sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status"
	for _, args := range [][]string{
		{"sandbox", "run", "--workspace", ws, "-c", script},
		{"sandbox", "run", "--config", empty, "--workspace", ws, "-c", script},
	} {
		if stdout, stderr, code := runBin(t, ws, nil, bin, args...); code != 0 || stdout != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the CPUs of this process, %q", args, code, stdout, stderr, want)
		}
	}
}

// TestSandboxCheck: `cmdgate sandbox check` says what the sandbox enforces here and how
// long its build took, step by step.
func TestSandboxCheck(t *testing.T) {
	t.Parallel()
	bin, ws, _ := handoverEnv(t)
	stdout, stderr, code := runBin(t, ws, nil, bin, "sandbox", "check", "--workspace", ws)
	if code != 0 {
		t.Fatalf("sandbox check: exit %d\n%s", code, stderr)
	}
	var got struct {
		OK       bool   `json:"ok"`
		Type     string `json:"type"`
		Landlock int    `json:"landlock"`
		Build    struct {
			TotalUS int64 `json:"total_us"`
			Steps   []struct {
				Step string `json:"step"`
				US   int64  `json:"us"`
			} `json:"steps"`
		} `json:"build"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("sandbox check printed %q: %v", stdout, err)
	}
	steps := map[string]bool{}
	for _, s := range got.Build.Steps {
		steps[s.Step] = true
	}
	if !got.OK || got.Type != "sandbox.check" || got.Landlock < 3 || got.Build.TotalUS <= 0 ||
		!steps["start"] || !steps["root"] || !steps["landlock"] || !steps["seccomp"] {
		t.Errorf("sandbox check = %s, want ok, Landlock 3 or later, and the build's total and steps (start, root, landlock, seccomp among them)", stdout)
	}
}
