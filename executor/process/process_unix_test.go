//go:build !windows

package process_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	e := process.New(process.Options{})
	tests := []struct {
		spec executor.Spec
		want int
	}{
		{executor.Spec{Script: "exit 3"}, 3},
		{executor.Spec{Script: "true | false"}, 1},
		{executor.Spec{Argv: []string{"false"}, ShellMode: executor.ShellDirect}, 1},
		// 128+N when signal N ends the command.
		{executor.Spec{Script: "kill -TERM $$"}, 143},
		{executor.Spec{Argv: []string{"sh", "-c", "kill -KILL $$"}, ShellMode: executor.ShellDirect}, 137},
		// The shell's own statuses for what it cannot run.
		{executor.Spec{Argv: []string{"exectest-no-such-command"}}, 127},
		{executor.Spec{Argv: []string{"if"}}, 127}, // quoted: a command name, not a keyword
	}
	for _, tt := range tests {
		tt.spec.Dir = dir
		if res := run(t, e, tt.spec); res.ExitCode != tt.want || res.TimedOut {
			t.Errorf("Run(%q) = exit %d (timed out %v), want %d", command(tt.spec), res.ExitCode, res.TimedOut, tt.want)
		}
	}
	res := run(t, e, executor.Spec{Argv: []string{"exectest-no-such-command"}, Dir: dir})
	if !strings.Contains(res.Stderr, "exectest-no-such-command") {
		t.Errorf("Run(unknown command through the shell).Stderr = %q, want the name", res.Stderr)
	}
}

// Seed 000 section 11: a timeout stops the command, answers exit 124 and timed_out, and
// keeps the output written until then.
func TestRunTimeoutKeepsPartialOutput(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	res := run(t, process.New(process.Options{}), executor.Spec{
		Script:  "echo partial; echo oops >&2; sleep 300; echo never",
		Dir:     t.TempDir(),
		Timeout: 300 * time.Millisecond,
	})
	want := executor.Result{ExitCode: 124, TimedOut: true, Stdout: "partial\n", Stderr: "oops\n", StdoutBytes: 8, StderrBytes: 5}
	got := executor.Result{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Stdout: res.Stdout, Stderr: res.Stderr,
		StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Run(timed out) mismatch (-want +got):\n%s", diff)
	}
}

// Seed 000 section 11: each stream is capped by characters, separately.
func TestRunTruncation(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	e := process.New(process.Options{})
	tests := []struct {
		name                     string
		script                   string
		stdout, stderr           string
		stdoutTrunc, stderrTrunc bool
		stdoutBytes, stderrBytes int64
	}{
		{
			name:   "stdout over the cap",
			script: "head -c 5000 /dev/zero | tr '\\0' a; echo fine >&2",
			stdout: strings.Repeat("a", 1000), stdoutTrunc: true, stdoutBytes: 5000,
			stderr: "fine\n", stderrBytes: 5,
		},
		{
			name:   "stderr over the cap",
			script: "echo fine; head -c 5000 /dev/zero | tr '\\0' b >&2",
			stdout: "fine\n", stdoutBytes: 5,
			stderr: strings.Repeat("b", 1000), stderrTrunc: true, stderrBytes: 5000,
		},
		{
			name:   "exactly the cap is not truncated",
			script: "printf '%1000s' '' | tr ' ' c",
			stdout: strings.Repeat("c", 1000), stdoutBytes: 1000,
		},
		{
			name:   "multi-byte characters counted as characters",
			script: "for i in $(seq 600); do printf 'あい'; done",
			stdout: strings.Repeat("あい", 500), stdoutTrunc: true, stdoutBytes: 3600,
		},
		{
			name:   "invalid UTF-8 replaced, not dropped",
			script: "printf 'a\\377b\\343\\201'",
			stdout: "a\uFFFDb\uFFFD\uFFFD", stdoutBytes: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, e, executor.Spec{Script: tt.script, Dir: dir, MaxOutputChars: 1000})
			want := executor.Result{Stdout: tt.stdout, Stderr: tt.stderr, StdoutTruncated: tt.stdoutTrunc,
				StderrTruncated: tt.stderrTrunc, StdoutBytes: tt.stdoutBytes, StderrBytes: tt.stderrBytes}
			got := executor.Result{Stdout: res.Stdout, Stderr: res.Stderr, StdoutTruncated: res.StdoutTruncated,
				StderrTruncated: res.StderrTruncated, StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Run(%q) mismatch (-want +got):\n%s", tt.script, diff)
			}
			if utf8.RuneCountInString(res.Stdout) > 1000 || !utf8.ValidString(res.Stdout) {
				t.Errorf("Run(%q).Stdout has %d characters (valid %v), want at most 1000, valid", tt.script,
					utf8.RuneCountInString(res.Stdout), utf8.ValidString(res.Stdout))
			}
		})
	}
}

// Seed 000 section 11: stdin reaches the command as given.
func TestRunStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := process.New(process.Options{})
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB, more than a pipe holds
	tests := []struct {
		name string
		spec executor.Spec
		want string
	}{
		{"text", executor.Spec{Argv: []string{"cat"}, ShellMode: executor.ShellDirect, Stdin: "héllo\nwörld 🙂"}, "héllo\nwörld 🙂"},
		{"NUL bytes", executor.Spec{Argv: []string{"cat"}, ShellMode: executor.ShellDirect, Stdin: "a\x00b"}, "a\x00b"},
		{"larger than a pipe", executor.Spec{Argv: []string{"wc", "-c"}, ShellMode: executor.ShellDirect, Stdin: big}, strconv.Itoa(len(big))},
		{"not read by the command", executor.Spec{Script: "echo ignored", Stdin: big}, "ignored"},
		{"empty: end of file at once", executor.Spec{Script: "cat; read x; echo status $?"}, "status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.spec.Dir = dir
			res := run(t, e, tt.spec)
			if got := strings.TrimSpace(res.Stdout); got != strings.TrimSpace(tt.want) || res.ExitCode != 0 {
				t.Errorf("Run(%q, stdin of %d bytes) = exit %d, %q; want 0, %q", command(tt.spec), len(tt.spec.Stdin),
					res.ExitCode, truncate(got), truncate(tt.want))
			}
		})
	}
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// The argv of a ShellDefault request reaches the program word for word through every
// POSIX shell at hand, however hostile the words.
func TestRunArgvQuotingRoundTrip(t *testing.T) {
	t.Parallel()
	words := []string{
		"", " ", "a b", "  lead", "'", "''", `"`, `\`, `\'`, "a'b\"c", "$HOME", "${HOME}", "`id`", "$(id)",
		"*", "?", "[a]", "{a,b}", "~", "~root", "a=b", "=ls", "#c", "x#y", ";", "&", "&&", "|", ">", "<", "!", "!!",
		"\n", "\t", "\r", "line1\nline2", "\x01\x7f", "\x1b[31m", "é", "あ", "🙂", "\u200b", "-n", "--", "-e",
		"if", "then", "time", "%s", "%", "a,b", "a:b", "@", "+x", "./x", "a/b",
	}
	want := strings.Join(words, "\x00") + "\x00"
	shells := 0
	for _, sh := range [][]string{{"bash", "-c"}, {"sh", "-c"}, {"dash", "-c"}, {"zsh", "-c"}} {
		path, err := exec.LookPath(sh[0])
		if err != nil {
			continue
		}
		shells++
		e := process.New(process.Options{Shell: []string{path, sh[1]}})
		argv := append([]string{"printf", `%s\0`}, words...)
		res := run(t, e, executor.Spec{Argv: argv, Dir: t.TempDir()})
		if res.Stdout != want || res.ExitCode != 0 {
			t.Errorf("%s: Run(printf words) = exit %d, stderr %q, mismatch (-want +got):\n%s",
				sh[0], res.ExitCode, res.Stderr, cmp.Diff(strings.Split(want, "\x00"), strings.Split(res.Stdout, "\x00")))
		}
	}
	if shells == 0 {
		testenv.Skip(t, "no POSIX shell in PATH")
	}
}

// ShellDirect resolves a relative path against the command's cwd, not the gateway's.
func TestRunDirectRelativePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"hi from $PWD: $*\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "hello"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, process.New(process.Options{}), executor.Spec{Argv: []string{"./bin/hello", "a b"}, ShellMode: executor.ShellDirect, Dir: dir})
	if want := "hi from " + dir + ": a b\n"; res.Stdout != want {
		t.Errorf("Run(./bin/hello) = %q, want %q", res.Stdout, want)
	}
}

// A script beyond what execve accepts for one argument is refused, not cut.
func TestRunScriptTooLong(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	script := "echo " + strings.Repeat("x", 200<<10)
	_, err := process.New(process.Options{}).Run(t.Context(), executor.Spec{Script: script, Dir: t.TempDir()})
	if !errors.Is(err, executor.ErrInvalidArgument) {
		t.Errorf("Run(200 KiB script) error = %v, want INVALID_ARGUMENT", err)
	}
}

// In the inherit mode the command gets the gateway's environment, minus the denylist.
func TestRunEnvironment(t *testing.T) {
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	inject := filepath.Join(dir, "inject.sh")
	if err := os.WriteFile(inject, []byte("echo BASH_ENV was sourced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EXECTEST_INHERITED", "inherited value")
	t.Setenv("EXECTEST_SECRET", "configured secret")
	t.Setenv("CMDGATE_TOKEN", "gateway token")
	t.Setenv("BASH_ENV", inject)
	t.Setenv("BASH_FUNC_echo%%", "() { builtin echo hijacked; }")
	e := process.New(process.Options{Config: executor.Config{EnvMode: executor.EnvInherit, EnvDeny: []string{"EXECTEST_SEC*"}}})
	res := run(t, e, executor.Spec{
		Script: `echo "[$EXECTEST_INHERITED] [$EXECTEST_SECRET] [$CMDGATE_TOKEN] [$BASH_ENV]"`,
		Dir:    dir,
	})
	if want := "[inherited value] [] [] []\n"; res.Stdout != want {
		t.Errorf("Run(print environment) = %q, want %q", res.Stdout, want)
	}
	res = run(t, e, executor.Spec{Argv: []string{"env"}, ShellMode: executor.ShellDirect, Dir: dir})
	for _, leak := range []string{"CMDGATE_TOKEN", "EXECTEST_SECRET", "BASH_FUNC_", "BASH_ENV"} {
		if strings.Contains(res.Stdout, leak) {
			t.Errorf("Run(env) shows %s:\n%s", leak, res.Stdout)
		}
	}
}

// The caller's context stops the command like a timeout and comes back as the error.
func TestRunCanceled(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "bash")
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("client went away")
	time.AfterFunc(200*time.Millisecond, func() { cancel(cause) })
	res, err := process.New(process.Options{}).Run(ctx, executor.Spec{Script: "echo started; sleep 300", Dir: t.TempDir()})
	if !errors.Is(err, cause) {
		t.Errorf("Run(canceled) error = %v, want %v", err, cause)
	}
	if res.Stdout != "started\n" || res.TimedOut || res.ExitCode != 143 {
		t.Errorf("Run(canceled) = %+v, want stdout started, exit 143 (SIGTERM), not timed out", res)
	}
}
