package sandboxinit

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// prohibitRoutes gives each IPv4 prefix a prohibit route in the sandbox's network
// namespace: a connection to it fails at once with EACCES instead of leaving through
// the uplink. The routes are set while the init still has CAP_NET_ADMIN in its user
// namespace; the command has no capability and cannot remove them.
func prohibitRoutes(prefixes []string) error {
	if len(prefixes) == 0 {
		return nil
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %w", err)
	}
	buf := make([]byte, 8192)
	for i, s := range prefixes {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() {
			return fmt.Errorf("unreachable prefix %q is not an IPv4 prefix", s)
		}
		seq := uint32(i + 1)
		if err := unix.Sendto(fd, routeMsg(seq, p.Masked()), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return fmt.Errorf("route %s: %w", p, err)
		}
		if err := netlinkAck(fd, seq, buf); err != nil {
			return fmt.Errorf("route %s: %w", p, err)
		}
	}
	return nil
}

// routeMsg is an RTM_NEWROUTE request for a prohibit route to p in the main table.
func routeMsg(seq uint32, p netip.Prefix) []byte {
	addr := p.Addr().As4()
	attrLen := unix.SizeofRtAttr + len(addr)
	n := unix.SizeofNlMsghdr + unix.SizeofRtMsg + attrLen
	b := make([]byte, n)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(n))
	ne.PutUint16(b[4:], unix.RTM_NEWROUTE)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	ne.PutUint32(b[8:], seq)
	rt := b[unix.SizeofNlMsghdr:]
	rt[0] = unix.AF_INET
	rt[1] = byte(p.Bits()) // dst_len
	rt[4] = unix.RT_TABLE_MAIN
	rt[5] = unix.RTPROT_STATIC
	rt[6] = unix.RT_SCOPE_UNIVERSE
	rt[7] = unix.RTN_PROHIBIT
	a := rt[unix.SizeofRtMsg:]
	ne.PutUint16(a[0:], uint16(attrLen))
	ne.PutUint16(a[2:], unix.RTA_DST)
	copy(a[unix.SizeofRtAttr:], addr[:])
	return b
}

// netlinkAck reads the kernel's answer to request seq: nil for success, the errno it
// reports otherwise.
func netlinkAck(fd int, seq uint32, buf []byte) error {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("netlink answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != unix.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return fmt.Errorf("netlink answer: short error message")
			}
			if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
				return syscall.Errno(-errno)
			}
			return nil
		}
	}
}

// resolvConf shows a resolv.conf naming only the uplink's resolver: the host's may name
// a resolver on its own loopback, which the sandbox does not share. It is bound over
// /etc/resolv.conf, or over the file that link leads to, from a file of the new root.
func resolvConf(nameserver string) error {
	if _, err := netip.ParseAddr(nameserver); err != nil {
		return fmt.Errorf("nameserver %q: %w", nameserver, err)
	}
	const src = "/.cmdgate-resolv.conf"
	if err := os.WriteFile(src, []byte("nameserver "+nameserver+"\n"), 0o644); err != nil {
		return err
	}
	p := "/etc/resolv.conf"
	for range 8 {
		fi, err := os.Lstat(p)
		if err != nil {
			if os.IsNotExist(err) && p == "/etc/resolv.conf" {
				return nil // the host has none either: the libc default (loopback) fails alike
			}
			if !os.IsNotExist(err) {
				return err
			}
			break // a dangling link: the file is made where it leads
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		t, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
	if err := mountpoint(p, false); err != nil {
		return err
	}
	if err := unix.Mount(src, p, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.MountSetattr(-1, p, 0, &unix.MountAttr{Attr_set: attrRO})
}
