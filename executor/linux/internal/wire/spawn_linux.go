package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/internal/handover"

	"golang.org/x/sys/unix"
)

// The spawner is cmdgate-sandbox started with SpawnArg: a small process that starts the
// inits for a long-running executor. An init starts in a new user namespace, so its
// parent's memory cannot be shared while it waits for its ID maps (no vfork): the kernel
// copies the parent's page tables and the parent then takes a copy-on-write fault for
// every page it writes until the init has exec'd. From a gateway that holds a compiled
// policy that is milliseconds per sandbox, growing with its heap (measured: 2 ms from a
// process with no heap, 7 ms with 100 MB, 25 ms with 400 MB); from the spawner it is
// the first figure, always. The gateway starts the spawner itself with vfork, which
// costs the same from any heap.
//
// Each of those faults also flushes the page's stale translation from every other CPU
// the spawner's threads run on, by an interprocessor interrupt, which a virtual machine
// pays dearly (measured on a 2-core VM: a fifth of the spawner's time). So the spawner
// keeps all its threads on one CPU (KeepToOneCPU), and starts each init with CPUsArg and
// the CPUs it had: the init puts its main thread back on them before anything else, and
// the command runs where the gateway may. cmdgate sandbox run, which starts its one init
// itself, does the same.
//
// The executor and the spawner talk over a SOCK_SEQPACKET socket pair, on the spawner's
// descriptor SpawnFD: one JSON object per packet.
//   - SpawnRequest, with SpawnFiles descriptors (SCM_RIGHTS): start an init with them
//     as its standard streams, its config (ConfigFD) and its report (ReportFD); with
//     Cgroup or CgroupDir, born in the command's cgroup (see cgroup.Birth).
//   - SpawnReply with Pid, and the init's pidfd as the only descriptor: it started;
//     with Error: it did not.
//   - SpawnReply with Exited and Status, later: the init has exited and been reaped.
//
// End of file on the socket ends the spawner, and with it (the parent-death signal) every
// init it started.
const (
	SpawnArg   = "spawn"
	CPUsArg    = "cpus"
	SpawnFD    = 3
	SpawnFiles = 5 // stdin, stdout, stderr, config, report
)

// SpawnRequest asks the spawner for an init.
type SpawnRequest struct {
	ID uint64 `json:"id"`
	// Cgroup are the command's cgroup directories, one per hierarchy, to start the init
	// in, and Home those of the spawner's own cgroups to come back to, in the same
	// order: both empty, or as many (cgroup v1: cgroup.Birth's Into and Home). A spawner
	// that cannot come back to Home exits: its thread must start no other init from
	// there.
	Cgroup []string `json:"cgroup,omitempty"`
	Home   []string `json:"home,omitempty"`
	// CgroupDir is the command's cgroup directory to clone the init into (cgroup v2:
	// cgroup.Birth's Dir).
	CgroupDir string `json:"cgroup_dir,omitempty"`
}

// Birth is where the request's init is to be born.
func (r SpawnRequest) Birth() cgroup.Birth {
	return cgroup.Birth{Into: r.Cgroup, Home: r.Home, Dir: r.CgroupDir}
}

// SpawnReply is the spawner's answer to a SpawnRequest, or the news that its init has
// exited.
type SpawnReply struct {
	ID     uint64 `json:"id"`
	Pid    int    `json:"pid,omitempty"`
	Error  string `json:"error,omitempty"`
	Exited bool   `json:"exited,omitempty"`
	// Status is the init's wait status (syscall.WaitStatus), once Exited.
	Status uint32 `json:"status,omitempty"`
}

// MaxPacket bounds one message: requests and replies are a few dozen bytes.
const MaxPacket = 4096

// SendPacket writes v as one packet on the socket fd, with files passed along.
func SendPacket(fd int, v any, files ...int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(files) > 0 {
		oob = unix.UnixRights(files...)
	}
	for {
		err = unix.Sendmsg(fd, b, oob, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// DecodePacket decodes one packet read with its control message into v and returns the
// descriptors it carried (close-on-exec when read with MSG_CMSG_CLOEXEC). On error no
// descriptor is left open.
func DecodePacket(b, oob []byte, v any) ([]int, error) {
	var fds []int
	if len(oob) > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob)
		if err != nil {
			return nil, fmt.Errorf("spawner message: %w", err)
		}
		for _, m := range msgs {
			rights, err := unix.ParseUnixRights(&m)
			if err != nil {
				closeAll(fds)
				return nil, fmt.Errorf("spawner message: %w", err)
			}
			fds = append(fds, rights...)
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		closeAll(fds)
		return nil, fmt.Errorf("spawner message: %w", err)
	}
	return fds, nil
}

// OOBSpace is the control buffer a packet with n descriptors needs.
func OOBSpace(n int) int { return unix.CmsgSpace(4 * n) }

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// InitCmd is the init at path, to be started with files as its standard streams, its
// config (ConfigFD) and its report (ReportFD), with InitAttr; with cpus, on those CPUs
// (CPUsArg) rather than on its starter's.
func InitCmd(path string, files []*os.File, cpus *unix.CPUSet) *exec.Cmd {
	args := []string{handover.HelperName}
	if cpus != nil {
		args = append(args, CPUsArg, FormatCPUs(cpus))
	}
	return &exec.Cmd{
		Path:        path,
		Args:        args,
		Env:         []string{},
		Dir:         "/",
		Stdin:       files[0],
		Stdout:      files[1],
		Stderr:      files[2],
		ExtraFiles:  files[3:], // descriptors 3 and 4
		SysProcAttr: InitAttr(),
	}
}

// StartInit starts the init mk makes (an InitCmd), born in its cgroup where b says
// (cgroup.Birth.Start; mk is called again when a clone into the cgroup fails and the
// init is started without it), and kills and reaps it again when the start fails after
// the process was started. It returns the Cmd it started, or tried last. The error wraps
// cgroup.ErrStranded when the starting thread could not move back to its own cgroups.
func StartInit(mk func() *exec.Cmd, b cgroup.Birth) (*exec.Cmd, error) {
	var cmd *exec.Cmd
	err := b.Start(func(cgroupFD int) error {
		cmd = mk()
		if cgroupFD >= 0 {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroupFD
		}
		return cmd.Start()
	})
	if err != nil && cmd != nil && cmd.Process != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
	return cmd, err
}

// InitAttr starts an init in new namespaces, in its own process group, killed with the
// thread that starts it. Its user namespace maps the starter's user and group to
// themselves, so files keep their owners; an unprivileged starter passes the init the
// capabilities it needs to build the sandbox (root in the namespace has them all). The
// network namespace is new even when the decision grants the network: the uplink then
// connects it.
func InitAttr() *syscall.SysProcAttr {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWNET)
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Setpgid:                    true, // out of the terminal's foreground group
		Pdeathsig:                  syscall.SIGKILL,
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	if uid != 0 {
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	}
	return attr
}

// MaxCPUs is how many CPUs a unix.CPUSet holds.
const MaxCPUs = len(unix.CPUSet{}) * int(unsafe.Sizeof(unix.CPUSet{}[0])) * 8

// FormatCPUs writes a CPU set as the numbers of its CPUs, comma-separated ("0,1,3").
func FormatCPUs(set *unix.CPUSet) string {
	var b []byte
	for cpu := range MaxCPUs {
		if set.IsSet(cpu) {
			if b != nil {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(cpu), 10)
		}
	}
	return string(b)
}

// ParseCPUs reads what FormatCPUs wrote: at least one CPU, each a number below the
// size of a CPU set.
func ParseCPUs(s string) (unix.CPUSet, error) {
	var set unix.CPUSet
	for f := range strings.SplitSeq(s, ",") {
		cpu, err := strconv.Atoi(f)
		if err != nil || cpu < 0 || cpu >= MaxCPUs || strconv.Itoa(cpu) != f {
			return unix.CPUSet{}, fmt.Errorf("CPU set %q: %q is not a CPU number below %d", s, f, MaxCPUs)
		}
		set.Set(cpu)
	}
	return set, nil
}

// KeepToOneCPU puts every thread of this process on one CPU, the first it may use, and
// returns the CPUs it had, for the inits it starts to go back to (CPUsArg): the
// spawner's, and cmdgate sandbox run's, which starts its one init itself. It returns nil
// when the process has a single CPU anyway. When some thread could not be moved, it
// returns the CPUs all the same, with the error: the inits go back to them whatever
// their starter's threads run on, and only the starter's speed is at stake.
func KeepToOneCPU() (*unix.CPUSet, error) {
	var had unix.CPUSet
	if err := unix.SchedGetaffinity(0, &had); err != nil {
		return nil, err
	}
	if had.Count() < 2 {
		return nil, nil
	}
	var one unix.CPUSet
	for cpu := 0; ; cpu++ {
		if had.IsSet(cpu) {
			one.Set(cpu)
			break
		}
	}
	return &had, setThreadsAffinity(&one)
}

// setThreadsAffinity sets the CPU affinity of every thread of this process, the calling
// thread first. The kernel keeps a mask to the CPUs the process's cpuset allows; the
// calling thread's mask after the call is what the others get. A thread the runtime
// starts meanwhile inherits the mask of the thread that starts it: the threads are
// listed again until every one has the mask.
func setThreadsAffinity(set *unix.CPUSet) error {
	if err := unix.SchedSetaffinity(0, set); err != nil {
		return err
	}
	var want unix.CPUSet
	if err := unix.SchedGetaffinity(0, &want); err != nil {
		return err
	}
	self := strconv.Itoa(unix.Gettid())
	for range 8 {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		settled, listed := true, false
		for _, e := range ents {
			listed = listed || e.Name() == self
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var cur unix.CPUSet
			err = unix.SchedGetaffinity(tid, &cur)
			if errors.Is(err, unix.ESRCH) || err == nil && cur == want {
				continue // done, or the thread has exited
			}
			settled = false
			if err := unix.SchedSetaffinity(tid, &want); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
		}
		if !listed {
			// /proc is another pid namespace's: its thread IDs are not ours.
			return errors.New("/proc/self/task does not list this thread")
		}
		if settled {
			return nil
		}
	}
	return errors.New("threads kept starting with other CPUs")
}

// Now is CLOCK_MONOTONIC in nanoseconds: one clock for the executor and the init (the
// sandbox has no time namespace of its own), so that an instant of one is comparable
// with an instant of the other.
func Now() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
