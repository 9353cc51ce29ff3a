package linux

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// spawner is the Executor's cmdgate-sandbox in spawner mode (see wire.SpawnArg): it
// starts the inits, so that starting one costs the same whatever the gateway's heap.
// It dies with the gateway (parent-death signal, tied to a thread kept for it), and
// every init it started dies with it.
type spawner struct {
	conn *net.UnixConn
	pid  int
	done chan struct{} // closed once the spawner has exited and been reaped

	mu      sync.Mutex
	next    uint64
	pending map[uint64]*spawned
	gone    error // why the spawner takes no more requests, once it does not
}

// spawned is one init the spawner started, as the executor follows it.
type spawned struct {
	started chan spawnStart // the spawner's answer
	running bool            // the answer was a pid (read's own)
	pidfd   int
	exited  chan struct{} // closed once the init has exited
	status  unix.WaitStatus
}

type spawnStart struct {
	pid int
	err error
}

// startSpawner starts the helper as a spawner. A goroutine keeps its OS thread until
// the spawner has exited (the parent-death signal fires when that thread ends); close
// waits for it.
func startSpawner(helper string) (*spawner, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("spawner socket: %w", err)
	}
	local, remote := os.NewFile(uintptr(fds[0]), "spawner"), os.NewFile(uintptr(fds[1]), "spawner")
	c, err := net.FileConn(local)
	local.Close()
	if err != nil {
		remote.Close()
		return nil, fmt.Errorf("spawner socket: %w", err)
	}
	sp := &spawner{conn: c.(*net.UnixConn), done: make(chan struct{}), pending: map[uint64]*spawned{}}
	started := make(chan error, 1)
	go func() {
		defer close(sp.done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// No namespace is new here: the start is a vfork, cheap from any heap.
		cmd := &exec.Cmd{
			Path:        helper,
			Args:        []string{HelperName, wire.SpawnArg},
			Env:         []string{},
			Dir:         "/",
			ExtraFiles:  []*os.File{remote}, // descriptor 3
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
		}
		err := cmd.Start()
		remote.Close()
		if err != nil {
			sp.conn.Close()
			started <- fmt.Errorf("start the sandbox spawner %s: %w", helper, err)
			return
		}
		sp.pid = cmd.Process.Pid
		started <- nil
		cmd.Wait()
	}()
	if err := <-started; err != nil {
		<-sp.done
		return nil, err
	}
	go sp.read()
	return sp, nil
}

// read dispatches the spawner's replies until its socket ends, then fails whatever is
// pending: the inits it started die with it (parent-death signal), and each is marked
// exited once it has.
func (sp *spawner) read() {
	buf := make([]byte, wire.MaxPacket)
	oob := make([]byte, wire.OOBSpace(1))
	var err error
	for {
		var n, oobn int
		n, oobn, _, _, err = sp.conn.ReadMsgUnix(buf, oob)
		if err == nil && n == 0 {
			err = errors.New("the spawner closed its socket")
		}
		if err != nil {
			break
		}
		var r wire.SpawnReply
		fds, derr := wire.DecodePacket(buf[:n], oob[:oobn], &r)
		if derr != nil {
			err = derr
			break
		}
		sp.mu.Lock()
		s := sp.pending[r.ID]
		if r.Exited || r.Error != "" {
			delete(sp.pending, r.ID)
		}
		sp.mu.Unlock()
		switch {
		case s == nil:
			closeFDs(fds)
		case r.Exited:
			closeFDs(fds)
			s.status = unix.WaitStatus(r.Status)
			close(s.exited)
		case r.Error != "":
			closeFDs(fds)
			s.started <- spawnStart{err: errors.New(r.Error)}
		case len(fds) != 1:
			closeFDs(fds)
			s.started <- spawnStart{err: fmt.Errorf("the spawner sent %d descriptors with pid %d, want its pidfd", len(fds), r.Pid)}
		default:
			s.pidfd, s.running = fds[0], true
			s.started <- spawnStart{pid: r.Pid}
		}
	}
	sp.mu.Lock()
	sp.gone = fmt.Errorf("the sandbox spawner is gone: %w", err)
	pending := sp.pending
	sp.pending = nil
	sp.mu.Unlock()
	sp.conn.Close()
	for _, s := range pending {
		if s.running {
			go s.waitGone()
		} else {
			s.started <- spawnStart{err: sp.gone}
		}
	}
}

// waitGone marks an init exited once it has, killed by its parent-death signal: the
// spawner that would have reported it is gone.
func (s *spawned) waitGone() {
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(s.pidfd), Events: unix.POLLIN}}, -1)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	s.status = unix.WaitStatus(unix.SIGKILL) // killed by a signal: 128+9
	close(s.exited)
}

// spawn starts an init with files (wire.SpawnFiles of them) as its standard streams,
// config and report, born in its cgroup where b says (see wire.SpawnRequest), and
// returns it with its pid.
func (sp *spawner) spawn(files []*os.File, b cgroup.Birth) (*spawned, int, error) {
	s := &spawned{started: make(chan spawnStart, 1), pidfd: -1, exited: make(chan struct{})}
	sp.mu.Lock()
	if sp.gone != nil {
		sp.mu.Unlock()
		return nil, 0, sp.gone
	}
	sp.next++
	id := sp.next
	sp.pending[id] = s
	sp.mu.Unlock()
	var fds []int
	for _, f := range files {
		fds = append(fds, int(f.Fd()))
	}
	rc, err := sp.conn.SyscallConn()
	if err == nil {
		werr := rc.Write(func(fd uintptr) bool {
			err = wire.SendPacket(int(fd), wire.SpawnRequest{ID: id, Cgroup: b.Into, Home: b.Home, CgroupDir: b.Dir}, fds...)
			return !errors.Is(err, unix.EAGAIN)
		})
		if err == nil {
			err = werr
		}
	}
	runtime.KeepAlive(files)
	if err != nil {
		sp.mu.Lock()
		if sp.pending != nil {
			delete(sp.pending, id)
		}
		sp.mu.Unlock()
		return nil, 0, fmt.Errorf("ask the sandbox spawner: %w", err)
	}
	st := <-s.started
	if st.err != nil {
		return nil, 0, st.err
	}
	return s, st.pid, nil
}

// alive reports whether the spawner takes requests.
func (sp *spawner) alive() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.gone == nil
}

// close ends the spawner and waits until it has exited: every init it started dies
// with it.
func (sp *spawner) close() {
	sp.conn.Close()
	<-sp.done
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
