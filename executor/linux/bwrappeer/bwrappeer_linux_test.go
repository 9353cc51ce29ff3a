package bwrappeer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/linux/bwrappeer"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestPeerDoesTheWork: the peer the like-for-like rows compare with does the work it
// is credited with: no capability, the seccomp filter in force (no_new_privs with it;
// a new user namespace refused), the hidden files empty, the system directories
// read-only, the workspace writable and the working directory, its own host name and
// pid namespace, a private /tmp.
func TestPeerDoesTheWork(t *testing.T) {
	testenv.NeedCommand(t, "bwrap")
	ws := t.TempDir()
	p, err := bwrappeer.New(ws)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	tmpName := "/tmp/" + filepath.Base(ws) + "-peer" // a name no one else uses on the host
	script := strings.Join([]string{
		`grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status`,
		`echo host=$(cat /proc/sys/kernel/hostname) pid=$$ cwd=$(pwd)`,
		`unshare -U true 2>/dev/null; echo unshare=$?`,
		`touch /usr/cmdgate-peer 2>/dev/null; echo usr=$?`,
		`echo made > made; touch ` + tmpName + `; echo tmp=$?`,
	}, "; ")
	hidden := ""
	for _, h := range linux.DefaultHide {
		if fi, err := os.Stat(h); err == nil && !fi.IsDir() {
			hidden = h
			// /dev/null bound on a nodev mount: unreadable; either way nothing of it shows
			script += "; echo hidden=$(cat " + h + " 2>/dev/null | wc -c)"
			break
		}
	}
	out, err := p.Run("/bin/sh", "-c", script)
	if err != nil {
		t.Fatalf("the peer's shell: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
		"host=cmdgate pid=", "cwd=" + ws, "unshare=1", "usr=1", "tmp=0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the peer's sandbox lacks %q:\n%s", want, got)
		}
	}
	// bwrap's own pid 1 reaps; the command is its child in a pid namespace of its own,
	// pid 2, never a pid of the host's.
	if !strings.Contains(got, "pid=2 ") {
		t.Errorf("the peer's command is not pid 2 of a new pid namespace:\n%s", got)
	}
	if hidden != "" && !strings.Contains(got, "hidden=0") {
		t.Errorf("%s is not hidden in the peer's sandbox:\n%s", hidden, got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made")); err != nil || string(b) != "made\n" {
		t.Errorf("the workspace file written in the peer's sandbox = %q, %v", b, err)
	}
	if _, err := os.Stat(tmpName); err == nil {
		os.Remove(tmpName)
		t.Errorf("the peer's /tmp is the host's: %s was made there", tmpName)
	}
}
