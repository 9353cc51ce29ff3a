package linux_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestUplinkLeavesHostMounts: a command granted the network starts the uplink, and the
// uplink unmounts nothing of the host's. slirp4netns's own sandbox makes only its root
// mount private before it detaches the host's tree, so, run as root in the host's mount
// namespace, it unmounted on the host every mount whose parent is a shared mount:
// Docker's container root file systems under /var/lib/docker (a shared mount), whose
// containers then failed to start ("stat /bin/sh: no such file or directory") or to
// exec. The test builds that shape of its own (a tmpfs under a shared tmpfs) and checks
// the inner one is still mounted after the command.
func TestUplinkLeavesHostMounts(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "mounting the test's shared tmpfs needs root (an unprivileged uplink runs in the init's user namespace, whose mounts cannot reach the host's)")
	}
	testenv.NeedCommand(t, linux.UplinkName)
	e, ws := newExecutor(t, linux.Options{})

	parent := filepath.Join(t.TempDir(), "shared")
	child := filepath.Join(parent, "inner")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", parent, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", parent, err)
	}
	t.Cleanup(func() { unix.Unmount(parent, unix.MNT_DETACH) })
	if err := unix.Mount("", parent, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", parent, err)
	}
	if err := os.Mkdir(child, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", child, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", child, err)
	}
	t.Cleanup(func() { unix.Unmount(child, unix.MNT_DETACH) })
	if !mounted(t, child) {
		t.Fatalf("%s is not in /proc/self/mountinfo after mounting it", child)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.Run(ctx, executor.Spec{Script: "sleep 0.2", Dir: ws, Network: true, Timeout: 20 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run(network) = exit %d, stderr %q, %v", res.ExitCode, res.Stderr, err)
	}
	if !mounted(t, child) {
		t.Errorf("the host's mount %s, under a shared mount, was unmounted when a command granted the network started its uplink", child)
	}
}

// mounted reports whether path is a mount point in the test process's mount namespace.
func mounted(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// ID parent major:minor root mount-point options ...
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == path {
			return true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}
