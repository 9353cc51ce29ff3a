package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/google/go-cmp/cmp"
)

// run runs spec and fails the test on error.
func run(t *testing.T, e *process.Executor, spec executor.Spec) executor.Result {
	t.Helper()
	res, err := e.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run(%q) error = %v", command(spec), err)
	}
	return res
}

func command(spec executor.Spec) any {
	if spec.Script != "" {
		return spec.Script
	}
	return spec.Argv
}

// Seed 000 section 11: echo hello through the platform shell exits 0 with its output
// (bash on Linux, zsh -lc on macOS, pwsh on Windows).
func TestRunEchoHello(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	argv := []string{"echo", "hello"}
	res := run(t, process.New(process.Options{}), executor.Spec{Argv: argv, Dir: dir})
	if res.ExitCode != 0 || strings.TrimRight(res.Stdout, "\r\n") != "hello" || res.Stderr != "" {
		t.Errorf("Run(echo hello) = exit %d, stdout %q, stderr %q; want 0, hello", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res.Cwd != dir || !cmp.Equal(res.Command, argv) {
		t.Errorf("Run(echo hello) echoes cwd %q, command %q; want %q, %q", res.Cwd, res.Command, dir, argv)
	}
	if res.StdoutBytes != int64(len(res.Stdout)) || res.TimedOut || res.StdoutTruncated {
		t.Errorf("Run(echo hello) = %+v, want %d stdout bytes, not timed out or truncated", res, len(res.Stdout))
	}
}

// Seed 000 section 11: the same command and cwd come back as given.
func TestRunEchoesRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := process.New(process.Options{})
	argv := []string{"echo", "a  b", "", "'q'", "é"}
	res := run(t, e, executor.Spec{Argv: argv, Dir: dir})
	if diff := cmp.Diff(argv, res.Command); diff != "" {
		t.Errorf("Run(%q).Command mismatch (-want +got):\n%s", argv, diff)
	}
	if res.Cwd != dir {
		t.Errorf("Run(%q).Cwd = %q, want %q", argv, res.Cwd, dir)
	}
	argv[1] = "changed"
	if res.Command[1] != "a  b" {
		t.Errorf("Result.Command shares the caller's slice")
	}

	script := "echo one;  echo two"
	res = run(t, e, executor.Spec{Script: script, Dir: dir + string(filepath.Separator) + "."})
	if diff := cmp.Diff([]string{script}, res.Command); diff != "" || res.Cwd != dir {
		t.Errorf("Run(%q) echoes command %q, cwd %q; want [%q], %q", script, res.Command, res.Cwd, script, dir)
	}
}

// Seed 000 section 11: invalid arguments are INVALID_ARGUMENT, and nothing runs.
func TestRunInvalidArgument(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	touch := []string{"touch", marker}
	if runtime.GOOS == "windows" {
		touch = []string{"New-Item", marker}
	}
	tests := []struct {
		name string
		spec executor.Spec
	}{
		{"empty command", executor.Spec{Argv: []string{}, Dir: dir}},
		{"empty command name", executor.Spec{Argv: append([]string{""}, touch...), Dir: dir}},
		{"NUL in an argument", executor.Spec{Argv: append(touch, "x\x00y"), Dir: dir}},
		{"invalid UTF-8", executor.Spec{Argv: append(touch, "\xff"), Dir: dir}},
		{"empty cwd", executor.Spec{Argv: touch}},
		{"relative cwd", executor.Spec{Argv: touch, Dir: "."}},
		{"timeout out of range", executor.Spec{Argv: touch, Dir: dir, Timeout: -1}},
		{"output cap out of range", executor.Spec{Argv: touch, Dir: dir, MaxOutputChars: 10}},
		{"bad shell mode", executor.Spec{Argv: touch, Dir: dir, ShellMode: "sudo"}},
	}
	e := process.New(process.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.Run(t.Context(), tt.spec)
			if !errors.Is(err, executor.ErrInvalidArgument) {
				t.Errorf("Run(%+v) = %+v, %v; want INVALID_ARGUMENT", tt.spec, res, err)
			}
		})
	}
	t.Cleanup(func() {
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("an invalid request ran: %s exists", marker)
		}
	})
}

// Seed 000 section 11: a missing cwd or a file as cwd is NOT_DIRECTORY.
func TestRunNotDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file.txt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := process.New(process.Options{})
	for _, cwd := range []string{filepath.Join(dir, "missing"), file, filepath.Join(file, "below")} {
		for _, mode := range []executor.ShellMode{executor.ShellDefault, executor.ShellDirect} {
			_, err := e.Run(t.Context(), executor.Spec{Argv: []string{"echo", "x"}, ShellMode: mode, Dir: cwd})
			if !errors.Is(err, executor.ErrNotDirectory) || !strings.Contains(err.Error(), cwd) {
				t.Errorf("Run(cwd %q, %s) error = %v, want NOT_DIRECTORY naming it", cwd, mode, err)
			}
		}
	}
}

// Seed 000 section 11: in direct mode an unresolvable command is COMMAND_NOT_FOUND with
// its name in the message.
func TestRunCommandNotFound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := process.New(process.Options{})
	for _, name := range []string{"exectest-no-such-command", "./missing-tool", filepath.Join(dir, "missing-tool"), "./data.txt", dir} {
		_, err := e.Run(t.Context(), executor.Spec{Argv: []string{name, "arg"}, ShellMode: executor.ShellDirect, Dir: dir})
		var xe *executor.Error
		if !errors.As(err, &xe) || xe.Code != executor.CodeCommandNotFound || !strings.Contains(xe.Message, name) {
			t.Errorf("Run(direct %q) error = %v, want COMMAND_NOT_FOUND naming it", name, err)
		}
	}
}

// A context that is already done starts nothing.
func TestRunContextDoneBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	marker := filepath.Join(dir, "ran")
	argv := []string{"touch", marker}
	if runtime.GOOS == "windows" {
		argv = []string{"New-Item", marker}
	}
	_, err := process.New(process.Options{}).Run(ctx, executor.Spec{Argv: argv, Dir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run(canceled context) error = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("Run(canceled context) ran the command")
	}
}

// Concurrent runs on one Executor keep their outputs apart.
func TestRunConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := process.New(process.Options{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			want := fmt.Sprintf("run-%d", i)
			res, err := e.Run(t.Context(), executor.Spec{Argv: []string{"echo", want}, Dir: dir})
			if err != nil || strings.TrimRight(res.Stdout, "\r\n") != want {
				t.Errorf("Run(echo %s) = %q, %v; want %q", want, res.Stdout, err, want)
			}
		})
	}
	wg.Wait()
}
