//go:build linux

package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/internal/proc"
	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// Executor runs each command in a fresh sandbox. It is safe for concurrent use.
type Executor struct {
	cfg       executor.Config
	helper    string
	workspace string
	readOnly  []string
	hide      []string
	tmpSize   int64
	limits    Limits
	cgroups   *cgroup.Manager
	seq       atomic.Uint64
}

var _ executor.Executor = (*Executor)(nil)

// New checks opts and returns an Executor. It does not try the sandbox: Probe does.
func New(opts Options) (*Executor, error) {
	opts = opts.withDefaults()
	helper := opts.Helper
	if helper == "" {
		var err error
		if helper, err = FindHelper(); err != nil {
			return nil, err
		}
	}
	ws, err := workspace(opts.Workspace, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	e := &Executor{
		cfg:       opts.Config,
		helper:    helper,
		workspace: ws,
		readOnly:  opts.ReadOnly,
		tmpSize:   opts.TmpSize,
		limits:    opts.Limits,
		cgroups:   cgroup.Detect(),
	}
	underRO := func(p string) bool {
		return slices.ContainsFunc(e.readOnly, func(r string) bool { return within(p, r) })
	}
	for _, p := range DefaultHide {
		if underRO(p) {
			e.hide = append(e.hide, p)
		}
	}
	for _, p := range opts.ExtraHide {
		if !underRO(p) {
			return nil, fmt.Errorf("sandbox: hidden path %s is not under a read-only directory", p)
		}
		e.hide = append(e.hide, p)
	}
	return e, nil
}

// workspace resolves the workspace and refuses one that would expose the system
// directories read-write.
func workspace(dir string, readOnly []string) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("sandbox: workspace %q is not an absolute path", dir)
	}
	ws, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace: %w", err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("sandbox: workspace %s is not a directory", ws)
	}
	for _, r := range readOnly {
		if within(r, ws) {
			return "", fmt.Errorf("sandbox: workspace %s contains the system directory %s", ws, r)
		}
	}
	return ws, nil
}

// within reports whether path p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Workspace is the resolved workspace.
func (e *Executor) Workspace() string { return e.workspace }

// Run runs spec in a new sandbox; see the package documentation.
func (e *Executor) Run(ctx context.Context, spec executor.Spec) (executor.Result, error) {
	spec, err := e.cfg.Prepare(spec)
	if err != nil {
		return executor.Result{}, err
	}
	if err := executor.CheckDir(spec.Dir); err != nil {
		return executor.Result{}, err
	}
	dir, err := filepath.EvalSymlinks(spec.Dir)
	if err != nil {
		return executor.Result{}, executor.Internal("resolve the working directory", err)
	}
	if !within(dir, e.workspace) {
		return executor.Result{}, &executor.Error{Code: executor.CodeInvalidArgument,
			Message: fmt.Sprintf("working directory %s is outside the workspace %s: the sandbox shows only the workspace", spec.Dir, e.workspace)}
	}
	env, err := e.cfg.Environ()
	if err != nil {
		return executor.Result{}, executor.Internal("environment", err)
	}
	wc := e.wireConfig(dir, env, spec.Network)
	if spec.ShellMode == executor.ShellDirect {
		wc.Argv = spec.Argv
	} else {
		wc.Script = spec.Script
		if wc.Script == "" {
			wc.Script = executor.QuotePOSIX(spec.Argv)
		}
		wc.Shells = []string{"bash", "sh"}
	}
	wc.Rlimits = rlimits(spec)
	if ctx.Err() != nil {
		return executor.Result{}, fmt.Errorf("run in sandbox: not started: %w", context.Cause(ctx))
	}
	return e.run(ctx, spec, wc)
}

func (e *Executor) wireConfig(dir string, env []string, network bool) wire.Config {
	return wire.Config{
		Dir:       dir,
		Env:       env,
		Workspace: e.workspace,
		ReadOnly:  e.readOnly,
		Hide:      e.hide,
		Network:   network,
		Hostname:  "cmdgate",
		TmpSize:   e.tmpSize,
	}
}

// rlimits are the Spec's, plus RLIMIT_CPU as a backstop to the watchdog: CPU time for the
// whole timeout on every CPU, and a second.
func rlimits(spec executor.Spec) []wire.Rlimit {
	var out []wire.Rlimit
	for _, l := range spec.Resources.Rlimits() {
		res, ok := rlimitNumbers[l.Resource]
		if ok {
			out = append(out, wire.Rlimit{Resource: res, Value: l.Value})
		}
	}
	cpu := uint64(math.Ceil(spec.Timeout.Seconds()))*uint64(runtime.NumCPU()) + 1
	return append(out, wire.Rlimit{Resource: unix.RLIMIT_CPU, Value: cpu})
}

var rlimitNumbers = map[executor.RlimitResource]int{
	executor.RlimitCore:      unix.RLIMIT_CORE,
	executor.RlimitFileSize:  unix.RLIMIT_FSIZE,
	executor.RlimitOpenFiles: unix.RLIMIT_NOFILE,
	executor.RlimitProcesses: unix.RLIMIT_NPROC,
}

// sandbox is one started init: the process the executor waits for and signals, and its
// cgroup.
type sandbox struct {
	cmd     *exec.Cmd
	cg      *cgroup.Group
	reports chan []wire.Report
}

// Terminate asks the init to stop: it passes SIGTERM on to every process inside.
func (s *sandbox) Terminate() error { return s.signal(unix.SIGTERM) }

// Kill kills the init, and with it the whole pid namespace, and whatever is left in the
// cgroup.
func (s *sandbox) Kill() error {
	err := s.signal(unix.SIGKILL)
	if s.cg != nil {
		err = errors.Join(err, s.cg.Kill())
	}
	return err
}

// signal signals the init; it is called only while the init is unreleased (running or a
// zombie), so its PID names no other process.
func (s *sandbox) signal(sig unix.Signal) error {
	err := unix.Kill(s.cmd.Process.Pid, sig)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("signal the sandbox init %d with %v: %w", s.cmd.Process.Pid, sig, err)
}

// start starts the init in its namespaces and cgroup and hands it wc. The calling
// goroutine must hold its OS thread until the init is gone: the parent-death signal
// fires when the thread that started the init exits.
func (e *Executor) start(wc wire.Config, streams *executor.Streams) (*sandbox, error) {
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, executor.Internal("create pipes", err)
	}
	defer cfgR.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		cfgW.Close()
		return nil, executor.Internal("create pipes", err)
	}
	cmd := &exec.Cmd{
		Path:        e.helper,
		Args:        []string{"cmdgate-sandbox"},
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  []*os.File{cfgR, repW}, // descriptors 3 and 4
		SysProcAttr: sysProcAttr(wc.Network),
	}
	if streams != nil {
		cmd.Stdout, cmd.Stderr = streams.ChildStdout(), streams.ChildStderr()
		if in := streams.ChildStdin(); in != nil {
			cmd.Stdin = in
		}
	}
	err = cmd.Start()
	repW.Close()
	if err != nil {
		cfgW.Close()
		repR.Close()
		return nil, executor.Internal("start the sandbox init "+e.helper, err)
	}
	s := &sandbox{cmd: cmd, reports: make(chan []wire.Report, 1)}
	go func() {
		reps, _ := wire.ReadReports(repR) // a torn report reads as none: the init died
		repR.Close()
		s.reports <- reps
	}()
	abort := func(what string, err error) (*sandbox, error) {
		cfgW.Close()
		s.Kill()
		cmd.Wait()
		if s.cg != nil {
			s.cg.Remove()
		}
		<-s.reports
		return nil, executor.Internal(what, err)
	}
	if e.cgroups.Version() != 0 && !e.limits.zero() {
		name := fmt.Sprintf("run-%d-%d", os.Getpid(), e.seq.Add(1))
		if s.cg, err = e.cgroups.New(name, e.limits.cgroup()); err != nil {
			return abort("create the command's cgroup", err)
		}
		if err := s.cg.Add(cmd.Process.Pid); err != nil {
			return abort("move the sandbox into its cgroup", err)
		}
	}
	err = writeConfig(cfgW, wc)
	cfgW.Close()
	if err != nil {
		return abort("send the sandbox its configuration", err)
	}
	return s, nil
}

func writeConfig(w io.Writer, wc wire.Config) error {
	b, err := json.Marshal(wc)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// sysProcAttr starts the init in new namespaces, in its own session, killed with the
// gateway. Its user namespace maps the gateway's user and group to themselves, so files
// keep their owners; an unprivileged gateway passes the init the capabilities it needs
// to build the sandbox (root in the namespace has them all).
func sysProcAttr(network bool) *syscall.SysProcAttr {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if !network {
		flags |= unix.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Setsid:                     true,
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

// run starts the sandbox and sees the command through.
func (e *Executor) run(ctx context.Context, spec executor.Spec, wc wire.Config) (executor.Result, error) {
	res := executor.Result{Cwd: spec.Dir, Command: echo(spec)}
	streams, err := executor.NewStreams(spec.Stdin != "", spec.MaxOutputChars)
	if err != nil {
		return executor.Result{}, executor.Internal("create pipes", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	s, err := e.start(wc, streams)
	if err != nil {
		streams.Abort()
		return executor.Result{}, err
	}
	streams.Started(spec.Stdin)

	wd := executor.Watch(ctx, s, spec.Timeout, e.cfg.Grace())
	leader, _ := proc.NewGroup(s.cmd.Process.Pid) // only to wait without releasing the init
	waitErr := leader.WaitExit()
	out := wd.Exited(streams.Drained())
	waitErr = errors.Join(waitErr, ignoreExit(s.cmd.Wait()))
	reps := <-s.reports
	var cgErr error
	if s.cg != nil {
		cgErr = s.cg.Remove()
	}
	streams.Finish(e.cfg.Delay(), &res)
	res.DurationMS = time.Since(start).Milliseconds()

	last := wire.Report{}
	if len(reps) > 0 {
		last = reps[len(reps)-1]
	}
	switch {
	case out.TimedOut:
		res.TimedOut, res.ExitCode = true, 124
	case last.Event == wire.EventExit && last.Signal != 0:
		res.ExitCode = 128 + last.Signal
	case last.Event == wire.EventExit:
		res.ExitCode = last.ExitCode
	case last.Event == wire.EventError && out.Cause == nil:
		return executor.Result{}, reportError(last)
	case s.cmd.ProcessState != nil:
		// The init died without a word: killed with everything inside (the memory
		// limit, the gateway's Kill).
		res.ExitCode = proc.ExitCode(s.cmd.ProcessState)
	}
	if err := errors.Join(waitErr, out.Err, cgErr); err != nil {
		return res, executor.Internal("stop the sandbox", err)
	}
	if out.Cause != nil {
		return res, fmt.Errorf("run in sandbox: stopped: %w", out.Cause)
	}
	return res, nil
}

// reportError turns the init's error report into the executor's typed error.
func reportError(r wire.Report) error {
	switch r.Code {
	case wire.CodeNotDirectory:
		return &executor.Error{Code: executor.CodeNotDirectory, Message: r.Message}
	case wire.CodeCommandNotFound:
		return &executor.Error{Code: executor.CodeCommandNotFound, Message: r.Message}
	}
	return executor.Internal("build the sandbox", errors.New(r.Message))
}

// ignoreExit drops the error that only reports a non-zero exit: that is a result.
func ignoreExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

// echo is the Result's Command: the request as given.
func echo(spec executor.Spec) []string {
	if spec.Script != "" {
		return []string{spec.Script}
	}
	return slices.Clone(spec.Argv)
}

// Probe builds a complete sandbox once, with every protection, and runs nothing in it:
// where it fails, the backend cannot be honoured here. It returns what is in force.
func (e *Executor) Probe(ctx context.Context) (Status, error) {
	st := e.status()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wc := e.wireConfig(e.workspace, nil, false)
	wc.Probe = true
	s, err := e.start(wc, nil)
	if err != nil {
		return st, fmt.Errorf("sandbox probe: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { s.Kill() })
	waitErr := s.cmd.Wait()
	stop()
	if s.cg != nil {
		s.cg.Remove()
	}
	reps := <-s.reports
	if len(reps) == 0 {
		return st, fmt.Errorf("sandbox probe: the init %s ended without a report: %v", e.helper, waitErr)
	}
	last := reps[len(reps)-1]
	if last.Event != wire.EventReady {
		return st, fmt.Errorf("sandbox probe: %s", last.Message)
	}
	st.Landlock = last.Landlock
	return st, nil
}

// Status says which protections and limits are in force.
type Status struct {
	// Helper is the init program.
	Helper string `json:"helper"`
	// Landlock is the Landlock ABI version the rules are enforced with (after Probe).
	Landlock int `json:"landlock"`
	// Rlimits names the rlimits applied to every command.
	Rlimits []string `json:"rlimits"`
	// Cgroup is the cgroup version used (0: none), Limits the cgroup limits in force,
	// Unavailable why the others are not.
	Cgroup      int               `json:"cgroup"`
	Limits      []string          `json:"limits"`
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

func (e *Executor) status() Status {
	st := Status{Helper: e.helper, Cgroup: e.cgroups.Version(), Limits: []string{},
		Unavailable: e.cgroups.Unavailable()}
	if st.Cgroup != 0 {
		st.Limits = append(st.Limits, e.cgroups.InForce(e.limits.cgroup())...)
	}
	r := e.cfg.Resources
	names := map[executor.RlimitResource]string{executor.RlimitCore: "core", executor.RlimitFileSize: "fsize",
		executor.RlimitOpenFiles: "nofile", executor.RlimitProcesses: "nproc"}
	spec, _ := e.cfg.Prepare(executor.Spec{Argv: []string{"true"}, Dir: "/", Resources: r})
	for _, l := range spec.Resources.Rlimits() {
		st.Rlimits = append(st.Rlimits, names[l.Resource]+"="+strconv.FormatUint(l.Value, 10))
	}
	st.Rlimits = append(st.Rlimits, "cpu=timeout*cpus")
	return st
}
