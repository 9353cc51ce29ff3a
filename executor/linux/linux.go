//go:build linux

package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// Executor runs each command in a fresh sandbox. It is safe for concurrent use. Close
// it when done: it may keep sandboxes built ahead.
type Executor struct {
	cfg       executor.Config
	helper    string
	uplink    string // slirp4netns, or "" with uplinkErr saying why not
	uplinkErr error
	workspace string
	readOnly  []string
	initCPUs  *unix.CPUSet // Options.InitCPUs; nil when none
	hide      []string
	tmpSize   int64
	limits    Limits
	cgroups   *cgroup.Manager
	log       *slog.Logger

	pool      chan *sandbox
	cgFree    chan *cgroup.Group // empty cgroups: of finished commands, or made ahead
	cgLow     chan struct{}      // takeCgroup found the stock low
	poolOnce  sync.Once
	stop      chan struct{}
	closeOnce sync.Once
	bg        sync.WaitGroup // the pool's filler and the inits being released
	releasing atomic.Int32   // inits being released
	running   atomic.Int32   // Runs in progress
	settled   chan struct{}  // a Run ended or took a sandbox: see settle
	ahead     atomic.Int32   // fillers at work on a sandbox ahead: see fill
	waiting   atomic.Int32   // Runs waiting for one: see awaitAhead
	aheadMu   sync.Mutex
	aheadDown chan struct{}                     // closed (and replaced) when a filler stops working ahead
	inline    atomic.Int64                      // sandboxes built for a command without network
	onBuild   atomic.Pointer[func(BuildTiming)] // called after each sandbox built, when set (the benchmarks)

	spawn atomic.Bool // start the inits through a spawner: set by Probe
	spMu  sync.Mutex
	sp    *spawner
}

var _ executor.Executor = (*Executor)(nil)

// KeepToOneCPU puts every thread of this process on one CPU and returns the CPUs it
// had, for Options.InitCPUs; nil when it has one anyway or could not be pinned. A
// process that starts inits itself, cmdgate sandbox run, calls it first: an init starts
// in a new user namespace, by a fork of its starter without shared memory, and each
// page the starter writes until the init has exec'd is copied, flushing the page from
// every other CPU the starter's threads ran on (an interprocessor interrupt, which a
// virtual machine pays dearly).
func KeepToOneCPU() []int {
	set, _ := wire.KeepToOneCPU() // a thread left elsewhere only costs speed
	if set == nil {
		return nil
	}
	var cpus []int
	for c := range wire.MaxCPUs {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

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
	if c := opts.Config.Caches.Dir; c != "" {
		if err := opts.Config.Caches.Prepare(); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		// Bound at its own path: it must be a real path, and never expose a system
		// directory read-write.
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			return nil, fmt.Errorf("sandbox: cache area: %w", err)
		}
		for _, r := range opts.ReadOnly {
			if within(r, real) {
				return nil, fmt.Errorf("sandbox: cache area %s contains the system directory %s", real, r)
			}
		}
		opts.Config.Caches.Dir = real
	}
	var initCPUs *unix.CPUSet
	for _, c := range opts.InitCPUs {
		if c < 0 || c >= wire.MaxCPUs {
			return nil, fmt.Errorf("sandbox: init CPU %d: not a CPU number below %d", c, wire.MaxCPUs)
		}
		if initCPUs == nil {
			initCPUs = new(unix.CPUSet)
		}
		initCPUs.Set(c)
	}
	uplink, uplinkErr := findUplink(opts.Uplink)
	e := &Executor{
		cfg:       opts.Config,
		helper:    helper,
		uplink:    uplink,
		uplinkErr: uplinkErr,
		workspace: ws,
		readOnly:  opts.ReadOnly,
		initCPUs:  initCPUs,
		tmpSize:   opts.TmpSize,
		limits:    opts.Limits,
		cgroups:   cgroup.Detect(),
		log:       opts.Logger,
		pool:      make(chan *sandbox, max(opts.Pool, 0)),
		cgFree:    make(chan *cgroup.Group, 2*cgroupStock),
		cgLow:     make(chan struct{}, 1),
		settled:   make(chan struct{}, 1),
		aheadDown: make(chan struct{}),
		stop:      make(chan struct{}),
	}
	// The cgroups of a gateway that crashed are empty (its commands died with it): they
	// go, but never those of a gateway still running.
	if err := e.cgroups.RemoveStale(staleCgroup); err != nil {
		e.log.Warn("sandbox: remove the cgroups of a gateway gone", "err", err)
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

// staleCgroup reports whether a cgroup name is one of takeCgroup's ("run-PID-N") whose
// process is gone.
func staleCgroup(name string) bool {
	var pid, n int
	if _, err := fmt.Sscanf(name, "run-%d-%d", &pid, &n); err != nil || pid <= 0 {
		return false
	}
	return unix.Kill(pid, 0) == unix.ESRCH
}

// workspace resolves the workspace and refuses one that would expose the system
// directories read-write or that lies where the sandbox mounts its own (ownMounts).
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
	for _, m := range ownMounts {
		if within(ws, m) {
			return "", fmt.Errorf("sandbox: workspace %s lies in %s, which every sandbox mounts afresh", ws, m)
		}
	}
	return ws, nil
}

// ownMounts are the directories every sandbox mounts afresh (its own /proc and /dev): a
// workspace in them could not be bound.
var ownMounts = []string{"/proc", "/dev"}

// within reports whether path p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Workspace is the resolved workspace.
func (e *Executor) Workspace() string { return e.workspace }

// Run runs spec in a new sandbox; see the package documentation.
func (e *Executor) Run(ctx context.Context, spec executor.Spec) (executor.Result, error) {
	e.running.Add(1)
	defer func() {
		e.running.Add(-1)
		e.nudge()
	}()
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
	if err := e.cfg.Caches.Prepare(); err != nil { // a cleared area is refilled
		return executor.Result{}, executor.Internal("tool caches", err)
	}
	wc := wire.Command{Dir: dir, Env: env, Stdin: spec.Stdin != "", Rlimits: rlimits(spec)}
	if spec.ShellMode == executor.ShellDirect {
		wc.Argv = spec.Argv
	} else {
		wc.Script = spec.Script
		if wc.Script == "" {
			wc.Script = executor.QuotePOSIX(spec.Argv)
		}
		wc.Shells = []string{"bash", "sh"}
	}
	if ctx.Err() != nil {
		return executor.Result{}, fmt.Errorf("run in sandbox: not started: %w", context.Cause(ctx))
	}
	return e.run(ctx, spec, wc)
}

// rlimits are the Spec's, plus RLIMIT_CPU as a backstop to the watchdog: CPU time for the
// whole timeout on every CPU, and a second.
func rlimits(spec executor.Spec) []wire.Rlimit {
	var out []wire.Rlimit
	for _, l := range spec.Resources.Rlimits() {
		if res, ok := rlimitNumbers[l.Resource]; ok {
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

// run takes a built sandbox, hands it the command and sees the command through.
func (e *Executor) run(ctx context.Context, spec executor.Spec, wc wire.Command) (executor.Result, error) {
	res := executor.Result{Cwd: spec.Dir, Command: echo(spec)}
	start := time.Now()
	cmd, err := json.Marshal(wc)
	if err != nil {
		return executor.Result{}, executor.Internal("send the sandbox its command", err)
	}
	var s *sandbox
	if !spec.Network {
		if s = e.fromPool(); s == nil {
			s = e.awaitAhead(ctx)
		}
		if s == nil && ctx.Err() != nil {
			return executor.Result{}, fmt.Errorf("run in sandbox: not started: %w", context.Cause(ctx))
		}
	}
	if s == nil {
		// The goroutine keeps its thread while the init lives: see start. A sandbox
		// built for this command gets it with its layout: the init starts it as soon as
		// it has reported ready, without waiting for a second message.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if !spec.Network {
			e.inline.Add(1)
		}
		if s, err = e.build(spec.Network, cmd); err != nil {
			return executor.Result{}, err
		}
	} else {
		_, err = s.cfgW.Write(cmd) // cfgW stays open for the stops (sandbox.stop)
	}
	defer e.release(s)
	if err != nil {
		s.Kill()
		return executor.Result{}, executor.Internal("send the sandbox its command", err)
	}
	s.streams.Started(spec.Stdin, spec.MaxOutputChars, spec.Keep, spec.Stdout, spec.Stderr)
	if spec.OnStart != nil {
		spec.OnStart()
	}

	wd := executor.Watch(ctx, s, spec.Timeout, e.cfg.Grace())
	// The command is over when the init reports it (everything it started is gone by
	// then) or when the init itself is gone.
	var last wire.Report
	select {
	case last = <-s.reports:
	case <-s.exited:
		// The init may have reported just before it exited: the report is read to the
		// end of its pipe, which the init's exit closes.
		last = <-s.reports
	}
	out := wd.Exited(s.streams.Drained())
	s.streams.Finish(e.cfg.Delay(), &res)
	res.DurationMS = time.Since(start).Milliseconds()

	switch {
	case out.TimedOut:
		res.TimedOut, res.ExitCode = true, 124
	case last.Event == wire.EventExit && last.Signal != 0:
		res.ExitCode = 128 + last.Signal
	case last.Event == wire.EventExit:
		res.ExitCode = last.ExitCode
	case last.Event == wire.EventError && out.Cause == nil:
		return executor.Result{}, reportError(last)
	default:
		// The init died without a word: killed, with everything inside, by the memory
		// limit or by Kill.
		<-s.exited
		res.ExitCode = s.exitCode()
	}
	if out.Err != nil {
		return res, executor.Internal("stop the sandbox", out.Err)
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

// echo is the Result's Command: the request as given.
func echo(spec executor.Spec) []string {
	if spec.Script != "" {
		return []string{spec.Script}
	}
	return slices.Clone(spec.Argv)
}

// Probe builds a complete sandbox once, with every protection, and runs nothing in it:
// where it fails, the backend cannot be honoured here. It returns what is in force.
// From the probe on, the Executor is one for many commands: a spawner starts its inits
// (see wire.SpawnArg), and once the probe has succeeded it keeps Options.Pool sandboxes
// built ahead and empty cgroups made ahead.
func (e *Executor) Probe(ctx context.Context) (Status, error) {
	st := e.status()
	e.spawn.Store(true)
	type probed struct {
		landlock int
		timing   BuildTiming
		err      error
	}
	ch := make(chan probed, 1)
	go func() {
		runtime.LockOSThread() // released only once the probe's init is gone
		defer runtime.UnlockOSThread()
		s, err := e.build(false, nil)
		if err != nil {
			ch <- probed{err: err}
			return
		}
		e.discard(s)
		<-s.exited
		ch <- probed{landlock: s.landlock, timing: s.timing}
	}()
	select {
	case p := <-ch:
		if p.err != nil {
			return st, fmt.Errorf("sandbox probe: %w", p.err)
		}
		st.Landlock, st.Build = p.landlock, &p.timing
	case <-ctx.Done():
		return st, fmt.Errorf("sandbox probe: %w", context.Cause(ctx))
	}
	e.startPool()
	return st, nil
}

func (e *Executor) status() Status {
	st := Status{Helper: e.helper, Caches: e.cfg.Caches.Dir, Cgroup: e.cgroups.Version(), Limits: []string{},
		Unavailable: e.cgroups.Unavailable(), Pool: cap(e.pool), Uplink: e.uplink}
	if e.uplinkErr != nil {
		if st.Unavailable == nil {
			st.Unavailable = map[string]string{}
		}
		st.Unavailable["network"] = e.uplinkErr.Error()
	}
	if st.Cgroup != 0 {
		st.Limits = append(st.Limits, e.cgroups.InForce(e.limits.cgroup())...)
	}
	names := map[executor.RlimitResource]string{executor.RlimitCore: "core", executor.RlimitFileSize: "fsize",
		executor.RlimitOpenFiles: "nofile", executor.RlimitProcesses: "nproc"}
	spec, err := e.cfg.Prepare(executor.Spec{Argv: []string{"true"}, Dir: "/"})
	if err == nil {
		for _, l := range spec.Resources.Rlimits() {
			st.Rlimits = append(st.Rlimits, names[l.Resource]+"="+strconv.FormatUint(l.Value, 10))
		}
	}
	st.Rlimits = append(st.Rlimits, "cpu=timeout*cpus+1s")
	return st
}
