package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux/bwrappeer"
	"github.com/cmdgate/cmdgate/internal/handover"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// BenchmarkSandboxRun is `cmdgate sandbox run -- true` as a process (the binary's start,
// its flags, the sandbox built and torn down, no gateway and no policy) beside "bwrap",
// the peer: `bwrap --unshare-all --die-with-parent true` as a process, in the same run;
// "bwrap_same" is bubblewrap doing what it can of the sandbox's work (package bwrappeer).
// "handover" and "true" split cmdgate's own start off: cmdgate handing the run over to
// a cmdgate-sandbox that only exits, and such a program alone. "floor" is the least a
// run built of Go programs as cmdgate's is pays, with no sandbox in it
// (internal/spawnfloor: three Go program starts, the clone into the namespaces, the
// command's exec).
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
	// handover: cmdgate's part alone, its start and the handover, with /bin/true for
	// cmdgate-sandbox (a copy beside a copy of cmdgate); true: /bin/true as a process.
	b.Run("handover", func(b *testing.B) {
		dir := b.TempDir()
		self, helper := filepath.Join(dir, "cmdgate"), filepath.Join(dir, handover.HelperName)
		if err := copyFile(bin, self); err != nil {
			b.Fatal(err)
		}
		if err := copyFile("/bin/true", helper); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if out, err := exec.Command(self, "sandbox", "run", "--workspace", ws, "--", "true").CombinedOutput(); err != nil {
				b.Fatalf("cmdgate sandbox run, handed over to true: %v\n%s", err, out)
			}
		}
	})
	b.Run("true", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		floor, err := testenv.BuildSpawnFloor("bench")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if out, err := exec.Command(floor, "cli", "--", "/bin/true").CombinedOutput(); err != nil {
				b.Fatalf("spawnfloor: %v\n%s", err, out)
			}
		}
	})
	b.Run("bwrap", func(b *testing.B) { bwrappeer.BenchmarkPlain(b, 0) })
	b.Run("bwrap_same", func(b *testing.B) { bwrappeer.Benchmark(b, ws) })
}

// copyFile copies the executable src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
