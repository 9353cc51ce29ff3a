package gateway

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// Defaults of Options.
const (
	DefaultListen           = "127.0.0.1:8080"
	DefaultBodyLimit        = 1 << 20 // 1 MiB
	DefaultMaxScriptBytes   = 64 << 10
	DefaultShutdownGrace    = 10 * time.Second
	DefaultAuthFailureRate  = 1.0 // refused authentications per second and client address, sustained
	DefaultAuthFailureBurst = 10
	DefaultRequestTimeout   = time.Minute
	DefaultReadHeader       = 10 * time.Second
	DefaultReadTimeout      = 30 * time.Second
	DefaultIdleTimeout      = 2 * time.Minute
	DefaultReloadDebounce   = 250 * time.Millisecond
	DefaultProfile          = ProfileAuto
	DefaultDecisionCache    = 10000
	DefaultTask             = "default"
	// DefaultGCPercent is the Go GC target (GOGC) cmdgate serve and cmdgate mcp run the
	// gateway with: its live heap is small (the compiled policy, the caches) and every
	// request allocates, so a higher target spends a few tens of MB on far fewer
	// collections.
	DefaultGCPercent = 400
)

// Sandbox backends Options.Sandbox names.
const (
	SandboxAuto    = "auto"
	SandboxProcess = "process"
	SandboxLinux   = "linux"
	SandboxDocker  = "docker"
)

// Options configure a Server. The zero value is usable except for DataDir, which is
// required: every other field has the default its comment names.
type Options struct {
	// Listen is the address `cmdgate serve` listens on; default DefaultListen. The
	// Server itself serves whatever listener Serve is given.
	Listen string
	// Workspace is the directory tree commands may run in; default the current
	// directory.
	Workspace string
	// DataDir holds the token file and the audit store. Required.
	DataDir string
	// PolicyDir is a policy bundle directory; "" means the embedded default bundle.
	// A directory is watched: a change reloads the bundle (see WatchPolicy).
	PolicyDir string
	// Policy is the policy configuration (the allowlist and the answers for unknown
	// and dynamic commands); the zero value is the default configuration.
	Policy policies.Config
	// DecisionCache is how many decisions the engine remembers by input document
	// (request id aside), answering a repeated command without evaluating the policy
	// again (policies.WithDecisionCache); default DefaultDecisionCache, -1 turns it
	// off. A bundle whose decisions could differ for the same document is never cached.
	DecisionCache int
	// Profile chooses the rule profile every request is decided under: ProfileAuto (the
	// default; "default" means the same) takes "sandboxed" where the backend isolates
	// (linux) and "strict" elsewhere; "strict" or "sandboxed" chooses one, and
	// "sandboxed" on a backend that does not isolate is a start error. The profile in
	// force is request.profile of every policy input and the rules' configuration
	// (policies.Config.Profile).
	Profile string
	// Sandbox selects the executor backend: "auto" (the default) is "linux" where its
	// sandbox can be built (user namespaces, Landlock, the cmdgate-sandbox program),
	// else "process" with a warning in the logs and /healthz; "linux" refuses to start
	// where it cannot be honoured; "process" runs commands unconfined (the policy is the
	// only boundary). "docker" runs every command in a task's container (Tasks) and
	// refuses a request that names no task.
	Sandbox string
	// NoCaches turns off the per-workspace tool caches: without them every command
	// starts with empty Go, npm, pip, cargo, Maven and Gradle caches and a fresh HOME.
	NoCaches bool
	// CachesDir holds the tool caches, one directory per workspace
	// (executor.CacheDir); default DataDir/caches. Executor.Caches, when set, wins.
	CachesDir string
	// Linux configures the linux backend; its Workspace, Config and Logger are the
	// gateway's.
	Linux linux.Options
	// Executor holds the limits of commands (timeouts, output caps, environment
	// denylist, rlimits); the zero value is exec_command's defaults.
	Executor executor.Config
	// Runner, when set, runs the commands instead of the backend Sandbox names. It is
	// for embedding cmdgate with another backend (and for tests); nil is the default.
	Runner executor.Executor
	// SandboxInput is what Runner guarantees, for the policy input's sandbox (its
	// Backend is "custom"); the zero value guarantees nothing. Unused without Runner.
	SandboxInput parse.Sandbox
	// Audit configures the audit store in DataDir.
	Audit audit.Options
	// Approvals configures the approvals of ask decisions.
	Approvals ApprovalOptions
	// Jobs configures background jobs.
	Jobs JobOptions
	// Readonly configures the read-only language (Execute).
	Readonly ReadonlyOptions
	// Output configures what a result holds of a long output and what is kept of it
	// for paging (ReadOutput).
	Output OutputOptions
	// Tasks configures per-task Docker environments (seed 001); Sandbox "docker"
	// turns them on and runs every command in one.
	Tasks TaskOptions
	// Logger receives the structured logs; nil discards them.
	Logger *slog.Logger

	// BodyLimit caps a request body in bytes; default 1 MiB. Larger bodies are
	// TOO_LARGE (413).
	BodyLimit int64
	// MaxScriptBytes caps a script (or an argv, its words joined by spaces); default
	// 64 KiB. Larger ones are INVALID_ARGUMENT.
	MaxScriptBytes int
	// ShutdownGrace is how long running commands may go on once shutdown began before
	// they are killed; default 10 s. A negative value kills them at once.
	ShutdownGrace time.Duration
	// AuthFailureRate and AuthFailureBurst limit refused authentications per client
	// address (a token bucket: Burst failures at once, then Rate per second). Past the
	// limit every request from that address is RATE_LIMITED (429) until the bucket
	// refills, valid token or not: an address that is guessing tokens gets nothing.
	// Defaults 1 per second and 10.
	AuthFailureRate  float64
	AuthFailureBurst int
	// RequestTimeout bounds the handling of every request except /v1/exec (whose
	// commands have their own timeout); default 1 minute.
	RequestTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the HTTP
	// server's; defaults 10 s, 30 s, the longest approval wait plus the executor's
	// largest timeout plus a minute, and 2 minutes.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// NoWatch turns off watching PolicyDir for changes (SIGHUP and ReloadPolicy still
	// reload).
	NoWatch bool
	// ReloadDebounce is how long the watcher waits after the last change of a burst
	// before it reloads; default 250 ms.
	ReloadDebounce time.Duration
}

// withDefaults returns o with every zero field set to its default, or an error for a
// value that cannot work.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("no data directory"))
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace: %w", err))
		}
		o.Workspace = wd
	}
	if o.CachesDir == "" && o.DataDir != "" {
		o.CachesDir = filepath.Join(o.DataDir, "caches")
	}
	switch o.Profile {
	case "", "default":
		o.Profile = ProfileAuto
	case ProfileAuto, policies.ProfileStrict, policies.ProfileSandboxed:
	default:
		errs = append(errs, fmt.Errorf("policy profile %q is not auto, strict or sandboxed", o.Profile))
	}
	if o.Sandbox == "" {
		o.Sandbox = SandboxAuto
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.BodyLimit == 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	switch {
	case o.DecisionCache == 0:
		o.DecisionCache = DefaultDecisionCache
	case o.DecisionCache < -1:
		errs = append(errs, fmt.Errorf("decision cache %d: want -1 (off), 0 (default) or more", o.DecisionCache))
	}
	if o.MaxScriptBytes == 0 {
		o.MaxScriptBytes = DefaultMaxScriptBytes
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.AuthFailureRate == 0 {
		o.AuthFailureRate = DefaultAuthFailureRate
	}
	if o.AuthFailureBurst == 0 {
		o.AuthFailureBurst = DefaultAuthFailureBurst
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = DefaultReadHeader
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	var aerr error
	if jobs, err := o.Jobs.withDefaults(o.DataDir); err != nil {
		errs = append(errs, err)
	} else {
		o.Jobs = jobs
	}
	if out, err := o.Output.withDefaults(); err != nil {
		errs = append(errs, err)
	} else {
		o.Output = out
	}
	if o.Approvals, aerr = o.Approvals.withDefaults(); aerr != nil {
		errs = append(errs, aerr)
	}
	if o.Sandbox == SandboxDocker {
		o.Tasks.Enabled = true
	}
	if o.Tasks.Enabled {
		tasks, err := o.Tasks.withDefaults()
		if err != nil {
			errs = append(errs, err)
		}
		o.Tasks = tasks
	}
	if o.WriteTimeout == 0 {
		maxTimeout := o.Executor.MaxTimeout
		if maxTimeout == 0 {
			maxTimeout = executor.DefaultMaxTimeout
		}
		if o.Tasks.Enabled {
			maxTimeout = max(maxTimeout, o.Tasks.Timeout)
		}
		// An exec request may wait for an approval, then run its command.
		o.WriteTimeout = o.Approvals.Wait + maxTimeout + time.Minute
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ReloadDebounce == 0 {
		o.ReloadDebounce = DefaultReloadDebounce
	}
	switch {
	case o.BodyLimit < 0:
		errs = append(errs, fmt.Errorf("body limit %d is negative", o.BodyLimit))
	case o.MaxScriptBytes < 0:
		errs = append(errs, fmt.Errorf("max script bytes %d is negative", o.MaxScriptBytes))
	case o.AuthFailureRate < 0 || o.AuthFailureBurst < 1:
		errs = append(errs, fmt.Errorf("auth failure rate %v and burst %d must be positive", o.AuthFailureRate, o.AuthFailureBurst))
	case o.RequestTimeout < 0 || o.ReadHeaderTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.IdleTimeout < 0 || o.ReloadDebounce < 0:
		errs = append(errs, errors.New("timeouts must not be negative"))
	}
	if err := o.Executor.Check(); err != nil {
		errs = append(errs, fmt.Errorf("executor: %w", err))
	}
	if err := o.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	return o, errors.Join(errs...)
}
