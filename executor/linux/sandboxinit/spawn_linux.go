package sandboxinit

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// spawn is the spawner (see wire.SpawnArg): it starts an init for every request on its
// socket, from the main thread, so that every init's parent-death signal is tied to
// this process's life, and reports each init's exit. It exits at end of file on the
// socket, taking every init it started with it.
func spawn() {
	const sock = wire.SpawnFD
	if typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_SEQPACKET {
		fmt.Fprintln(os.Stderr, "cmdgate-sandbox spawn: started without its socket: it is run by cmdgate, not by hand")
		os.Exit(125)
	}
	// Nothing of the spawner but what a request passes reaches an init.
	if err := unix.CloseRange(sock, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintln(os.Stderr, "cmdgate-sandbox spawner: close-on-exec:", err)
		os.Exit(125)
	}
	cpus, err := wire.KeepToOneCPU()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmdgate-sandbox spawner: keep to one CPU:", err)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmdgate-sandbox spawner:", err)
		os.Exit(125)
	}
	var sendMu sync.Mutex
	reply := func(r wire.SpawnReply, files ...int) {
		sendMu.Lock()
		defer sendMu.Unlock()
		if err := wire.SendPacket(sock, r, files...); err != nil {
			os.Exit(125) // the executor is gone
		}
	}
	buf := make([]byte, wire.MaxPacket)
	oob := make([]byte, wire.OOBSpace(wire.SpawnFiles))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			os.Exit(0)
		}
		var req wire.SpawnRequest
		fds, err := wire.DecodePacket(buf[:n], oob[:oobn], &req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cmdgate-sandbox spawner:", err)
			os.Exit(125)
		}
		if len(fds) != wire.SpawnFiles {
			for _, fd := range fds {
				unix.Close(fd)
			}
			reply(wire.SpawnReply{ID: req.ID, Error: fmt.Sprintf("spawner: %d descriptors, want %d", len(fds), wire.SpawnFiles)})
			continue
		}
		cmd, pidfd, err := startInit(self, fds, cpus, req.Birth())
		if errors.Is(err, cgroup.ErrStranded) {
			// This thread, the parent of every init, is still in the command's cgroup:
			// the init it started is killed, and the spawner exits (its inits with it);
			// the executor starts another.
			fmt.Fprintln(os.Stderr, "cmdgate-sandbox spawner:", err)
			os.Exit(125)
		}
		if err != nil {
			reply(wire.SpawnReply{ID: req.ID, Error: err.Error()})
			continue
		}
		reply(wire.SpawnReply{ID: req.ID, Pid: cmd.Process.Pid}, pidfd)
		unix.Close(pidfd)
		go func(id uint64) {
			cmd.Wait() // the status is the init's; ProcessState has it
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			reply(wire.SpawnReply{ID: id, Exited: true, Status: uint32(ws)})
		}(req.ID)
	}
}

// startInit starts an init with fds as its standard streams, config and report, on
// cpus when not nil, born in its cgroup where b says, and returns it with a pidfd for
// the executor. It closes fds. When the thread cannot come back from the cgroup, the
// init is killed and the error wraps cgroup.ErrStranded.
func startInit(self string, fds []int, cpus *unix.CPUSet, b cgroup.Birth) (*exec.Cmd, int, error) {
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "spawned")
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	pidfd := -1
	cmd, err := wire.StartInit(func() *exec.Cmd {
		cmd := wire.InitCmd(self, files, cpus)
		cmd.SysProcAttr.PidFD = &pidfd
		return cmd
	}, b)
	if err != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return nil, -1, fmt.Errorf("start the sandbox init %s: %w", self, err)
	}
	return cmd, pidfd, nil
}
