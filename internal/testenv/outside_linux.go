package testenv

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Outside is a network namespace that stands for the outside world in tests of the
// network a sandbox is granted: it is joined to the host by a veth pair on a /30 of
// 198.18.0.0/15 (the range set aside for network tests), and the host routes to it as
// it would to any other network. Host is the host's end (one of the host's own
// addresses while the test runs), Addr the outside end. A process of the test's (a
// sleep started by unshare) holds the namespace; no name is registered under
// /run/netns, where concurrent `ip netns add` calls race.
type Outside struct {
	Host, Addr netip.Addr
	holder     *exec.Cmd
}

// NewOutside creates the namespace and the pair, and removes both when the test ends.
// It needs root, iproute2 and util-linux (skips, or fails under CI=true, without them).
func NewOutside(t testing.TB) *Outside {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "creating a network namespace and a veth pair needs root")
	}
	ip := NeedCommand(t, "ip")
	unshare := NeedCommand(t, "unshare")
	nsenter := NeedCommand(t, "nsenter")
	var r [4]byte
	rand.Read(r[:])
	n := binary.BigEndian.Uint32(r[:]) % (1 << 15) // a /30 among the 2^15 of 198.18.0.0/15
	base := netip.AddrFrom4([4]byte{198, 18 + byte(n>>14), byte(n >> 6), byte(n<<2) & 0xfc})
	o := &Outside{Host: base.Next(), Addr: base.Next().Next()}
	o.holder = exec.Command(unshare, "--net", "--", "sleep", "3600")
	if err := o.holder.Start(); err != nil {
		t.Fatalf("start the outside namespace: %v", err)
	}
	t.Cleanup(func() { o.holder.Process.Kill(); o.holder.Wait() })
	pid := strconv.Itoa(o.holder.Process.Pid)
	// unshare has switched namespaces once the holder's differs from ours.
	mine, _ := os.Readlink("/proc/self/ns/net")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if theirs, err := os.Readlink("/proc/" + pid + "/ns/net"); err == nil && theirs != mine {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the outside namespace was not created within 10 s")
		}
	}
	hostEnd, outEnd := fmt.Sprintf("cgh%x", r[:3]), fmt.Sprintf("cgo%x", r[:3])
	sh := func(prog string, args ...string) {
		t.Helper()
		if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
		}
	}
	inside := func(args ...string) { sh(nsenter, append([]string{"-t", pid, "-n", ip}, args...)...) }
	sh(ip, "link", "add", hostEnd, "type", "veth", "peer", "name", outEnd, "netns", pid)
	t.Cleanup(func() { exec.Command(ip, "link", "del", hostEnd).Run() })
	sh(ip, "addr", "add", o.Host.String()+"/30", "dev", hostEnd)
	sh(ip, "link", "set", hostEnd, "up")
	inside("addr", "add", o.Addr.String()+"/30", "dev", outEnd)
	inside("link", "set", outEnd, "up")
	inside("link", "set", "lo", "up")
	return o
}

// Listen opens a TCP listener on Addr (port 0: any) inside the namespace. A socket
// belongs to the network namespace it was created in, so the listener serves there
// whichever thread accepts.
func (o *Outside) Listen(t testing.TB) net.Listener {
	t.Helper()
	var ln net.Listener
	err := o.do(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(o.Addr, 0).String())
		return err
	})
	if err != nil {
		t.Fatalf("listen in the outside namespace: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// do runs f on a thread moved into the namespace. The thread is moved back after, or,
// if that fails, left locked so that it ends with the goroutine.
func (o *Outside) do(f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- err
			return
		}
		defer orig.Close()
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", o.holder.Process.Pid))
		if err != nil {
			ch <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- err
			return
		}
		err = f()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}
