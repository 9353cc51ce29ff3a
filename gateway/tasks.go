package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/go-units"
	"github.com/google/uuid"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/parse"
)

// Per-task Docker environments (seed 001): a task is one container, named
// coding-agent-exec-{task_id}, with a project cloned into /workspace/project and its
// dependencies installed, where the task's commands then run (a request naming the task
// in its "task" member). Preparing it follows seed 001 section 5.1 in the background:
// created → initializing (an earlier container of the task removed, the container
// created and started, the clone, the pull request's checkout, the installs) → ready;
// ready ↔ running while commands run; stopped → deleted on DELETE, at shutdown when so
// configured, or when reaped as stale; failed, with the reason, when a step that must
// work did not (the container is then removed). Every transition is a task record in
// the audit log; install commands are decided by the policy and audited like any
// command of the task's principal.

// Task states (seed 001 section 3.1, plus failed).
const (
	TaskCreated      = "created"
	TaskInitializing = "initializing"
	TaskReady        = "ready"
	TaskRunning      = "running"
	TaskStopped      = "stopped"
	TaskDeleted      = "deleted"
	TaskFailed       = "failed"
)

// Task network modes.
const (
	TaskNetworkExternal = "external"
	TaskNetworkNone     = "none"
)

// Defaults of TaskOptions.
const (
	DefaultTaskTimeout       = 1800 * time.Second
	DefaultTaskDisk          = 10 << 30
	DefaultCleanupInterval   = 24 * time.Hour
	DefaultStaleAfter        = 24 * time.Hour
	DefaultDockerOpTimeout   = 60 * time.Second
	DefaultTasksPerPrincipal = 8
	DefaultCloneDepth        = 1
	// maxTaskSteps bounds the output kept of each preparation step.
	maxStepOutput = 8 << 10
)

// TaskOptions configure per-task Docker environments.
type TaskOptions struct {
	// Enabled turns tasks on (config tasks.enabled, COMMAND_EXECUTOR_ENABLED).
	Enabled bool
	// Client talks to the engine; nil is client.New(client.FromEnv), which honours
	// DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.
	Client *client.Client
	// Image is the default image (docker.DefaultImage); a task may name another.
	Image string
	// GuardImage installs the network guard's rules on the engine's host (as root,
	// with NET_ADMIN, in the host's network namespace); default Image. It is the
	// operator's, never an image a task asks for.
	GuardImage string
	// CPUs, Memory (bytes, swap included), Pids and Disk (bytes) are a task's default
	// limits: 2, 4 GiB, 1024, 10 GiB.
	CPUs   float64
	Memory int64
	Pids   int64
	Disk   int64
	// Network is external (the default: the outside world, never the host's services)
	// or none.
	Network string
	// Depth is the clone's depth, default 1; -1 clones the whole history.
	Depth int
	// NoAutoInstall turns the dependency installs off by default (a task may ask).
	NoAutoInstall bool
	// FailOnInstallError makes a failed install fail the task; by default the task is
	// ready with the failure reported, so that the agent can fix it.
	FailOnInstallError bool
	// Timeout bounds each command in a task, default 30 minutes.
	Timeout time.Duration
	// MaxOutput bounds the characters kept of each stream of a task's command
	// (max_output_chars); default the gateway's exec bound.
	MaxOutput int
	// CleanupInterval is how often stale task containers are reaped (default 24 h);
	// StaleAfter is the age past which one is (default 24 h).
	CleanupInterval time.Duration
	StaleAfter      time.Duration
	// RemoveOnShutdown removes every task's container when the gateway shuts down.
	RemoveOnShutdown bool
	// OpTimeout bounds each operation on the engine (create, start, remove), default
	// 60 s.
	OpTimeout time.Duration
	// MaxPerPrincipal bounds the live tasks of one principal, default 8.
	MaxPerPrincipal int
	// GitHubHosts and GitLabHosts are the hosts whose clones carry the token of
	// GITHUB_PERSONAL_ACCESS_TOKEN and GITLAB_PERSONAL_ACCESS_TOKEN (defaults
	// github.com and gitlab.com). A host is sent its token over https only, unless the
	// entry is written with an explicit http:// scheme ("http://git.internal:8080").
	GitHubHosts []string
	GitLabHosts []string
	// Getenv reads the gateway's environment for the tokens; default os.Getenv.
	Getenv func(string) string
	// Labels are put on every task container of this gateway, and the reaper removes
	// only stale containers that carry them too (beside cmdgate's own labels and naming
	// rule): gateways sharing an engine can keep to their own.
	Labels map[string]string
}

func (o TaskOptions) withDefaults() (TaskOptions, error) {
	if o.Image == "" {
		o.Image = docker.DefaultImage
	}
	if o.GuardImage == "" {
		o.GuardImage = o.Image
	}
	if o.CPUs == 0 {
		o.CPUs = docker.DefaultCPUs
	}
	if o.Memory == 0 {
		o.Memory = docker.DefaultMemory
	}
	if o.Pids == 0 {
		o.Pids = docker.DefaultPids
	}
	if o.Disk == 0 {
		o.Disk = DefaultTaskDisk
	}
	if o.Network == "" {
		o.Network = TaskNetworkExternal
	}
	if o.Depth == 0 {
		o.Depth = DefaultCloneDepth
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTaskTimeout
	}
	if o.CleanupInterval == 0 {
		o.CleanupInterval = DefaultCleanupInterval
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.OpTimeout == 0 {
		o.OpTimeout = DefaultDockerOpTimeout
	}
	if o.MaxPerPrincipal == 0 {
		o.MaxPerPrincipal = DefaultTasksPerPrincipal
	}
	if o.GitHubHosts == nil {
		o.GitHubHosts = []string{"github.com"}
	}
	if o.GitLabHosts == nil {
		o.GitLabHosts = []string{"gitlab.com"}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	var errs []error
	if err := checkTaskNetwork(o.Network); err != nil {
		errs = append(errs, err)
	}
	if o.MaxOutput != 0 && o.MaxOutput < executor.MinOutputChars {
		errs = append(errs, fmt.Errorf("tasks: max output %d is less than %d", o.MaxOutput, executor.MinOutputChars))
	}
	if o.CPUs < 0 || o.Memory < 0 || o.Pids < 0 || o.Disk < 0 || o.Timeout < 0 || o.CleanupInterval < 0 ||
		o.StaleAfter < 0 || o.OpTimeout < 0 || o.MaxPerPrincipal < 0 || o.Depth < -1 || o.MaxOutput < 0 {
		errs = append(errs, errors.New("tasks: limits, intervals and the clone depth must not be negative"))
	}
	return o, errors.Join(errs...)
}

func checkTaskNetwork(n string) error {
	switch n {
	case TaskNetworkExternal, TaskNetworkNone:
		return nil
	case "allowlist", "whitelist":
		return Invalid("network %q: the domain allowlist mode is not available yet; use external or none", n)
	}
	return Invalid("network %q: want external or none", n)
}

// TaskPrincipal is who created a task; its commands run as that principal.
type TaskPrincipal struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// TaskLimits are a task's limits, and whether the disk limit is enforced.
type TaskLimits struct {
	CPUs           float64 `json:"cpus"`
	MemoryBytes    int64   `json:"memory_bytes"`
	Pids           int64   `json:"pids"`
	DiskBytes      int64   `json:"disk_bytes"`
	DiskEnforced   bool    `json:"disk_enforced"`
	DiskNote       string  `json:"disk_note,omitempty"`
	TimeoutSeconds int64   `json:"timeout_seconds"`
	MaxOutputChars int     `json:"max_output_chars,omitempty"`
}

// TaskStep is one step of a task's preparation: clone, or an install.
type TaskStep struct {
	Name       string `json:"name"` // clone, install
	Command    string `json:"command,omitempty"`
	Manifest   string `json:"manifest,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
	Decision   string `json:"decision,omitempty"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	Output     string `json:"output,omitempty"` // the end of stdout and stderr, secrets masked
	Error      string `json:"error,omitempty"`
	OK         bool   `json:"ok"`
}

// Task is one task's environment, as GET /v1/tasks/{id} shows it.
type Task struct {
	ID            string        `json:"task_id"`
	ContainerName string        `json:"container_name"`
	ContainerID   string        `json:"container_id,omitempty"`
	State         string        `json:"state"`
	Reason        string        `json:"reason,omitempty"`
	Principal     TaskPrincipal `json:"principal"`
	RepoURL       string        `json:"repo_url"`
	Ref           string        `json:"ref,omitempty"`
	PullRequest   int           `json:"pull_request,omitempty"`
	TargetBranch  string        `json:"target_branch,omitempty"`
	Commit        string        `json:"commit,omitempty"`
	Image         string        `json:"image"`
	Network       string        `json:"network"`
	CloneDepth    int           `json:"clone_depth"` // 0: the whole history
	AutoInstall   bool          `json:"auto_install_deps"`
	Workspace     string        `json:"workspace"`
	Limits        TaskLimits    `json:"limits"`
	Steps         []TaskStep    `json:"steps"`
	// InstallFailed says that a dependency install failed (the task is ready all the
	// same unless the gateway is configured otherwise).
	InstallFailed bool       `json:"install_failed"`
	Running       int        `json:"running"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	ReadyAt       *time.Time `json:"ready_at,omitempty"`
	EndedAt       *time.Time `json:"ended_at,omitempty"`
}

func (t *Task) live() bool {
	switch t.State {
	case TaskCreated, TaskInitializing, TaskReady, TaskRunning:
		return true
	}
	return false
}

// TaskRequest is POST /v1/tasks: the repository to clone and how.
type TaskRequest struct {
	RepoURL      string           `json:"repo_url"`
	Ref          string           `json:"ref,omitempty"`
	PullRequest  int              `json:"pull_request,omitempty"`
	TargetBranch string           `json:"target_branch,omitempty"`
	Image        string           `json:"image,omitempty"`
	Limits       *TaskLimitsInput `json:"limits,omitempty"`
	Network      string           `json:"network,omitempty"`
	AutoInstall  *bool            `json:"auto_install_deps,omitempty"`
	CloneDepth   *int             `json:"clone_depth,omitempty"`
	// WaitMS, when positive, waits up to that long for the task to leave created and
	// initializing before answering.
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// TaskLimitsInput are the limits a task asks for: sizes as bytes or with a unit
// ("512m", "4g").
type TaskLimitsInput struct {
	CPUs           float64         `json:"cpus,omitempty"`
	Memory         json.RawMessage `json:"memory,omitempty"`
	Pids           int64           `json:"pids,omitempty"`
	Disk           json.RawMessage `json:"disk,omitempty"`
	TimeoutSeconds int64           `json:"timeout_seconds,omitempty"`
}

// MaxTaskWait bounds TaskRequest.WaitMS.
const MaxTaskWait = 10 * time.Minute

// taskManager holds the tasks' live parts: the engine's client and each live task's
// executor and running count.
type taskManager struct {
	opts   TaskOptions
	cli    *client.Client
	ownCli bool

	mu      sync.Mutex
	live    map[string]*liveTask
	changed chan struct{} // closed and replaced at every change (waiters)

	ctx    context.Context // ended by Close: preparations stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	reaped chan struct{}
}

type liveTask struct {
	task *Task // the current document; replaced, never changed in place
	exec *docker.Executor
	// token is the clone's credential, masked in every output kept.
	token string
}

// TasksEnabled says whether the gateway serves tasks.
func (s *Server) TasksEnabled() bool { return s.tasks != nil }

// openTasks connects to the engine, settles the tasks a previous run left and starts
// the reaper. An engine that does not answer is a start error when the gateway runs
// commands only in tasks (sandbox docker), and a warning otherwise.
func (s *Server) openTasks(ctx context.Context) error {
	o, err := s.opts.Tasks.withDefaults()
	if err != nil {
		return err
	}
	m := &taskManager{opts: o, cli: o.Client, live: map[string]*liveTask{}, changed: make(chan struct{}), reaped: make(chan struct{})}
	if m.cli == nil {
		if m.cli, err = client.New(client.FromEnv); err != nil {
			return fmt.Errorf("tasks: docker client: %w", err)
		}
		m.ownCli = true
	}
	pctx, cancel := context.WithTimeout(ctx, min(o.OpTimeout, 10*time.Second))
	_, perr := m.cli.Ping(pctx, client.PingOptions{})
	cancel()
	if perr != nil {
		if s.opts.Sandbox == SandboxDocker {
			m.close()
			return fmt.Errorf("sandbox docker: no Docker engine answers at %s: %w", m.cli.DaemonHost(), perr)
		}
		w := fmt.Sprintf("tasks: no Docker engine answers at %s (%v): creating a task fails until one does", m.cli.DaemonHost(), perr)
		s.log.Warn(w)
		s.sandboxStatus.Warnings = append(s.sandboxStatus.Warnings, w)
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	s.tasks = m
	s.settleTasks(ctx)
	go s.reapLoop()
	return nil
}

func (m *taskManager) close() {
	if m.ownCli {
		m.cli.Close()
	}
}

// closeTasks stops the preparations, removes the containers when so configured, stops
// the reaper.
func (s *Server) closeTasks(ctx context.Context) {
	m := s.tasks
	if m == nil {
		return
	}
	m.cancel()
	m.wg.Wait()
	<-m.reaped
	if m.opts.RemoveOnShutdown {
		m.mu.Lock()
		ids := make([]string, 0, len(m.live))
		for id := range m.live {
			ids = append(ids, id)
		}
		m.mu.Unlock()
		for _, id := range ids {
			s.removeTask(ctx, Caller{Name: "cmdgate", Role: RoleAdmin}, id, "the gateway shut down")
		}
	}
	m.close()
}

// settleTasks takes over the tasks a previous run left: a ready task whose container
// still runs is ready again; one that was being prepared, or whose container is gone,
// failed.
func (s *Server) settleTasks(ctx context.Context) {
	m := s.tasks
	list, err := s.state.tasks(ctx, "", []string{TaskCreated, TaskInitializing, TaskReady, TaskRunning, TaskStopped}, 100000)
	if err != nil {
		s.log.Error("tasks: cannot read the stored tasks", "err", err)
		return
	}
	for _, t := range list {
		reason := ""
		switch t.State {
		case TaskReady, TaskRunning:
			octx, cancel := context.WithTimeout(ctx, m.opts.OpTimeout)
			insp, err := m.cli.ContainerInspect(octx, t.ContainerName, client.ContainerInspectOptions{})
			cancel()
			if err == nil && insp.Container.State != nil && insp.Container.State.Running && insp.Container.ID == t.ContainerID {
				if e, err := s.taskExecutor(t); err == nil {
					t.State, t.Running = TaskReady, 0
					m.mu.Lock()
					m.live[t.ID] = &liveTask{task: t, exec: e}
					m.mu.Unlock()
					continue
				}
			}
			reason = "its container is gone (the gateway restarted)"
		case TaskStopped:
			reason = "its removal did not finish (the gateway restarted)"
		default:
			reason = "the gateway restarted while the task was being prepared"
		}
		nt := *t
		nt.Running = 0
		s.endTask(ctx, &nt, TaskFailed, reason)
	}
}

// reapLoop reaps stale task containers at start and every CleanupInterval.
func (s *Server) reapLoop() {
	m := s.tasks
	defer close(m.reaped)
	for {
		s.ReapTasks(m.ctx)
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(m.opts.CleanupInterval):
		}
	}
}

// ReapTasks removes the task containers older than the stale threshold (cmdgate's
// labels and naming rule only; never another container) and marks their tasks
// deleted. It returns the names of the containers removed.
func (s *Server) ReapTasks(ctx context.Context) ([]string, error) {
	m := s.tasks
	if m == nil {
		return nil, nil
	}
	octx, cancel := context.WithTimeout(ctx, 5*m.opts.OpTimeout)
	defer cancel()
	removed, err := docker.Reap(octx, m.cli, time.Now().Add(-m.opts.StaleAfter), m.opts.Labels)
	for _, name := range removed {
		id := strings.TrimPrefix(name, docker.NamePrefix)
		t, terr := s.state.task(ctx, id)
		if terr != nil {
			continue
		}
		if lt := s.liveTask(id); lt != nil {
			t = lt
		}
		if t.State != TaskDeleted && t.State != TaskFailed {
			t.Running = 0
			s.endTask(ctx, t, TaskDeleted, fmt.Sprintf("reaped: older than %s", m.opts.StaleAfter))
		}
	}
	if len(removed) > 0 || err != nil {
		detail := map[string]any{"removed": removed, "stale_after_s": int64(m.opts.StaleAfter.Seconds())}
		if err != nil {
			detail["error"] = Truncate(err.Error(), 2000)
		}
		s.recordTask(Caller{Name: "cmdgate", Role: RoleAdmin}, "", "reap", detail)
	}
	if err != nil {
		s.log.Warn("tasks: reaping stale containers", "err", err)
	}
	return removed, err
}

// recordTask appends a task record: event is created, step, ready, failed, stopped,
// deleted, remove_failed or reap.
func (s *Server) recordTask(who Caller, taskID, event string, detail map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), executionRecordTimeout)
	defer cancel()
	d := map[string]any{"event": event}
	if taskID != "" {
		d["task_id"] = taskID
	}
	for k, v := range detail {
		d[k] = v
	}
	b, _ := json.Marshal(d)
	if _, err := s.append(ctx, audit.Record{Kind: audit.KindTask, Principal: audit.Principal{Name: who.Name, Role: string(who.Role)},
		RequestID: who.RequestID, Detail: b}); err != nil {
		s.log.Error("tasks: cannot record a task event", "task_id", taskID, "event", event, "err", err)
	}
}

// CreateTask checks a task request, records it and starts preparing the task in the
// background. It returns the task as created (or, with WaitMS, as it is once it left
// created and initializing, or when the wait ended).
func (s *Server) CreateTask(ctx context.Context, caller Caller, req *TaskRequest) (*Task, error) {
	m := s.tasks
	if m == nil {
		return nil, Errorf(CodeNotFound, "tasks are not enabled on this gateway (config tasks.enabled)")
	}
	if caller.Role != RoleAgent && caller.Role != RoleAdmin {
		return nil, Errorf(CodeForbidden, "only an agent (or admin) token creates tasks")
	}
	t, clone, err := m.newTask(caller, req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	n := 0
	for _, lt := range m.live {
		if lt.task.Principal.Name == caller.Name {
			n++
		}
	}
	if n >= m.opts.MaxPerPrincipal {
		m.mu.Unlock()
		return nil, Errorf(CodeRateLimited, "%s has %d live tasks, the most this gateway allows (tasks.max_per_principal): delete one first", caller.Name, n)
	}
	m.live[t.ID] = &liveTask{task: t, token: clone.token}
	m.mu.Unlock()
	if err := s.state.putTask(ctx, t); err != nil {
		m.mu.Lock()
		delete(m.live, t.ID)
		m.mu.Unlock()
		return nil, &Error{Code: CodeUnavailable, Err: err, Message: "the task cannot be stored: retry later"}
	}
	s.recordTask(caller, t.ID, "created", map[string]any{"repo_url": t.RepoURL, "ref": t.Ref, "pull_request": t.PullRequest,
		"image": t.Image, "network": t.Network, "limits": t.Limits, "authenticated": clone.token != ""})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.prepareTask(caller, t.ID, clone)
	}()
	if req.WaitMS > 0 {
		wait := min(time.Duration(req.WaitMS)*time.Millisecond, MaxTaskWait)
		return s.waitTask(ctx, caller, t.ID, wait)
	}
	return s.Task(ctx, caller, t.ID)
}

// cloneCall is what preparing a task clones, with the token (never stored).
type cloneCall struct {
	docker.Clone
	user, token string
}

// newTask checks a request and makes its task and clone.
func (m *taskManager) newTask(caller Caller, req *TaskRequest) (*Task, cloneCall, error) {
	o := m.opts
	u, err := docker.CheckRepoURL(req.RepoURL)
	if err != nil {
		return nil, cloneCall{}, Invalid("%v", err)
	}
	for _, r := range []struct{ name, ref string }{{"ref", req.Ref}, {"target_branch", req.TargetBranch}} {
		if err := docker.CheckRef(r.ref); err != nil {
			return nil, cloneCall{}, Invalid("%s: %v", r.name, err)
		}
	}
	switch {
	case req.PullRequest < 0:
		return nil, cloneCall{}, Invalid("pull_request must be a positive number")
	case req.PullRequest > 0 && req.Ref != "":
		return nil, cloneCall{}, Invalid("send either ref or pull_request, not both")
	case req.PullRequest == 0 && req.TargetBranch != "":
		return nil, cloneCall{}, Invalid("target_branch goes with pull_request")
	case req.WaitMS < 0:
		return nil, cloneCall{}, Invalid("wait_ms must not be negative")
	}
	network := o.Network
	if req.Network != "" {
		if err := checkTaskNetwork(req.Network); err != nil {
			return nil, cloneCall{}, err
		}
		network = req.Network
	}
	image := o.Image
	if req.Image != "" {
		if strings.ContainsFunc(req.Image, func(r rune) bool { return r <= ' ' || r == 0x7f }) || len(req.Image) > 256 || strings.HasPrefix(req.Image, "-") {
			return nil, cloneCall{}, Invalid("image %q is not an image reference", req.Image)
		}
		image = req.Image
	}
	limits, err := o.limits(req.Limits)
	if err != nil {
		return nil, cloneCall{}, err
	}
	depth := o.Depth
	if req.CloneDepth != nil {
		if *req.CloneDepth < 0 {
			return nil, cloneCall{}, Invalid("clone_depth must be 0 (the whole history) or more")
		}
		depth = *req.CloneDepth
	}
	if depth < 0 {
		depth = 0
	}
	install := !o.NoAutoInstall
	if req.AutoInstall != nil {
		install = *req.AutoInstall
	}
	platform, user, token := m.credential(u)
	c := cloneCall{Clone: docker.Clone{URL: u.String(), Ref: req.Ref, Depth: depth, Target: req.TargetBranch}, user: user, token: token}
	if req.PullRequest > 0 {
		c.PullRequest = req.PullRequest
		c.PullRef = fmt.Sprintf("refs/pull/%d/head", req.PullRequest)
		if platform == "gitlab" {
			c.PullRef = fmt.Sprintf("refs/merge-requests/%d/head", req.PullRequest)
		}
	}
	c.Auth = token != ""
	if _, err := c.Script(); err != nil {
		return nil, cloneCall{}, Invalid("%v", err)
	}
	id := uuid.NewString()
	now := time.Now().UTC()
	t := &Task{
		ID: id, ContainerName: docker.ContainerName(id), State: TaskCreated,
		Principal: TaskPrincipal{Name: caller.Name, Role: caller.Role},
		RepoURL:   u.String(), Ref: req.Ref, PullRequest: req.PullRequest, TargetBranch: req.TargetBranch,
		Image: image, Network: network, CloneDepth: depth, AutoInstall: install, Workspace: docker.Project,
		Limits: limits, Steps: []TaskStep{}, CreatedAt: now, UpdatedAt: now,
	}
	return t, c, nil
}

// limits are a task's limits: the defaults, with what the request asks for.
func (o TaskOptions) limits(in *TaskLimitsInput) (TaskLimits, error) {
	l := TaskLimits{CPUs: o.CPUs, MemoryBytes: o.Memory, Pids: o.Pids, DiskBytes: o.Disk, TimeoutSeconds: int64(o.Timeout / time.Second),
		MaxOutputChars: o.MaxOutput}
	if in == nil {
		return l, nil
	}
	size := func(name string, raw json.RawMessage, into *int64) error {
		if len(raw) == 0 {
			return nil
		}
		var n int64
		if json.Unmarshal(raw, &n) == nil {
			*into = n
		} else {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return Invalid("limits.%s must be a number of bytes or a size such as \"4g\"", name)
			}
			v, err := units.RAMInBytes(s)
			if err != nil {
				return Invalid("limits.%s: %v", name, err)
			}
			*into = v
		}
		if *into <= 0 {
			return Invalid("limits.%s must be positive", name)
		}
		return nil
	}
	if err := errors.Join(size("memory", in.Memory, &l.MemoryBytes), size("disk", in.Disk, &l.DiskBytes)); err != nil {
		return l, err
	}
	switch {
	case in.CPUs < 0 || in.Pids < 0 || in.TimeoutSeconds < 0:
		return l, Invalid("limits must not be negative")
	case in.Memory != nil && l.MemoryBytes < 6<<20:
		return l, Invalid("limits.memory must be at least 6 MiB")
	case in.Pids > 0 && in.Pids < 16:
		return l, Invalid("limits.pids must be at least 16")
	case in.TimeoutSeconds > int64(o.Timeout/time.Second):
		return l, Invalid("limits.timeout_seconds %d is more than the %d this gateway allows", in.TimeoutSeconds, int64(o.Timeout/time.Second))
	}
	if in.CPUs > 0 {
		l.CPUs = in.CPUs
	}
	if in.Pids > 0 {
		l.Pids = in.Pids
	}
	if in.TimeoutSeconds > 0 {
		l.TimeoutSeconds = in.TimeoutSeconds
	}
	return l, nil
}

// credential is the platform of a repository's host and the token the gateway's
// environment holds for it: only for a host listed as GitHub's or GitLab's, and only
// over https unless the host is listed with http://.
func (m *taskManager) credential(u *url.URL) (platform, user, token string) {
	match := func(hosts []string) bool {
		for _, h := range hosts {
			scheme := "https"
			if rest, ok := strings.CutPrefix(h, "http://"); ok {
				scheme, h = "", rest
			} else if rest, ok := strings.CutPrefix(h, "https://"); ok {
				h = rest
			}
			if strings.EqualFold(strings.TrimSuffix(h, "/"), u.Host) && (scheme == "" || u.Scheme == scheme) {
				return true
			}
		}
		return false
	}
	switch {
	case match(m.opts.GitHubHosts):
		return "github", "x-access-token", m.opts.Getenv("GITHUB_PERSONAL_ACCESS_TOKEN")
	case match(m.opts.GitLabHosts):
		return "gitlab", "oauth2", m.opts.Getenv("GITLAB_PERSONAL_ACCESS_TOKEN")
	}
	return "", "", ""
}

// updateTask replaces a live task's document with f's change of a copy, stores it
// and wakes the waiters. It returns the new document, or nil when the task is not
// live. The store is written under the lock, so that the documents reach it in their
// order and none after the task ended.
func (s *Server) updateTask(ctx context.Context, id string, f func(t *Task)) *Task {
	return s.changeTask(ctx, id, true, f)
}

// touchTask is updateTask without storing: a command starting or ending in the task
// (running, its count), which a restart resets anyway.
func (s *Server) touchTask(ctx context.Context, id string, f func(t *Task)) *Task {
	return s.changeTask(ctx, id, false, f)
}

func (s *Server) changeTask(ctx context.Context, id string, store bool, f func(t *Task)) *Task {
	m := s.tasks
	m.mu.Lock()
	defer m.mu.Unlock()
	lt := m.live[id]
	if lt == nil {
		return nil
	}
	nt := *lt.task
	nt.Steps = slices.Clone(nt.Steps)
	f(&nt)
	nt.UpdatedAt = time.Now().UTC()
	lt.task = &nt
	close(m.changed)
	m.changed = make(chan struct{})
	if store {
		if err := s.state.putTask(context.WithoutCancel(ctx), &nt); err != nil {
			s.log.Error("tasks: cannot store a task", "task_id", id, "err", err)
		}
	}
	return &nt
}

// endTask ends a task (failed, deleted): stored, no longer live, recorded. The store
// is written before the task leaves the live ones (a reader woken by the change reads
// the store), under the lock (no update of the live task comes after).
func (s *Server) endTask(ctx context.Context, t *Task, state, reason string) {
	m := s.tasks
	now := time.Now().UTC()
	t.State, t.Reason, t.UpdatedAt, t.EndedAt, t.Running = state, reason, now, &now, 0
	m.mu.Lock()
	if err := s.state.putTask(context.WithoutCancel(ctx), t); err != nil {
		s.log.Error("tasks: cannot store a task", "task_id", t.ID, "err", err)
	}
	if lt := m.live[t.ID]; lt != nil && lt.exec != nil {
		lt.exec.Close() // its waiting sessions
	}
	delete(m.live, t.ID)
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	s.recordTask(Caller{Name: t.Principal.Name, Role: t.Principal.Role}, t.ID, state, map[string]any{"reason": reason})
}

// prepareTask prepares a task (seed 001 section 5.1): its container (an earlier one
// of the task removed first), the clone and checkout, the installs. A failure fails
// the task and removes its container.
func (s *Server) prepareTask(caller Caller, id string, clone cloneCall) {
	m := s.tasks
	ctx := m.ctx
	t := s.updateTask(ctx, id, func(t *Task) { t.State = TaskInitializing })
	if t == nil {
		return
	}
	fail := func(reason string) {
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*m.opts.OpTimeout)
		defer cancel()
		if err := docker.RemoveTask(octx, m.cli, id); err != nil {
			s.recordTask(caller, id, "remove_failed", map[string]any{"error": Truncate(err.Error(), 2000)})
		}
		if cur := s.liveTask(id); cur != nil {
			s.endTask(ctx, cur, TaskFailed, reason)
		}
	}
	octx, cancel := context.WithTimeout(ctx, m.opts.OpTimeout)
	cid, err := docker.CreateContainer(octx, m.cli, docker.ContainerSpec{
		TaskID: id, Image: t.Image, GuardImage: m.opts.GuardImage, CPUs: t.Limits.CPUs, Memory: t.Limits.MemoryBytes,
		Pids: t.Limits.Pids, Network: t.Network, Labels: m.opts.Labels,
	})
	cancel()
	if err != nil {
		fail("the container could not be created: " + engineMessage(err))
		return
	}
	t = s.updateTask(ctx, id, func(t *Task) {
		t.ContainerID = cid
		t.Limits.DiskEnforced, t.Limits.DiskNote = false, "the workspace is a volume of the engine's local driver, which cannot bound its size: the disk limit is not enforced on this engine"
	})
	if t == nil {
		return
	}
	e, err := s.taskExecutor(t)
	if err != nil {
		fail(err.Error())
		return
	}
	m.mu.Lock()
	if lt := m.live[id]; lt != nil {
		lt.exec = e
	}
	m.mu.Unlock()

	// The clone.
	step, commit := s.cloneStep(ctx, e, clone, time.Duration(t.Limits.TimeoutSeconds)*time.Second)
	t = s.updateTask(ctx, id, func(t *Task) {
		t.Steps = append(t.Steps, step)
		t.Commit = commit
	})
	s.recordTask(caller, id, "step", map[string]any{"step": step.Name, "ok": step.OK, "exit_code": step.ExitCode, "duration_ms": step.DurationMS, "error": step.Error})
	if !step.OK {
		reason := "the clone failed: " + step.Error
		if last := strings.TrimSpace(lastLine(step.Output)); last != "" {
			reason += ": " + last
		}
		fail(reason)
		return
	}
	if t == nil {
		return
	}

	// The installs.
	installFailed := false
	if t.AutoInstall {
		for _, in := range s.detectInstalls(ctx, e) {
			step := s.installStep(ctx, caller, t, in)
			installFailed = installFailed || !step.OK
			t = s.updateTask(ctx, id, func(t *Task) {
				t.Steps = append(t.Steps, step)
				t.InstallFailed = installFailed
			})
			s.recordTask(caller, id, "step", map[string]any{"step": step.Name, "command": step.Command, "ok": step.OK,
				"exit_code": step.ExitCode, "decision_id": step.DecisionID, "error": step.Error})
			if t == nil {
				return
			}
		}
	}
	if installFailed && m.opts.FailOnInstallError {
		fail("a dependency install failed (tasks.clone.fail_on_install_error)")
		return
	}
	if ctx.Err() != nil {
		fail("the gateway shut down while the task was being prepared")
		return
	}
	now := time.Now().UTC()
	if t = s.updateTask(ctx, id, func(t *Task) { t.State, t.ReadyAt = TaskReady, &now }); t != nil {
		s.recordTask(caller, id, "ready", map[string]any{"commit": t.Commit, "install_failed": installFailed})
	}
}

// taskExecutor is the executor of a task's container.
func (s *Server) taskExecutor(t *Task) (*docker.Executor, error) {
	cfg := taskConfig(s.opts.Executor, t)
	cfg.EnvSet = docker.TaskEnv()
	cfg.Caches = executor.Caches{}
	return docker.New(docker.Options{Client: s.tasks.cli, Container: t.ContainerID, Config: cfg})
}

// cloneStep clones the project: the token, when there is one, goes on the script's
// standard input and is masked in what is kept of its output.
func (s *Server) cloneStep(ctx context.Context, e *docker.Executor, c cloneCall, timeout time.Duration) (TaskStep, string) {
	step := TaskStep{Name: "clone", Command: cloneSummary(c.Clone)}
	script, err := c.Script()
	if err != nil {
		step.Error = err.Error()
		return step, ""
	}
	stdin := ""
	if c.Auth {
		stdin = docker.AuthHeader(c.user, c.token) + "\n"
	}
	res, err := e.Run(ctx, executor.Spec{Script: script, Dir: docker.Workspace, Stdin: stdin,
		Timeout: timeout, MaxOutputChars: 4 * maxStepOutput})
	step.ExitCode, step.DurationMS = res.ExitCode, res.DurationMS
	step.Output = maskSecret(tail(res.Stdout+res.Stderr, maxStepOutput), c.token, c.user)
	switch {
	case err != nil:
		step.Error = maskSecret(err.Error(), c.token, c.user)
	case res.TimedOut:
		step.Error = "the clone timed out"
	case res.ExitCode != 0:
		step.Error = fmt.Sprintf("git exited with %d", res.ExitCode)
	default:
		step.OK = true
	}
	return step, strings.TrimSpace(lastLine(res.Stdout))
}

// cloneSummary says what a clone does, without credentials.
func cloneSummary(c docker.Clone) string {
	var b strings.Builder
	b.WriteString("git clone")
	if c.Depth > 0 {
		fmt.Fprintf(&b, " --depth %d", c.Depth)
	}
	if c.Ref != "" {
		b.WriteString(" --branch " + c.Ref)
	}
	b.WriteString(" " + c.URL + " " + docker.Project)
	if c.PullRef != "" {
		fmt.Fprintf(&b, " && git fetch origin %s && git checkout pr/%d", c.PullRef, c.PullRequest)
	}
	return b.String()
}

// detectInstalls lists the installs the project's manifests call for.
func (s *Server) detectInstalls(ctx context.Context, e *docker.Executor) []docker.Install {
	res, err := e.Run(ctx, executor.Spec{Script: docker.ManifestScript(), Dir: docker.Workspace, Timeout: time.Minute})
	if err != nil {
		return nil
	}
	return docker.Installs(strings.Split(strings.TrimSpace(res.Stdout), "\n"))
}

// endpointInstall is the endpoint of a preparation's installs (the decision record's
// detail.endpoint); only the preparation calls with it.
const endpointInstall = "task_install"

// installStep runs one install as the task's principal through the whole pipeline:
// decided by the policy, audited, run in the task's container.
func (s *Server) installStep(ctx context.Context, caller Caller, t *Task, in docker.Install) TaskStep {
	step := TaskStep{Name: "install", Command: in.Command, Manifest: in.Manifest}
	c := Caller{Name: t.Principal.Name, Role: t.Principal.Role, RequestID: NewRequestID(), Endpoint: endpointInstall,
		Source: caller.Source, Log: caller.Log}
	req := &Request{Script: in.Command, Task: t.ID, Timeout: time.Duration(t.Limits.TimeoutSeconds) * time.Second,
		MaxOutput: maxStepOutput * 4}
	out, err := s.Exec(ctx, c, req)
	if out != nil {
		step.DecisionID, step.Decision = out.DecisionID, out.Decision
		if r := out.Result; r != nil {
			step.ExitCode, step.DurationMS = r.ExitCode, r.DurationMS
			step.Output = tail(r.Stdout+r.Stderr, maxStepOutput)
			if r.TimedOut {
				step.Error = "the install timed out"
			}
		}
	}
	switch {
	case err != nil:
		step.Error = AsError(err).Message
	case step.Error == "" && step.ExitCode != 0:
		step.Error = fmt.Sprintf("%s exited with %d", strings.Fields(in.Command)[0], step.ExitCode)
	case step.Error == "":
		step.OK = true
	}
	return step
}

// liveTask is a copy of a live task's document, nil when it is not live.
func (s *Server) liveTask(id string) *Task {
	m := s.tasks
	m.mu.Lock()
	defer m.mu.Unlock()
	if lt := m.live[id]; lt != nil {
		t := *lt.task
		return &t
	}
	return nil
}

// canSeeTask: its own principal, auditors and admins. canControlTask: its own agent,
// admins.
func canSeeTask(caller Caller, t *Task) bool {
	return caller.Role == RoleAdmin || caller.Role == RoleAuditor || t.Principal.Name == caller.Name
}

func canControlTask(caller Caller, t *Task) bool {
	return caller.Role == RoleAdmin || (caller.Role == RoleAgent && t.Principal.Name == caller.Name)
}

// Task is one task, as its caller may see it.
func (s *Server) Task(ctx context.Context, caller Caller, id string) (*Task, error) {
	if s.tasks == nil {
		return nil, Errorf(CodeNotFound, "tasks are not enabled on this gateway (config tasks.enabled)")
	}
	if uuid.Validate(id) != nil {
		return nil, Errorf(CodeNotFound, "no task %q", Truncate(id, 64))
	}
	if t := s.liveTask(id); t != nil {
		if !canSeeTask(caller, t) {
			return nil, Errorf(CodeNotFound, "no task %q", id)
		}
		return t, nil
	}
	t, err := s.state.task(ctx, id)
	if errors.Is(err, errNoTask) || (err == nil && !canSeeTask(caller, t)) {
		return nil, Errorf(CodeNotFound, "no task %q", id)
	}
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Err: err, Message: "the task store cannot be read"}
	}
	return t, nil
}

// Tasks lists the tasks the caller may see, newest first: an agent's own, everyone's
// for auditors and admins; in one state unless state is "" ("live": every state but
// failed and deleted); at most limit (default 100).
func (s *Server) Tasks(ctx context.Context, caller Caller, state string, limit int) ([]*Task, error) {
	if s.tasks == nil {
		return nil, Errorf(CodeNotFound, "tasks are not enabled on this gateway (config tasks.enabled)")
	}
	var states []string
	switch state {
	case "":
	case "live":
		states = []string{TaskCreated, TaskInitializing, TaskReady, TaskRunning, TaskStopped}
	case TaskCreated, TaskInitializing, TaskReady, TaskRunning, TaskStopped, TaskDeleted, TaskFailed:
		states = []string{state}
	default:
		return nil, Invalid("state %q: want live, created, initializing, ready, running, stopped, deleted or failed", state)
	}
	if limit <= 0 {
		limit = 100
	}
	principal := caller.Name
	if caller.Role == RoleAdmin || caller.Role == RoleAuditor {
		principal = ""
	}
	list, err := s.state.tasks(ctx, principal, states, min(limit, 1000))
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Err: err, Message: "the task store cannot be read"}
	}
	for i, t := range list { // the live documents are the current ones
		if lt := s.liveTask(t.ID); lt != nil {
			list[i] = lt
		}
	}
	return list, nil
}

// waitTask waits until a task is past created and initializing, or wait passed.
func (s *Server) waitTask(ctx context.Context, caller Caller, id string, wait time.Duration) (*Task, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.tasks.mu.Lock()
		ch := s.tasks.changed
		s.tasks.mu.Unlock()
		t, err := s.Task(ctx, caller, id)
		if err != nil || (t.State != TaskCreated && t.State != TaskInitializing) {
			return t, err
		}
		select {
		case <-ch:
		case <-timer.C:
			return t, nil
		case <-ctx.Done():
			return t, nil
		}
	}
}

// DeleteTask stops and removes a task's container (10 s grace, then kill; with its
// volumes, network and guard rules; three tries) and marks it deleted. A removal that
// fails leaves the task stopped with the reason, for the reaper to finish.
func (s *Server) DeleteTask(ctx context.Context, caller Caller, id string) (*Task, error) {
	t, err := s.Task(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	if !canControlTask(caller, t) {
		return nil, Errorf(CodeForbidden, "only the task's agent or an admin deletes it")
	}
	if !t.live() {
		return t, nil
	}
	return s.removeTask(ctx, caller, id, "deleted by "+caller.Name)
}

func (s *Server) removeTask(ctx context.Context, caller Caller, id, why string) (*Task, error) {
	m := s.tasks
	t := s.updateTask(ctx, id, func(t *Task) { t.State, t.Reason = TaskStopped, why })
	if t == nil {
		return s.Task(ctx, caller, id)
	}
	s.recordTask(caller, id, "stopped", map[string]any{"reason": why})
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*m.opts.OpTimeout)
	err := docker.RemoveTask(octx, m.cli, id)
	cancel()
	if err != nil {
		msg := engineMessage(err)
		s.recordTask(caller, id, "remove_failed", map[string]any{"error": Truncate(msg, 2000)})
		t = s.updateTask(ctx, id, func(t *Task) { t.Reason = "the container could not be removed (the reaper retries): " + msg })
		return t, &Error{Code: CodeUnavailable, Err: err, Message: "the task's container could not be removed: " + msg}
	}
	t.Running = 0
	s.endTask(ctx, t, TaskDeleted, why)
	return t, nil
}

// taskFor is the live task a request names, checked for the caller: nil when tasks
// are off or the request's task is not a UUID (a plain task name, as without tasks).
// Sandbox docker always has tasks (Options.withDefaults), and its host runner refuses
// to run anything (taskOnly).
func (s *Server) taskFor(ctx context.Context, caller Caller, req *Request) (*Task, error) {
	if s.tasks == nil {
		return nil, nil
	}
	if uuid.Validate(req.Task) != nil {
		if s.opts.Sandbox == SandboxDocker {
			return nil, Invalid("this gateway runs commands in task containers only: name a task (POST /v1/tasks creates one) in the request's task")
		}
		return nil, nil
	}
	// With tasks on, a UUID names a task: one that does not exist (or is another's) is
	// NOT_FOUND, never a command on the host.
	t, err := s.Task(ctx, caller, req.Task)
	if err != nil {
		return nil, err
	}
	if !canControlTask(caller, t) {
		return nil, Errorf(CodeNotFound, "no task %q", req.Task)
	}
	switch {
	case t.State == TaskReady || t.State == TaskRunning:
		return t, nil
	case t.State == TaskInitializing && caller.Endpoint == endpointInstall:
		return t, nil // the preparation's own installs
	case t.State == TaskCreated || t.State == TaskInitializing:
		return nil, Errorf(CodeConflict, "task %s is %s: wait until it is ready (GET /v1/tasks/%s)", t.ID, t.State, t.ID)
	}
	return nil, Errorf(CodeConflict, "task %s is %s%s: create a new task", t.ID, t.State, reasonSuffix(t.Reason))
}

// taskCwd resolves a request's cwd in a task's container: relative to the project,
// and inside /workspace.
func taskCwd(cwd string) (string, error) {
	if cwd == "" {
		return docker.Project, nil
	}
	p := cwd
	if !path.IsAbs(p) {
		p = path.Join(docker.Project, p)
	}
	p = path.Clean(p)
	if p != docker.Workspace && !strings.HasPrefix(p, docker.Workspace+"/") {
		return "", Invalid("cwd %q is outside the task's workspace %s", cwd, docker.Workspace)
	}
	return p, nil
}

// startTaskRun marks a command running in a task; the returned func ends it.
func (s *Server) startTaskRun(ctx context.Context, id string) (*docker.Executor, func(), error) {
	m := s.tasks
	m.mu.Lock()
	lt := m.live[id]
	if lt == nil || lt.exec == nil || (lt.task.State != TaskReady && lt.task.State != TaskRunning && lt.task.State != TaskInitializing) {
		m.mu.Unlock()
		return nil, nil, Errorf(CodeConflict, "task %s is no longer ready", id)
	}
	e, preparing := lt.exec, lt.task.State == TaskInitializing
	m.mu.Unlock()
	if preparing { // an install of the preparation: the task stays initializing
		return e, func() {}, nil
	}
	s.touchTask(ctx, id, func(t *Task) { t.Running++; t.State = TaskRunning })
	return e, func() {
		s.touchTask(ctx, id, func(t *Task) {
			if t.Running--; t.Running <= 0 && t.State == TaskRunning {
				t.Running, t.State = 0, TaskReady
			}
		})
	}, nil
}

// taskEngineError turns an engine failure while a task's command ran into a clear
// error: when the container is gone or the engine does not answer, the task failed.
func (s *Server) taskEngineError(ctx context.Context, id string, err error) error {
	m := s.tasks
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(m.opts.OpTimeout, 10*time.Second))
	defer cancel()
	t := s.liveTask(id)
	if t == nil {
		return err
	}
	insp, ierr := m.cli.ContainerInspect(octx, t.ContainerID, client.ContainerInspectOptions{})
	if ierr == nil && insp.Container.State != nil && insp.Container.State.Running {
		return err
	}
	reason := "the task's container is gone"
	if ierr != nil && !cerrdefs.IsNotFound(ierr) {
		reason = "the Docker engine cannot be reached: " + engineMessage(ierr)
	}
	if cur := s.liveTask(id); cur != nil {
		cur.Running = 0
		s.endTask(ctx, cur, TaskFailed, reason)
	}
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), 3*m.opts.OpTimeout)
		defer cancel()
		docker.RemoveTask(rctx, m.cli, id)
	}()
	return &Error{Code: CodeUnavailable, Err: err, Message: "the command could not run in task " + id + ": " + reason + " (the task failed)"}
}

// engineMessage is an engine error as one line for a client.
func engineMessage(err error) string {
	msg := err.Error()
	if client.IsErrConnectionFailed(err) {
		msg = "the Docker engine does not answer: " + msg
	}
	return Truncate(msg, 500)
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// tail is the end of s, at most n bytes, cut at a line start when one is near.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

// maskSecret hides a token (and its Basic form) in text.
func maskSecret(text, token, user string) string {
	if token == "" {
		return text
	}
	text = strings.ReplaceAll(text, token, "***")
	if h := strings.TrimPrefix(docker.AuthHeader(user, token), "Authorization: Basic "); h != "" {
		text = strings.ReplaceAll(text, h, "***")
	}
	return text
}

// taskConfig is the executor configuration of a task's commands: the gateway's, with
// the task's timeout as the bound.
func taskConfig(cfg executor.Config, t *Task) executor.Config {
	cfg.MaxTimeout = time.Duration(t.Limits.TimeoutSeconds) * time.Second
	if max := t.Limits.MaxOutputChars; max > 0 {
		cfg.MaxOutputChars = max
		if cfg.DefaultOutputChars > max {
			cfg.DefaultOutputChars = max
		}
	}
	if cfg.DefaultTimeout == 0 {
		cfg.DefaultTimeout = executor.DefaultTimeout
	}
	cfg.DefaultTimeout = min(cfg.DefaultTimeout, cfg.MaxTimeout)
	return cfg
}

// taskSandbox is what a task's container guarantees, for the policy input: a file
// system of its own (the image, read-only, and the workspace), its HOME in the
// workspace; /tmp is the container's, shared by the task's commands.
var taskSandbox = parse.Sandbox{Backend: SandboxDocker, Isolated: true, Home: docker.Scratch}
