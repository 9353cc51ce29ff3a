package main

import (
	"os"
	"os/exec"
	"testing"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// BenchmarkSandboxRun is `cmdgate sandbox run -- true` as a process (the binary's start,
// its flags, the sandbox built and torn down, no gateway and no policy) beside "bwrap",
// the peer: `bwrap --unshare-all --die-with-parent true` as a process, in the same run.
func BenchmarkSandboxRun(b *testing.B) {
	bin, err := testenv.BuildCmdgate("bench")
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	if out, err := exec.Command(bin, "sandbox", "run", "--workspace", ws, "--", "true").CombinedOutput(); err != nil {
		testenv.Skip(b, "cmdgate sandbox run cannot run here: %v\n%s", err, out)
	}
	b.Run("cmdgate", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(bin, "sandbox", "run", "--workspace", ws, "--", "true")
			cmd.Env = append(os.Environ(), "HOME="+ws)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("cmdgate sandbox run: %v\n%s", err, out)
			}
		}
	})
	b.Run("bwrap", func(b *testing.B) {
		bwrap := testenv.NeedCommand(b, "bwrap")
		args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "/bin/true"}
		for b.Loop() {
			if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
				b.Fatalf("bwrap: %v\n%s", err, out)
			}
		}
	})
}
