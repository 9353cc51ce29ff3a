package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/internal/proc"
	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// sandbox is one built sandbox: its init, ready for a command, with the command's
// streams and cgroup.
type sandbox struct {
	cmd      *exec.Cmd
	cg       *cgroup.Group
	streams  *executor.Streams
	cfgW     *os.File         // the command goes here
	reports  chan wire.Report // after Ready: Exit or Error; closed at end of file
	exited   chan struct{}    // closed once the init has exited and been reaped
	landlock int              // the ABI the init reported
	uplink   *uplink          // the network, when the decision granted it
}

var _ executor.Tree = (*sandbox)(nil)

// Terminate asks the init to stop: it passes SIGTERM on to every process inside.
func (s *sandbox) Terminate() error { return s.signal(unix.SIGTERM) }

// Interrupt asks the init to interrupt: it passes SIGINT on to every process inside.
func (s *sandbox) Interrupt() error { return s.signal(unix.SIGINT) }

// Kill kills the init, and with it every process of its pid namespace: the kernel
// kills them all when a pid namespace's init dies, and the init is reaped only once they
// are gone.
func (s *sandbox) Kill() error { return s.signal(unix.SIGKILL) }

// signal signals the init through its os.Process, which refuses once the init has been
// reaped (a pidfd on Linux): a PID reused meanwhile is never signalled.
func (s *sandbox) signal(sig unix.Signal) error {
	err := s.cmd.Process.Signal(sig)
	if err == nil || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return fmt.Errorf("signal the sandbox init %d with %v: %w", s.cmd.Process.Pid, sig, err)
}

// exitCode is the init's exit status in the shells' convention, once exited is closed.
func (s *sandbox) exitCode() int { return proc.ExitCode(s.cmd.ProcessState) }

// build starts an init in new namespaces and its cgroup, sends it the sandbox's layout
// and waits until it reports the sandbox built. A non-nil cmd (a wire.Command) is sent
// right after the layout, and the sandbox then takes no other: the init starts it once
// built. The calling goroutine must hold its OS thread for as long as the init lives:
// the parent-death signal that ties the init to the gateway fires when the thread that
// started it exits.
func (e *Executor) build(network bool, cmd []byte) (*sandbox, error) {
	streams, err := executor.NewStreams(true)
	if err != nil {
		return nil, executor.Internal("create pipes", err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		streams.Abort()
		return nil, executor.Internal("create pipes", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		streams.Abort()
		cfgR.Close()
		cfgW.Close()
		return nil, executor.Internal("create pipes", err)
	}
	ic := &exec.Cmd{
		Path:        e.helper,
		Args:        []string{HelperName},
		Env:         []string{},
		Dir:         "/",
		Stdin:       streams.ChildStdin(),
		Stdout:      streams.ChildStdout(),
		Stderr:      streams.ChildStderr(),
		ExtraFiles:  []*os.File{cfgR, repW}, // descriptors 3 and 4
		SysProcAttr: sysProcAttr(),
	}
	err = ic.Start()
	cfgR.Close()
	repW.Close()
	streams.ChildStarted()
	if err != nil {
		streams.Abort()
		cfgW.Close()
		repR.Close()
		return nil, executor.Internal("start the sandbox init "+e.helper, err)
	}
	s := &sandbox{cmd: ic, streams: streams, cfgW: cfgW,
		reports: make(chan wire.Report, 4), exited: make(chan struct{})}
	go func() {
		wire.ReadReports(repR, s.reports)
		repR.Close()
	}()
	go func() {
		ic.Wait() // a non-zero exit is the command's; ProcessState has it
		close(s.exited)
	}()
	fail := func(what string, err error) (*sandbox, error) {
		s.Kill()
		e.release(s)
		return nil, executor.Internal(what, err)
	}
	if e.cgroups.Version() != 0 && !e.limits.zero() {
		if s.cg, err = e.takeCgroup(); err != nil {
			return fail("create the command's cgroup", err)
		}
		if err := s.cg.Add(ic.Process.Pid); err != nil {
			return fail("move the sandbox into its cgroup", err)
		}
	}
	layout := wire.Config{
		Workspace: e.workspace,
		ReadOnly:  e.readOnly,
		Hide:      e.hide,
		Caches:    e.cfg.Caches.Dir,
		Hostname:  "cmdgate",
		TmpSize:   e.tmpSize,
	}
	if network {
		// The uplink is attached before the init gets its layout: the init closes the
		// host's addresses off once tap0 and its default route exist.
		if e.uplink == "" {
			return fail("give the command the network", e.uplinkErr)
		}
		if layout.Unreachable, err = unreachable(); err != nil {
			return fail("give the command the network", err)
		}
		if s.uplink, err = startUplink(e.uplink, ic.Process.Pid); err != nil {
			return fail("give the command the network", err)
		}
		layout.Network, layout.Nameserver = true, uplinkNameserver
	}
	b, err := json.Marshal(layout)
	if err == nil {
		_, err = cfgW.Write(b)
	}
	if err != nil {
		return fail("send the sandbox its layout", err)
	}
	if cmd != nil {
		_, err = cfgW.Write(cmd)
		cfgW.Close()
		if err != nil {
			return fail("send the sandbox its command", err)
		}
	}
	select {
	case r, ok := <-s.reports:
		switch {
		case ok && r.Event == wire.EventReady:
			s.landlock = r.Landlock
			return s, nil
		case ok && r.Event == wire.EventError:
			return fail("build the sandbox", errors.New(r.Message))
		}
		return fail("build the sandbox", fmt.Errorf("the init %s ended without a report", e.helper))
	case <-time.After(buildTimeout):
		return fail("build the sandbox", fmt.Errorf("the init %s was not ready within %v", e.helper, buildTimeout))
	}
}

// cgroupSeq numbers the cgroups of this process, across Executors.
var cgroupSeq atomic.Uint64

// takeCgroup returns an empty cgroup with the Executor's limits: one a finished command
// left or the stock made ahead, else a new one.
func (e *Executor) takeCgroup() (*cgroup.Group, error) {
	select {
	case g := <-e.cgFree:
		if len(e.cgFree) < cgroupStock {
			select {
			case e.cgLow <- struct{}{}:
			default:
			}
		}
		return g, nil
	default:
	}
	return e.newCgroup()
}

// newCgroup creates an empty cgroup with the Executor's limits.
func (e *Executor) newCgroup() (*cgroup.Group, error) {
	// Names are unique in this process; one left by a process that had this PID before
	// (and crashed) is skipped.
	var err error
	for range 8 {
		var g *cgroup.Group
		name := fmt.Sprintf("run-%d-%d", os.Getpid(), cgroupSeq.Add(1))
		if g, err = e.cgroups.New(name, e.limits.cgroup()); err == nil {
			return g, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return nil, err
}

// cgroupStock is how many empty cgroups the Executor keeps made ahead once probed.
// Creating one costs milliseconds where the host has cgroup v1 (measured: 5 to 16 ms for
// the memory, pids, cpu and freezer hierarchies of a 2-core VM, against 0.1 ms to move
// a process in), and those of finished commands come back only once their inits are
// gone, after the next command has started. Without a stock, about one cold start in
// ten paid for a new cgroup.
const cgroupStock = 4

// stockCgroups keeps cgroupStock empty cgroups made ahead until Close, topping the
// stock up whenever takeCgroup finds it low.
func (e *Executor) stockCgroups() {
	defer e.bg.Done()
	for {
		for len(e.cgFree) < cgroupStock {
			g, err := e.newCgroup()
			if err != nil {
				e.log.Error("sandbox: make a cgroup ahead", "err", err)
				break
			}
			select {
			case e.cgFree <- g:
				continue
			default:
			}
			if err := g.Remove(); err != nil {
				e.log.Error("sandbox: remove a command's cgroup", "err", err)
			}
			break
		}
		select {
		case <-e.stop:
			return
		case <-e.cgLow:
		}
	}
}

// putCgroup keeps an empty cgroup for the next command, or removes it.
func (e *Executor) putCgroup(g *cgroup.Group) {
	if empty, err := g.Empty(); err == nil && empty {
		select {
		case e.cgFree <- g:
			return
		default:
		}
	}
	if err := g.Remove(); err != nil {
		e.log.Error("sandbox: remove a command's cgroup", "err", err)
	}
}

// buildTimeout bounds the building of one sandbox (milliseconds when the host is well).
const buildTimeout = 30 * time.Second

// sysProcAttr starts the init in new namespaces, in its own process group, killed with the
// gateway. Its user namespace maps the gateway's user and group to themselves, so files
// keep their owners; an unprivileged gateway passes the init the capabilities it needs
// to build the sandbox (root in the namespace has them all). The network namespace is
// new even when the decision grants the network: the uplink then connects it.
func sysProcAttr() *syscall.SysProcAttr {
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

// release finishes with a sandbox whose command is over (or that will get none): it
// kills the init (a no-op once it has exited), and in the background waits for it to
// be gone, reaps it and removes its cgroup. The init's own exit, which takes its
// namespaces and mounts down, is off the command's path.
func (e *Executor) release(s *sandbox) {
	s.cfgW.Close()
	s.Kill()
	s.streams.Abort()
	e.bg.Add(1)
	e.releasing.Add(1)
	go func() {
		defer e.bg.Done()
		defer e.releasing.Add(-1)
		<-s.exited
		for range s.reports {
		}
		if s.uplink != nil {
			s.uplink.stop()
		}
		if s.cg != nil {
			e.putCgroup(s.cg)
		}
	}()
}

// discard drops a built sandbox that ran nothing: without a command the init exits by
// itself.
func (e *Executor) discard(s *sandbox) { e.release(s) }

// startPool starts keeping Options.Pool sandboxes without network built ahead, and
// cgroupStock cgroups for the commands, once.
func (e *Executor) startPool() {
	e.poolOnce.Do(func() {
		if e.cgroups.Version() != 0 && !e.limits.zero() {
			e.bg.Add(1)
			go e.stockCgroups()
		}
		if cap(e.pool) > 0 {
			e.bg.Add(1)
			go e.fill()
		}
	})
}

// fill keeps the pool full until Close. Its goroutine holds one OS thread for its whole
// life, the parent of every pooled init (see build).
func (e *Executor) fill() {
	defer e.bg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		s, err := e.build(false, nil)
		if err != nil {
			e.log.Error("sandbox: build a sandbox ahead", "err", err)
			select {
			case <-e.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		select {
		case e.pool <- s:
		case <-e.stop:
			e.discard(s)
			return
		}
	}
}

// fromPool takes a built sandbox whose init is still alive, or returns nil.
func (e *Executor) fromPool() *sandbox {
	for {
		select {
		case s := <-e.pool:
			select {
			case <-s.exited:
				e.discard(s) // died waiting (killed from outside): build another
				continue
			default:
				return s
			}
		default:
			return nil
		}
	}
}

// Close stops building sandboxes ahead, drops those built, waits for every init the
// Executor started to be gone and removes the cgroups kept for reuse. Runs still going are not stopped; call Close after them.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() { close(e.stop) })
	for {
		select {
		case s := <-e.pool:
			e.discard(s)
			continue
		default:
		}
		break
	}
	e.bg.Wait()
	// The filler may have put one more in before it saw stop.
	for {
		select {
		case s := <-e.pool:
			e.discard(s)
			e.bg.Wait()
			continue
		default:
		}
		break
	}
	var errs []error
	for {
		select {
		case g := <-e.cgFree:
			errs = append(errs, g.Remove())
			continue
		default:
		}
		return errors.Join(errs...)
	}
}
