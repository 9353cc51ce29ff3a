// Package bwrappeer is the sandbox benchmarks' peers: the plain `bwrap --unshare-all` of
// the targets (BenchmarkPlain), which (run as root) keeps its capabilities and loads no
// seccomp filter, and the like-for-like peer (Benchmark): bubblewrap doing what it can
// of a cold sandbox's work. The like-for-like peer does the
// sandbox's read-only binds of the system directories (linux.DefaultReadOnly, those the
// host has) with its hidden files and directories (linux.DefaultHide: /dev/null over a
// file, which its nodev mount leaves unreadable; an empty read-only tmpfs over a
// directory), the workspace read-write, a tmpfs /tmp and /dev/shm, a /proc and a /dev,
// the host name and every namespace, drops every capability and loads the sandbox's own
// seccomp filter. What bubblewrap cannot do is left out: Landlock, the cgroup with its
// limits, the rlimits.
package bwrappeer

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/linux/internal/seccomp"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// Peer is bubblewrap set up for one workspace.
type Peer struct {
	bwrap  string
	args   []string
	filter []byte // struct sock_filter, as bubblewrap reads it from --seccomp's descriptor
}

// New sets bubblewrap (found in PATH) up for workspace ws.
func New(ws string) (*Peer, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, err
	}
	prog, err := seccomp.Filter()
	if err != nil {
		return nil, err
	}
	p := &Peer{bwrap: bwrap}
	for _, f := range prog {
		p.filter = binary.NativeEndian.AppendUint16(p.filter, f.Code)
		p.filter = append(p.filter, f.Jt, f.Jf)
		p.filter = binary.NativeEndian.AppendUint32(p.filter, f.K)
	}
	p.args = []string{"--unshare-all", "--die-with-parent", "--hostname", "cmdgate", "--cap-drop", "ALL"}
	for _, d := range linux.DefaultReadOnly {
		if _, err := os.Stat(d); err == nil {
			p.args = append(p.args, "--ro-bind", d, d)
		}
	}
	for _, h := range linux.DefaultHide {
		fi, err := os.Stat(h)
		switch {
		case err != nil:
		case fi.IsDir():
			p.args = append(p.args, "--tmpfs", h, "--remount-ro", h)
		default:
			p.args = append(p.args, "--ro-bind", os.DevNull, h)
		}
	}
	p.args = append(p.args, "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp",
		"--bind", ws, ws, "--chdir", ws, "--seccomp", "3", "--")
	return p, p.check()
}

// Run runs argv in a new bubblewrap sandbox and returns its combined output.
func (p *Peer) Run(argv ...string) ([]byte, error) {
	// The filter reaches bubblewrap through a pipe, on descriptor 3: far below the pipe's
	// buffer, so it is written whole before bubblewrap starts.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	_, err = w.Write(p.filter)
	w.Close()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.bwrap, append(p.args, argv...)...)
	cmd.ExtraFiles = []*os.File{r}
	return cmd.CombinedOutput()
}

// check makes sure the peer does the work it is credited with: the filter refuses a new
// user namespace (unshare exits 1 then; 127 would be no unshare at all).
func (p *Peer) check() error {
	if out, err := p.Run("/bin/sh", "-c", "unshare -U true 2>/dev/null; test $? -eq 1"); err != nil {
		return fmt.Errorf("bubblewrap runs without the sandbox's seccomp filter in force: %v\n%s", err, out)
	}
	return nil
}

// Benchmark runs /bin/true in the peer on workspace ws b.N times, back to back, and
// reports the machine's CPU time per run (testenv.MachineCPU): the like-for-like peer
// of the sandbox benchmarks. Without bubblewrap it skips (fails under CI).
func Benchmark(b *testing.B, ws string) {
	p, err := New(ws)
	if err != nil {
		testenv.Skip(b, "bubblewrap cannot run here: %v", err)
	}
	defer testenv.MachineCPU(b)()
	for b.Loop() {
		if out, err := p.Run("/bin/true"); err != nil {
			b.Fatalf("bwrap: %v\n%s", err, out)
		}
	}
}

// plainArgs are the targets' peer: a sandbox sharing nothing with the host but its
// read-only root.
var plainArgs = []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "/bin/true"}

// BenchmarkPlain runs `bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all
// --die-with-parent /bin/true` as a process b.N times and reports the machine's CPU time
// per run: the peer the sandbox targets are ratios to. With pause, the timer stops for
// that long between runs: after a pause the machine is slower to answer (idle CPUs
// sleep, caches cool), so a paced run is compared with a paced peer. Without bubblewrap
// it skips (fails under CI).
func BenchmarkPlain(b *testing.B, pause time.Duration) {
	bwrap := testenv.NeedCommand(b, "bwrap")
	defer testenv.MachineCPU(b)()
	for b.Loop() {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		if out, err := exec.Command(bwrap, plainArgs...).CombinedOutput(); err != nil {
			b.Fatalf("bwrap: %v\n%s", err, out)
		}
	}
}
