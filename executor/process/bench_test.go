//go:build !windows

package process_test

import (
	"os/exec"
	"testing"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// BenchmarkRun compares this backend running /bin/true to completion (direct mode,
// default configuration: pipes, capture, process group, rlimits, watchdog) with os/exec
// running the same program. The budget is process <= 1.3 * bare.
func BenchmarkRun(b *testing.B) {
	trueBin := testenv.NeedCommand(b, "true")
	dir := b.TempDir()
	b.Run("process", func(b *testing.B) {
		e := process.New(process.Options{})
		spec := executor.Spec{Argv: []string{trueBin}, ShellMode: executor.ShellDirect, Dir: dir}
		for b.Loop() {
			res, err := e.Run(b.Context(), spec)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("Run(true) = %+v, %v", res, err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(trueBin)
			cmd.Dir = dir
			if err := cmd.Run(); err != nil {
				b.Fatalf("exec true: %v", err)
			}
		}
	})
}
