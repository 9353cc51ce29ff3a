package linux

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// UplinkName is the user-mode network stack that gives a command granted the network
// its way out: slirp4netns, from the distribution's package of that name.
const UplinkName = "slirp4netns"

// The uplink's network, as slirp4netns lays it out by default: the sandbox is
// 10.0.2.100 on tap0, 10.0.2.2 stands for the host and 10.0.2.3 is the resolver that
// forwards to the host's.
const (
	uplinkDevice     = "tap0"
	uplinkHost       = "10.0.2.2/32"
	uplinkNameserver = "10.0.2.3"
)

// AlwaysUnreachable are prefixes a command granted the network never reaches, besides
// the host's own addresses: link-local (cloud metadata services answer at
// 169.254.169.254) and the uplink's alias for the host.
var AlwaysUnreachable = []string{"169.254.0.0/16", uplinkHost}

// uplinkTimeout bounds the attaching of an uplink (milliseconds when the host is well).
const uplinkTimeout = 10 * time.Second

// uplink is the network stack attached to one sandbox's network namespace. It connects
// from the host's network namespace with ordinary sockets on the command's behalf, so
// it refuses the host's loopback itself (--disable-host-loopback), and the sandbox's
// prohibit routes keep the host's other addresses out of reach.
type uplink struct {
	cmd    *exec.Cmd
	exitW  *os.File // closing it ends the uplink
	stderr *bytes.Buffer
	done   chan struct{}
}

// findUplink returns the path of slirp4netns, or why network grants cannot be honoured.
func findUplink(path string) (string, error) {
	if path == "" {
		path = UplinkName
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("%s is not installed (Debian and Ubuntu: apt-get install slirp4netns): a command the policy grants the network cannot run", UplinkName)
	}
	return p, nil
}

// startUplink attaches an uplink to the network namespace of the init pid and waits
// until it has configured tap0 there (address, default route). The calling thread must
// stay locked, as for the init: the uplink dies with it (parent-death signal).
func startUplink(prog string, pid int) (*uplink, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, err
	}
	args := []string{"--configure", "--mtu=65520", "--disable-host-loopback",
		"--enable-sandbox", "--enable-seccomp", "--ready-fd=3", "--exit-fd=4"}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Getuid() != 0 {
		// The namespace belongs to the init's user namespace, where an unprivileged
		// gateway's user is root. slirp4netns's own mount namespace (--enable-sandbox)
		// then belongs to that less privileged user namespace, whose mounts cannot
		// propagate to the host's.
		args = append(args, "--userns-path=/proc/"+strconv.Itoa(pid)+"/ns/user")
	} else {
		// slirp4netns's sandbox makes only its root mount private before it detaches the
		// host's tree: run as root in the host's mount namespace, that detach unmounts,
		// on the host, every mount whose parent is a shared mount (Docker's container
		// root file systems under /var/lib/docker among them). In a mount namespace of
		// its own, which Go makes private recursively before the program starts, it
		// unmounts nothing of the host's.
		attr.Unshareflags = syscall.CLONE_NEWNS
	}
	args = append(args, strconv.Itoa(pid), uplinkDevice)
	u := &uplink{exitW: exitW, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	u.cmd = &exec.Cmd{
		Path:        prog,
		Args:        append([]string{UplinkName}, args...),
		Env:         []string{},
		Dir:         "/",
		Stderr:      &limitedWriter{w: u.stderr, n: 4096},
		ExtraFiles:  []*os.File{readyW, exitR}, // descriptors 3 and 4
		SysProcAttr: attr,
	}
	err = u.cmd.Start()
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return nil, fmt.Errorf("start %s: %w", prog, err)
	}
	go func() {
		u.cmd.Wait()
		close(u.done)
	}()
	readyR.SetReadDeadline(time.Now().Add(uplinkTimeout))
	b := make([]byte, 1)
	if _, err := readyR.Read(b); err != nil {
		u.stop()
		msg := bytes.TrimSpace(u.stderr.Bytes())
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("%s was not ready within %v: %s", UplinkName, uplinkTimeout, msg)
		}
		return nil, fmt.Errorf("%s failed: %s", UplinkName, msg)
	}
	return u, nil
}

// stop ends the uplink and waits for it: closing the exit descriptor asks it to go, a
// kill makes sure.
func (u *uplink) stop() {
	u.exitW.Close()
	select {
	case <-u.done:
		return
	case <-time.After(time.Second):
	}
	u.cmd.Process.Kill()
	<-u.done
}

// unreachable lists what a command granted the network must not reach as IPv4 /32
// prefixes: every address of the host's interfaces (a service listening on any of them,
// the gateway among them, would otherwise be one connect away), then AlwaysUnreachable.
// The uplink gives the sandbox no IPv6 route, so IPv6 addresses need none.
func unreachable() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list the host's addresses: %w", err)
	}
	var out []string
	seen := map[netip.Addr]bool{}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if !ip.Is4() || ip.IsLoopback() || seen[ip] {
			continue // the sandbox's 127.0.0.0/8 is its own loopback
		}
		seen[ip] = true
		out = append(out, netip.PrefixFrom(ip, 32).String())
	}
	return append(out, AlwaysUnreachable...), nil
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
	n  int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
