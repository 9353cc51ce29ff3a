package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/readonly"
	"github.com/cmdgate/cmdgate/jobs"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// ErrShutdown is the cause with which running commands are stopped when the shutdown
// grace period has passed.
var ErrShutdown = errors.New("the gateway shut down")

// Server is the gateway's core: the pipeline and what it needs (workspace, tokens,
// audit store, policy engine, sandbox backend). Create it with New, put fronts over it
// (package gateway/httpapi, package gateway/mcp), end it with Close. It is safe for
// concurrent use.
type Server struct {
	opts          Options
	log           *slog.Logger
	ws            Workspace
	tokens        *TokenStore
	store         *audit.Store
	engine        *policies.Engine
	promptTools   []string    // the ways to reach cmdgate, for the prompt (SetPromptTools)
	parsed        *parsedDocs // nil when the decision cache is off
	runner        executor.Executor
	sandbox       string // the backend chosen
	sandboxStatus SandboxStatus
	sandboxInput  parse.Sandbox // what the backend guarantees, in every policy input
	metrics       *metrics

	reloadMu sync.Mutex // one policy load at a time, so records follow the swaps in order

	// running counts the commands in flight; kill stops them (cause ErrShutdown) once
	// the shutdown grace is over.
	runMu    sync.Mutex
	closed   bool // set by Close: no command starts any more
	running  sync.WaitGroup
	kill     context.Context
	killNow  context.CancelCauseFunc
	draining atomic.Bool // set when shutdown began: /healthz says so

	state           *stateStore     // approvals
	waiters         approvalWaiters // callers waiting on an approval's change
	events          eventBus        // approval events for the subscribers
	background      sync.WaitGroup  // approved commands started in the background
	stopLoops       chan struct{}   // closed by Close: expireLoop returns
	grantsMu        sync.Mutex      // refreshGrants, one at a time
	nextGrantExpiry time.Time       // when the next live grant expires (zero: none); grantsMu
	expiredDone     chan struct{}   // closed when expireLoop returned

	outputs   *outputs            // nil when outputs are not kept
	readonly  *readonly.Allowlist // nil when the read-only language is off
	sweptDone chan struct{}       // closed when sweepLoop returned (or at once without outputs)

	jobStore *jobs.Store  // nil when jobs are disabled
	tasks    *taskManager // nil when tasks are disabled
	hostMu   sync.Mutex   // one job host started at a time

	watch     *watcher // nil when PolicyDir is "" or NoWatch
	closeOnce sync.Once
	closeErr  error
}

// New opens everything the gateway needs: the workspace, the token store and the audit
// store in DataDir, the policy engine (appending a policy_load record) and the sandbox
// backend; it fails with a clear error when any of them is missing or broken, and
// leaves nothing open then. ctx bounds the start only.
func New(ctx context.Context, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("gateway options: %w", err)
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: newMetrics()}
	s.kill, s.killNow = context.WithCancelCause(context.Background())

	if s.ws, err = NewWorkspace(opts.Workspace); err != nil {
		return nil, fmt.Errorf("workspace %s: %w", opts.Workspace, err)
	}
	if err := s.prepareCaches(); err != nil {
		return nil, err
	}
	if len(opts.Readonly.Allow) > 0 {
		if s.readonly, err = opts.Readonly.allowlist(s.ws.Root()); err != nil {
			return nil, err
		}
	}
	if s.runner, s.sandboxStatus, err = newRunner(ctx, s.opts, s.ws.Root()); err != nil {
		return nil, err
	}
	s.sandboxStatus.Caches = s.cachesStatus()
	s.sandbox = s.sandboxStatus.Backend
	s.sandboxInput = s.sandboxGuarantees()
	// Everything below that fails must release the backend (a pool of sandboxes).
	ok := false
	defer func() {
		if !ok {
			closeRunner(s.runner)
		}
	}()
	if s.opts.Policy.Profile, err = resolveProfile(s.opts.Profile, s.sandboxInput); err != nil {
		return nil, err
	}
	if s.tokens, err = OpenTokens(opts.DataDir); err != nil {
		return nil, err
	}
	if _, err := s.tokens.List(); err != nil { // a broken token file is a start error
		return nil, err
	}
	if opts.Audit.OnError == nil {
		// A checkpoint copy that could not be written (audit.checkpoint, the witness):
		// the records are stored, but the copy that should prove it is missing.
		opts.Audit.OnError = func(err error) { s.log.Error("audit checkpoint copy", "err", err) }
	}
	if s.store, err = audit.Open(ctx, opts.DataDir, opts.Audit); err != nil {
		return nil, err
	}
	if s.state, err = openStateStore(ctx, opts.DataDir); err == nil {
		err = s.recoverApprovals(ctx)
	}
	if err != nil {
		if s.state != nil {
			s.state.close()
		}
		s.store.Close(ctx)
		return nil, fmt.Errorf("data directory %s: %w", opts.DataDir, err)
	}
	engine, loadErr := policies.New(ctx, s.policyOptions()...)
	rev := ""
	if loadErr == nil {
		rev = engine.Revision()
	}
	s.recordPolicyLoad(ctx, "start", "", rev, loadErr)
	if loadErr != nil {
		s.state.close()
		s.store.Close(ctx)
		return nil, fmt.Errorf("load policy: %w", loadErr)
	}
	s.engine = engine
	if err := s.refreshGrants(ctx); err != nil {
		s.state.close()
		s.store.Close(ctx)
		return nil, fmt.Errorf("grants: %w", err)
	}
	s.parsed = newParsedDocs(min(opts.DecisionCache, maxParsedDocs))
	s.logDecisionCache()
	if opts.PolicyDir != "" && !opts.NoWatch {
		w, err := newWatcher(opts.PolicyDir, opts.ReloadDebounce, s.reloadFromWatch, s.log)
		if err != nil {
			s.state.close()
			s.store.Close(ctx)
			return nil, err
		}
		s.watch = w
	}
	if !opts.Jobs.Disabled {
		s.jobStore = &jobs.Store{Root: opts.Jobs.Root}
		s.settleJobs()
	}
	if opts.Tasks.Enabled {
		if err := s.openTasks(ctx); err != nil {
			if s.watch != nil {
				s.watch.close()
			}
			s.state.close()
			s.store.Close(ctx)
			return nil, err
		}
	}
	s.stopLoops, s.expiredDone, s.sweptDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go s.expireLoop(time.Second)
	if opts.Output.MaxBytes > 0 {
		s.outputs = &outputs{dir: filepath.Join(opts.DataDir, "outputs"), opts: opts.Output}
		go s.sweepLoop(time.Minute)
	} else {
		close(s.sweptDone)
	}
	ok = true
	return s, nil
}

// PromptEnvFor is the environment a Server with opts would describe in its system
// prompt (Server.PromptEnv), found without starting one: the workspace and the backend
// are resolved as New resolves them (the sandbox is probed, then released); nothing is
// opened in DataDir.
func PromptEnvFor(ctx context.Context, opts Options) (policies.PromptEnv, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return policies.PromptEnv{}, fmt.Errorf("gateway options: %w", err)
	}
	s := &Server{opts: opts, log: opts.Logger}
	if s.ws, err = NewWorkspace(opts.Workspace); err != nil {
		return policies.PromptEnv{}, fmt.Errorf("workspace %s: %w", opts.Workspace, err)
	}
	probe := s.opts
	probe.Linux.Pool = -1 // one probe: nothing to build ahead
	probe.Executor.Caches = executor.Caches{}
	runner, status, err := newRunner(ctx, probe, s.ws.Root())
	if err != nil {
		return policies.PromptEnv{}, err
	}
	closeRunner(runner)
	if ec := &s.opts.Executor; ec.Caches.Dir == "" && !opts.NoCaches && opts.Runner == nil {
		ec.Caches = executor.Caches{Dir: executor.CacheDir(opts.CachesDir, s.ws.Root())}
	}
	s.sandbox, s.sandboxStatus = status.Backend, status
	s.sandboxInput = s.sandboxGuarantees()
	if s.opts.Policy.Profile, err = resolveProfile(s.opts.Profile, s.sandboxInput); err != nil {
		return policies.PromptEnv{}, err
	}
	env := s.PromptEnv()
	env.Profile = s.opts.Policy.Profile
	return env, nil
}

// prepareCaches gives the executor the workspace's tool cache area (unless caches are
// off or the caller chose one) and creates it.
func (s *Server) prepareCaches() error {
	ec := &s.opts.Executor
	if ec.Caches.Dir == "" && !s.opts.NoCaches && s.opts.Runner == nil {
		ec.Caches = executor.Caches{Dir: executor.CacheDir(s.opts.CachesDir, s.ws.Root())}
	}
	if ec.Caches.Dir == "" {
		return nil
	}
	if err := ec.Caches.Prepare(); err != nil {
		if strings.HasPrefix(ec.Caches.Dir, s.opts.DataDir+string(filepath.Separator)) {
			return fmt.Errorf("data directory %s: tool caches: %w", s.opts.DataDir, err)
		}
		return fmt.Errorf("tool caches %s: %w", ec.Caches.Dir, err)
	}
	return nil
}

// sandboxGuarantees is the policy input's sandbox: what the backend in use guarantees.
// The linux backend isolates, with a private /tmp and a HOME of the workspace's own;
// the process backend guarantees nothing; an embedder's Runner says what it
// guarantees in Options.SandboxInput.
func (s *Server) sandboxGuarantees() parse.Sandbox {
	switch {
	case s.opts.Runner != nil:
		sb := s.opts.SandboxInput
		sb.Backend = s.sandbox
		return sb
	case s.sandbox == SandboxLinux:
		home := s.opts.Executor.Caches.Home()
		if home == "" {
			home = linux.SandboxHome
		}
		return parse.Sandbox{Backend: SandboxLinux, Isolated: true, PrivateTmp: true, Home: home}
	case s.sandbox == SandboxDocker:
		return taskSandbox // every command runs in a task's container
	}
	return parse.Sandbox{Backend: s.sandbox}
}

// ProfileAuto is the default of Options.Profile: the rule profile follows the backend.
const ProfileAuto = "auto"

// resolveProfile is the rule profile in force for the Options.Profile setting and what
// the backend guarantees: auto is sandboxed where the backend isolates and strict
// elsewhere; sandboxed where it does not isolate is refused, since the sandbox is what
// makes that profile's extra commands harmless.
func resolveProfile(setting string, sb parse.Sandbox) (string, error) {
	switch setting {
	case policies.ProfileStrict:
		return setting, nil
	case policies.ProfileSandboxed:
		if !sb.Isolated {
			return "", fmt.Errorf("policy profile sandboxed needs a sandbox that isolates (linux); the %s backend does not: use profile strict or auto", sb.Backend)
		}
		return setting, nil
	}
	if sb.Isolated {
		return policies.ProfileSandboxed, nil
	}
	return policies.ProfileStrict, nil
}

// cachesStatus is what /healthz says of the tool caches.
func (s *Server) cachesStatus() *CachesStatus {
	c := s.opts.Executor.Caches
	if c.Dir == "" {
		return &CachesStatus{Enabled: false}
	}
	return &CachesStatus{Enabled: true, Dir: c.Dir, Home: c.Home()}
}

// closeRunner closes a backend that holds resources between runs.
func closeRunner(r executor.Executor) error {
	if c, ok := r.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// logDecisionCache warns when a decision cache was asked for but the bundle cannot
// have one.
func (s *Server) logDecisionCache() {
	if size, why := s.engine.DecisionCache(); size == 0 && why != "" {
		s.log.Warn("decision cache off for this policy bundle", "reason", why)
	}
}

func (s *Server) policyOptions() []policies.Option {
	opts := []policies.Option{policies.WithConfig(s.opts.Policy), policies.WithDecisionCache(max(s.opts.DecisionCache, 0))}
	if s.opts.PolicyDir != "" {
		opts = append(opts, policies.WithDir(s.opts.PolicyDir))
	}
	return opts
}

// Revision is the revision of the policy bundle in use.
func (s *Server) Revision() string { return s.engine.Revision() }

// Sandbox names the executor backend in use ("linux", "process", or "custom" for
// Options.Runner).
func (s *Server) Sandbox() string { return s.sandbox }

// SandboxStatus is what the backend enforces, as /healthz shows it.
func (s *Server) SandboxStatus() SandboxStatus { return s.sandboxStatus }

// Workspace is the real path of the workspace.
func (s *Server) Workspace() string { return s.ws.Root() }

// LiveTokens counts the tokens that are not revoked.
func (s *Server) LiveTokens() (int, error) { return s.tokens.Live() }

// Abort stops the running commands now instead of after the shutdown grace (a second
// interrupt). Their execution records say the gateway shut down.
func (s *Server) Abort() {
	s.draining.Store(true)
	s.killNow(ErrShutdown)
}

// Close waits for running commands (stopping them when ctx ends first), stops the
// policy watcher and closes the audit store last, which writes its checkpoint. It is
// safe to call more than once; later calls return the first result.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		s.runMu.Lock()
		s.closed = true
		s.runMu.Unlock()
		done := make(chan struct{})
		go func() { s.background.Wait(); s.running.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.killNow(ErrShutdown)
			<-done
		}
		close(s.stopLoops)
		<-s.expiredDone
		<-s.sweptDone
		s.closeTasks(ctx)
		if s.jobStore != nil {
			// A job host with nothing to run goes with its gateway; one that runs jobs
			// stays with them, and goes once they have ended.
			hctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s.hostCall(hctx, s.hostKey(), hostRequest{Op: "idle"}, false)
			cancel()
		}
		var errs []error
		if err := s.state.close(); err != nil {
			errs = append(errs, fmt.Errorf("close the state store: %w", err))
		}
		if s.watch != nil {
			errs = append(errs, s.watch.close())
		}
		if err := closeRunner(s.runner); err != nil {
			errs = append(errs, fmt.Errorf("close the sandbox: %w", err))
		}
		if err := s.store.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close audit store: %w", err))
		}
		s.killNow(ErrShutdown)
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// startRun registers a command about to run; false when the server is closed or the
// commands were stopped, and nothing may start any more.
func (s *Server) startRun() bool {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed || s.kill.Err() != nil {
		return false
	}
	s.running.Add(1)
	s.metrics.inFlight.Inc()
	return true
}

func (s *Server) endRun() {
	s.metrics.inFlight.Dec()
	s.running.Done()
}
