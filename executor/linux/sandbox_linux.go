package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// sandbox is one built sandbox: its init, ready for a command, with the command's
// streams and cgroup.
type sandbox struct {
	pid      int
	proc     *os.Process     // the init, when this process started it
	spawned  *spawned        // the init, when the spawner started it
	pidfdMu  sync.Mutex      // spawned.pidfd: signalled, then closed once the init is gone
	status   unix.WaitStatus // once exited, when this process started the init
	cg       *cgroup.Group
	streams  *executor.Streams
	cfgW     *os.File         // the layout, the command and the stops go here
	reports  chan wire.Report // after Ready: Exit or Error; closed at end of file
	exited   chan struct{}    // closed once the init has exited (then exitCode says how)
	landlock int              // the ABI the init reported
	timing   BuildTiming      // how long the build took, step by step
	uplink   *uplink          // the network, when the decision granted it
}

var _ executor.Tree = (*sandbox)(nil)

// Terminate asks the init to stop: it passes SIGTERM on to every process inside.
func (s *sandbox) Terminate() error { return s.stop(unix.SIGTERM) }

// Interrupt asks the init to interrupt: it passes SIGINT on to every process inside.
func (s *sandbox) Interrupt() error { return s.stop(unix.SIGINT) }

// stop sends the init a wire.Stop for sig, after its command: the init catches no
// signal (see package sandboxinit). An init that is gone (a broken pipe), or a sandbox
// released (cfgW closed), has nothing left to stop. A stop is one write smaller than
// PIPE_BUF: never torn, and safe beside release's close.
func (s *sandbox) stop(sig unix.Signal) error {
	b, err := json.Marshal(wire.Stop{Signal: int(sig)})
	if err != nil {
		return err
	}
	_, err = s.cfgW.Write(append(b, '\n'))
	if err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("ask the sandbox init %d to pass %v on: %w", s.pid, sig, err)
	}
	return nil
}

// Kill kills the init, and with it every process of its pid namespace: the kernel
// kills them all when a pid namespace's init dies, and the init is reaped only once they
// are gone.
func (s *sandbox) Kill() error { return s.signal(unix.SIGKILL) }

// signal signals the init through a pidfd (its os.Process's, or the one the spawner
// sent), which refuses once the init has exited: a PID reused meanwhile is never
// signalled.
func (s *sandbox) signal(sig unix.Signal) error {
	var err error
	if s.spawned != nil {
		s.pidfdMu.Lock()
		if s.spawned.pidfd >= 0 {
			if err = unix.PidfdSendSignal(s.spawned.pidfd, sig, nil, 0); errors.Is(err, unix.ESRCH) {
				err = nil
			}
		}
		s.pidfdMu.Unlock()
	} else if err = s.proc.Signal(sig); errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("signal the sandbox init %d with %v: %w", s.pid, sig, err)
	}
	return nil
}

// closePidfd closes the spawned init's pidfd, once it has exited.
func (s *sandbox) closePidfd() {
	if s.spawned == nil {
		return
	}
	s.pidfdMu.Lock()
	defer s.pidfdMu.Unlock()
	if s.spawned.pidfd >= 0 {
		unix.Close(s.spawned.pidfd)
		s.spawned.pidfd = -1
	}
}

// exitCode is the init's exit status in the shells' convention, once exited is closed.
func (s *sandbox) exitCode() int {
	st := s.status
	if s.spawned != nil {
		st = s.spawned.status
	}
	if st.Signaled() {
		return 128 + int(st.Signal())
	}
	return st.ExitStatus()
}

// build starts an init in new namespaces and its cgroup, sends it the sandbox's layout
// and waits until it reports the sandbox built. A non-nil cmd (a wire.Command) is sent
// right after the layout, and the sandbox then takes no other: the init starts it once
// built. Without a spawner (an Executor not probed), the calling goroutine must hold its
// OS thread for as long as the init lives: the parent-death signal that ties the init to
// the gateway fires when the thread that started it exits.
func (e *Executor) build(network bool, cmd []byte) (*sandbox, error) {
	begin := wire.Now()
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
	s := &sandbox{streams: streams, cfgW: cfgW, reports: make(chan wire.Report, 4), exited: make(chan struct{})}
	files := [wire.SpawnFiles]*os.File{streams.ChildStdin(), streams.ChildStdout(), streams.ChildStderr(), cfgR, repW}
	// The init is born in the command's cgroup where it can be (cgroup.Group.Birth),
	// else moved in once started (below).
	var birth cgroup.Birth
	spawnAt := wire.Now()
	if e.cgroups.Version() != 0 && !e.limits.zero() {
		s.cg, err = e.takeCgroup()
		if err != nil {
			err = fmt.Errorf("create the command's cgroup: %w", err)
		} else {
			birth = s.cg.Birth()
		}
		now := wire.Now()
		s.timing.Steps = append(s.timing.Steps, BuildStep{Step: "cgroup", US: (now - spawnAt) / 1000})
		spawnAt = now
	}
	var sp *spawner
	if err == nil {
		sp, err = e.currentSpawner()
	}
	if err == nil {
		if sp != nil {
			s.spawned, s.pid, err = sp.spawn(files[:], birth)
		} else {
			err = e.startInit(s, files, birth)
		}
	}
	spawned := wire.Now()
	cfgR.Close()
	repW.Close()
	streams.ChildStarted()
	if err != nil {
		streams.Abort()
		cfgW.Close()
		repR.Close()
		switch {
		case errors.Is(err, cgroup.ErrStranded):
			// This process's thread is still in the group: it is left as it is, never
			// killed (Kill would signal this process) nor reused.
			e.log.Error("sandbox: a thread could not leave a command's cgroup; the cgroup is left in place", "err", err)
		case s.cg != nil:
			e.putCgroup(s.cg)
		}
		return nil, executor.Internal("start the sandbox init "+e.helper, err)
	}
	go func() {
		wire.ReadReports(repR, s.reports)
		repR.Close()
	}()
	if s.spawned != nil {
		s.exited = s.spawned.exited
	}
	fail := func(what string, err error) (*sandbox, error) {
		s.Kill()
		e.release(s)
		return nil, executor.Internal(what, err)
	}
	// failStep is fail for a step that acts on the init: where the error shows the init
	// gone (no such process, a broken pipe), the failure is why it went.
	failStep := func(what string, err error) (*sandbox, error) {
		if errors.Is(err, unix.ESRCH) || errors.Is(err, syscall.EPIPE) {
			return fail("build the sandbox", e.lastWords(s))
		}
		return fail(what, err)
	}
	// Born in the group or not (no way to be born there on this host, a kernel without
	// clone3's CLONE_INTO_CGROUP, or a spawner of an earlier version), the init is in it
	// before it gets its layout.
	if s.cg != nil && !s.cg.Holds(s.pid) {
		if err := s.cg.Add(s.pid); err != nil {
			return failStep("move the sandbox into its cgroup", err)
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
		if s.uplink, err = startUplink(e.uplink, s.pid); err != nil {
			return fail("give the command the network", err)
		}
		layout.Network, layout.Nameserver = true, uplinkNameserver
	}
	b, err := json.Marshal(layout)
	if err == nil {
		_, err = cfgW.Write(b)
	}
	if err != nil {
		return failStep("send the sandbox its layout", err)
	}
	if cmd != nil {
		// cfgW stays open for the stops (sandbox.stop).
		if _, err = cfgW.Write(cmd); err != nil {
			return failStep("send the sandbox its command", err)
		}
	}
	select {
	case r, ok := <-s.reports:
		switch {
		case ok && r.Event == wire.EventReady:
			s.landlock = r.Landlock
			e.timed(s, begin, spawnAt, spawned, r)
			return s, nil
		case ok && r.Event == wire.EventError:
			return fail("build the sandbox", errors.New(r.Message))
		}
		return fail("build the sandbox", e.withoutReport())
	case <-time.After(buildTimeout):
		return fail("build the sandbox", fmt.Errorf("the init %s was not ready within %v", e.helper, buildTimeout))
	}
}

// timed completes the timing of s, built from begin, its init asked for at spawnAt and
// known to run (exec'd) at spawned, ready with r: the init's steps follow the
// executor's. The init may run its own code before its starter's word that it runs has
// reached this process (a busy machine): the spawn then ends where the init's code
// began, and its start took no time of its own, so that the steps never overlap.
func (e *Executor) timed(s *sandbox, begin, spawnAt, spawned int64, r wire.Report) {
	t := &s.timing
	if r.Started >= spawnAt {
		end := min(spawned, r.Started)
		t.Steps = append(t.Steps, BuildStep{Step: "spawn", US: (end - spawnAt) / 1000},
			BuildStep{Step: "start", US: (r.Started - end) / 1000})
	}
	for _, st := range r.Steps {
		t.Steps = append(t.Steps, BuildStep{Step: st.Name, US: st.NS / 1000})
	}
	t.TotalUS = (wire.Now() - begin) / 1000
	if f := e.onBuild.Load(); f != nil {
		(*f)(*t)
	}
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		e.log.Debug("sandbox: built", "build_us", t.String())
	}
}

// lastWords is why the init of s, gone before it got its layout, failed: the error it
// reported, else that it reported nothing.
func (e *Executor) lastWords(s *sandbox) error {
	select {
	case r, ok := <-s.reports:
		if ok && r.Event == wire.EventError {
			return errors.New(r.Message)
		}
	case <-time.After(buildTimeout):
	}
	return e.withoutReport()
}

func (e *Executor) withoutReport() error {
	return fmt.Errorf("the init %s ended without a report", e.helper)
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
// Creating one can cost milliseconds where the host has cgroup v1 (measured once: 5 to
// 16 ms for the memory, pids, cpu and freezer hierarchies of a 2-core VM; 0.1 to 0.4 ms
// on the same VM later, the memory hierarchy's mkdir the most), and those of finished
// commands come back only once their inits are gone, after the next command has
// started. Without a stock, about one cold start in ten paid for a new cgroup.
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
			if !e.keepCgroup(g) {
				break
			}
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
		e.keepCgroup(g)
		return
	}
	e.removeCgroup(g)
}

// keepCgroup keeps an empty cgroup among the free ones, or removes it when they are
// enough; it reports whether it kept it.
func (e *Executor) keepCgroup(g *cgroup.Group) bool {
	select {
	case e.cgFree <- g:
		return true
	default:
		e.removeCgroup(g)
		return false
	}
}

func (e *Executor) removeCgroup(g *cgroup.Group) {
	if err := g.Remove(); err != nil {
		e.log.Error("sandbox: remove a command's cgroup", "err", err)
	}
}

// buildTimeout bounds the building of one sandbox (milliseconds when the host is well).
const buildTimeout = 30 * time.Second

// startInit starts the init as this process's child (wire.InitAttr: new namespaces,
// killed with the calling thread), with files as its streams, config and report, born
// where b says. The init is s's from then on: a goroutine reaps it and closes s.exited.
func (e *Executor) startInit(s *sandbox, files [wire.SpawnFiles]*os.File, b cgroup.Birth) error {
	cmd, err := wire.StartInit(func() *exec.Cmd { return wire.InitCmd(e.helper, files[:], e.initCPUs) }, b)
	if err != nil {
		if errors.Is(err, cgroup.ErrStranded) {
			// The thread stays in the command's cgroup: locked once more, it outlives
			// the caller's UnlockOSThread, never runs another goroutine and ends with
			// the caller's.
			runtime.LockOSThread()
		}
		return err
	}
	s.proc, s.pid = cmd.Process, cmd.Process.Pid
	go func() {
		cmd.Wait() // a non-zero exit is the command's; ProcessState has it
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		s.status = unix.WaitStatus(ws)
		close(s.exited)
	}()
	return nil
}

// currentSpawner returns the spawner that starts the inits of a probed Executor,
// started anew when the last one is gone, or nil when this process starts them itself
// (an Executor for one command: cmdgate sandbox run).
func (e *Executor) currentSpawner() (*spawner, error) {
	if !e.spawn.Load() {
		return nil, nil
	}
	e.spMu.Lock()
	defer e.spMu.Unlock()
	if e.sp != nil && e.sp.alive() {
		return e.sp, nil
	}
	select {
	case <-e.stop:
		return nil, errors.New("the executor is closed")
	default:
	}
	if e.sp != nil {
		e.log.Warn("sandbox: the spawner is gone; starting another", "pid", e.sp.pid)
		e.sp.close()
	}
	sp, err := startSpawner(e.helper)
	if err != nil {
		return nil, err
	}
	e.sp = sp
	return sp, nil
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
		s.closePidfd()
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
		for range min(cap(e.pool), 2) {
			e.bg.Add(1)
			go e.fill()
		}
	})
}

// fill keeps the pool full until Close. Its goroutine holds one OS thread for its whole
// life, the parent of every pooled init (see build). It counts as at work ahead
// (e.ahead) from its start to its end, but for its pauses after a failed build: a Run
// that finds the pool empty may wait for what it is building (awaitAhead).
func (e *Executor) fill() {
	defer e.bg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e.ahead.Add(1)
	defer e.ahead.Add(-1)
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		e.settle()
		s, err := e.build(false, nil)
		if err != nil {
			e.log.Error("sandbox: build a sandbox ahead", "err", err)
			e.ahead.Add(-1)
			e.aheadMu.Lock()
			close(e.aheadDown) // wakes the Runs waiting for this build
			e.aheadDown = make(chan struct{})
			e.aheadMu.Unlock()
			select {
			case <-e.stop:
				e.ahead.Add(1) // for the deferred Add(-1)
				return
			case <-time.After(backoff):
			}
			e.ahead.Add(1)
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

// settleMax bounds how long a build ahead waits for the commands running to end.
const settleMax = 50 * time.Millisecond

// settle holds a build ahead back while commands run and the pool still has a sandbox
// for the next one, at most settleMax: the build would share the CPUs with the command
// and slow it down, and between an agent's commands there is time. An empty pool is
// refilled at once: a burst is waiting for it.
func (e *Executor) settle() {
	var deadline <-chan time.Time
	for len(e.pool) > 0 && e.running.Load() > 0 {
		if deadline == nil {
			t := time.NewTimer(settleMax)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-e.settled:
		case <-deadline:
			return
		case <-e.stop:
			return
		}
	}
}

// nudge wakes a build ahead held back by settle: a command ended or took a sandbox.
func (e *Executor) nudge() {
	select {
	case e.settled <- struct{}{}:
	default:
	}
}

// awaitAhead waits for the sandbox a filler is building when the pool is empty, and
// returns it; nil when there is no build ahead for this Run to wait for (no filler at
// work, or as many Runs already waiting as fillers at work), when a filler's build
// failed and none is left at work, or when ctx ends. A sandbox on the way is ready
// sooner than one started now, and a second build beside it would share the cores with
// it and slow both: measured back to back on 2 cores, one Run in six found the pool
// empty and spent about 7.7 ms building its own.
func (e *Executor) awaitAhead(ctx context.Context) *sandbox {
	if e.waiting.Add(1) > e.ahead.Load() {
		e.waiting.Add(-1)
		return nil
	}
	defer e.waiting.Add(-1)
	for {
		e.aheadMu.Lock()
		down := e.aheadDown
		e.aheadMu.Unlock()
		if e.ahead.Load() < e.waiting.Load() {
			return nil // a filler stopped: not every Run waiting has a build on the way
		}
		select {
		case s := <-e.pool:
			e.nudge()
			if e.alive(s) {
				return s
			}
		case <-down:
		case <-ctx.Done():
			return nil
		case <-e.stop:
			return nil
		}
	}
}

// fromPool takes a built sandbox whose init is still alive, or returns nil.
func (e *Executor) fromPool() *sandbox {
	defer e.nudge()
	for {
		select {
		case s := <-e.pool:
			if e.alive(s) {
				return s
			}
		default:
			return nil
		}
	}
}

// alive reports whether the init of a sandbox taken from the pool is still there; one
// that died waiting (killed from outside) is discarded.
func (e *Executor) alive(s *sandbox) bool {
	select {
	case <-s.exited:
		e.discard(s)
		return false
	default:
		return true
	}
}

// Close stops building sandboxes ahead, drops those built, waits for every init the
// Executor started to be gone, ends the spawner and removes the cgroups kept for reuse. Runs still going are not stopped; call Close after them.
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
	e.spMu.Lock()
	if e.sp != nil {
		e.sp.close()
		e.sp = nil
	}
	e.spMu.Unlock()
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
