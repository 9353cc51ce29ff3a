package wire

import (
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"golang.org/x/sys/unix"
)

// TestPacket: a packet carries its object and its descriptors; a malformed one is an
// error that leaves no descriptor open.
func TestPacket(t *testing.T) {
	t.Parallel()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	recv := func() ([]byte, []byte) {
		buf, oob := make([]byte, MaxPacket), make([]byte, OOBSpace(SpawnFiles))
		n, oobn, _, _, err := unix.Recvmsg(fds[1], buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:n], oob[:oobn]
	}

	if err := SendPacket(fds[0], SpawnReply{ID: 7, Pid: 42}, int(w.Fd())); err != nil {
		t.Fatal(err)
	}
	var rep SpawnReply
	b, oob := recv()
	passed, err := DecodePacket(b, oob, &rep)
	if err != nil || rep.ID != 7 || rep.Pid != 42 || len(passed) != 1 {
		t.Fatalf("DecodePacket = %+v, %v, %v", rep, passed, err)
	}
	// The descriptor passed is the pipe's write end: what is written reaches r.
	if _, err := unix.Write(passed[0], []byte("x")); err != nil {
		t.Fatal(err)
	}
	unix.Close(passed[0])
	one := make([]byte, 1)
	if n, err := r.Read(one); n != 1 || one[0] != 'x' {
		t.Fatalf("read through the passed descriptor: %q, %v", one[:n], err)
	}

	// Not JSON, with a descriptor: an error, and the descriptor is closed.
	if err := unix.Sendmsg(fds[0], []byte("{not json"), unix.UnixRights(int(w.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	b, oob = recv()
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("control message: %v, %v", msgs, err)
	}
	rights, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(rights) != 1 {
		t.Fatalf("rights: %v, %v", rights, err)
	}
	if _, err := DecodePacket(b, oob, &rep); err == nil {
		t.Fatal("DecodePacket of a malformed packet succeeded")
	}
	if _, err := unix.FcntlInt(uintptr(rights[0]), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("the descriptor of a malformed packet is still open: %v", err)
	}
}

// TestSpawnRequestBirth: where an init is to be born (v1: the directories to move into
// and back to; v2: the directory to clone into) reaches the spawner as it was sent.
func TestSpawnRequestBirth(t *testing.T) {
	t.Parallel()
	for _, b := range []cgroup.Birth{
		{},
		{Into: []string{"/sys/fs/cgroup/memory/cmdgate/g", "/sys/fs/cgroup/pids/cmdgate/g"}, Home: []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"}},
		{Dir: "/sys/fs/cgroup/cmdgate/g"},
	} {
		raw, err := json.Marshal(SpawnRequest{ID: 1, Cgroup: b.Into, Home: b.Home, CgroupDir: b.Dir})
		if err != nil {
			t.Fatal(err)
		}
		var req SpawnRequest
		if _, err := DecodePacket(raw, nil, &req); err != nil {
			t.Fatal(err)
		}
		if got := req.Birth(); !reflect.DeepEqual(got, b) {
			t.Errorf("Birth() of the request %s = %+v, want %+v", raw, got, b)
		}
	}
}

// TestCPUs: FormatCPUs and ParseCPUs carry any CPU set there and back; ParseCPUs refuses
// anything FormatCPUs does not write.
func TestCPUs(t *testing.T) {
	t.Parallel()
	for _, cpus := range [][]int{{0}, {1}, {0, 1}, {0, 2, 5, 63, 64, 65}, {MaxCPUs - 1}} {
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		s := FormatCPUs(&set)
		got, err := ParseCPUs(s)
		if err != nil || got != set {
			t.Errorf("ParseCPUs(FormatCPUs(%v) = %q) = %v, %v", cpus, s, got, err)
		}
	}
	var one unix.CPUSet
	one.Set(3)
	if s := FormatCPUs(&one); s != "3" {
		t.Errorf("FormatCPUs({3}) = %q, want \"3\"", s)
	}
	for _, bad := range []string{"", ",", "0,", ",1", "-1", "+1", "01", "1-3", "0x1", " 1", "1\x00", "a", strconv.Itoa(MaxCPUs), "99999999999999999999"} {
		if set, err := ParseCPUs(bad); err == nil {
			t.Errorf("ParseCPUs(%q) = %v, want an error", bad, set)
		}
	}
}
