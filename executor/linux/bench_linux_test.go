package linux_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
)

// BenchmarkSandbox measures one command start to finish in a fresh sandbox: linux is
// this backend running /bin/true with every protection on (namespaces, new root,
// Landlock, seccomp, no capabilities, rlimits, a cgroup where the host allows); bwrap is
// bubblewrap sharing nothing either. The budget is linux <= 0.75 * bwrap.
func BenchmarkSandbox(b *testing.B) {
	b.Run("linux", func(b *testing.B) {
		e, ws := newExecutor(b, linux.Options{})
		spec := executor.Spec{Argv: []string{"/bin/true"}, ShellMode: executor.ShellDirect, Dir: ws, Timeout: 10 * time.Second}
		ctx := context.Background()
		for b.Loop() {
			res, err := e.Run(ctx, spec)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("Run = %+v, %v", res, err)
			}
		}
	})
	b.Run("bwrap", func(b *testing.B) {
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			b.Skip("bubblewrap is not installed")
		}
		args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "/bin/true"}
		for b.Loop() {
			if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
				b.Fatalf("bwrap: %v\n%s", err, out)
			}
		}
	})
}
