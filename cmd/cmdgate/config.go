package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/docker/go-units"
	"gopkg.in/yaml.v3"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/policies"
)

// Config is the cmdgate configuration file: one YAML document (--config FILE, else
// $CMDGATE_CONFIG), one top-level section per part of cmdgate. Every key is optional;
// a missing key (or a zero value) keeps its default. Keys that do not exist are errors:
// a typo in security configuration must not pass silently. Durations are Go durations
// ("90s", "30m"). For `cmdgate serve`, a CMDGATE_* variable overrides the file and a
// flag overrides both.
//
// Every key with its default (README.md shows the same):
//
//	listen: 127.0.0.1:8080      # --listen, CMDGATE_LISTEN
//	workspace: ""               # --workspace, CMDGATE_WORKSPACE; "" is the current directory
//	data: ""                    # --data, CMDGATE_DATA; "" is $XDG_DATA_HOME/cmdgate or ~/.local/share/cmdgate
//	sandbox:                    # or just the backend's name: `sandbox: linux`
//	  backend: auto             # --sandbox, CMDGATE_SANDBOX: auto, process, linux or docker
//	  caches: true              # per-workspace tool caches (Go, npm, pip, cargo, Maven,
//	                            # Gradle) and a persistent HOME, kept between commands
//	  caches_dir: ""            # "" is <data>/caches; one directory per workspace below it
//	env:                        # the environment of every command
//	  mode: allowlist           # allowlist: PATH, LANG, LANGUAGE, LC_*, TERM, TZ, HOME and the
//	                            # caches' variables only; inherit: the gateway's environment
//	                            # without the variables that look like credentials
//	  pass: []                  # more of the gateway's variables passed (names or globs);
//	                            # in inherit mode also credential-like ones named here
//	  set: {}                   # variables set for every command (win over all the above)
//	linux:                      # the linux sandbox (sandbox: auto or linux; cmdgate sandbox run)
//	  helper: ""                # the cmdgate-sandbox program; "" looks beside cmdgate, then in PATH
//	  read_only: []             # replaces the host directories bound read-only:
//	                            # /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt
//	  extra_read_only: []       # added to them (a toolchain under /root, say)
//	  hide: []                  # more paths under them shown empty, added to /etc/shadow,
//	                            # /etc/gshadow, /etc/sudoers*, /etc/ssh, /etc/ssl/private, ...
//	  tmp_size: 1073741824      # bytes of the private /tmp, and of /dev/shm
//	  memory: 4294967296        # bytes per command (cgroup); -1 no limit
//	  pids: 1024                # processes and threads per command (cgroup); -1 no limit
//	  cpus: 0                   # CPU time per command, in CPUs (cgroup); 0 no limit
//	  pool: 2                   # sandboxes built ahead for commands without network; -1 none
//	                            # (up to two builders hold one more each: 4 ready by default)
//	log:
//	  format: text              # --log-format, CMDGATE_LOG_FORMAT: text or json
//	  level: info               # --log-level, CMDGATE_LOG_LEVEL: debug, info, warn or error
//	policy:
//	  dir: ""                   # --policy, CMDGATE_POLICY; "" is the embedded bundle
//	  watch: true               # reload when a file in dir changes (SIGHUP always reloads)
//	  reload_debounce: 250ms
//	  profile: auto             # strict | sandboxed | auto: sandboxed where the backend isolates
//	                            # (linux), strict otherwise (process); request.profile
//	  max_script_bytes: 65536   # larger scripts are refused
//	  decision_cache: 10000     # decisions remembered by input document (request id aside); -1 off
//	  allowed_commands:
//	    use_default: true       # the default categories
//	    additional: []          # entries added ("tool" or "tool subcommand")
//	    exclude: []             # entries removed ("git" removes every "git ..." entry)
//	    custom_list: []         # the whole list when use_default is false
//	  unknown_command: deny     # deny or ask: a command outside the allowlist
//	  dynamic_command: deny     # deny or ask: a command only known at run time
//	exec:
//	  default_timeout: 30s      # when a request gives no timeout_ms
//	  max_timeout: 2m           # the largest timeout_ms a request may ask (30m suits long builds)
//	  default_output_chars: 200000
//	  max_output_chars: 1000000 # per stream
//	  kill_grace: 2s            # SIGTERM to SIGKILL when a command's tree is stopped
//	  env_deny: []              # more variables never passed to commands (globs), added to
//	                            # CMDGATE_*, BASH_ENV, BASH_FUNC_*, SHELLOPTS, BASHOPTS, CDPATH
//	  limits:
//	    core_dumps: false
//	    file_size: 8589934592   # bytes (RLIMIT_FSIZE)
//	    open_files: 8192        # RLIMIT_NOFILE
//	    processes: -1           # RLIMIT_NPROC; -1 keeps the gateway's own
//	audit:
//	  checkpoint_every: 1000    # records between signed checkpoints; -1: only at shutdown
//	  checkpoint_interval: 5s   # a checkpoint this long after records were appended; -1s: none
//	  witness: ""               # absolute path of a file every checkpoint is appended to
//	  max_input_bytes: 1048576  # largest policy input one record may hold
//	  mask:                     # added to the built-in patterns, never replacing them
//	    names: []               # e.g. "*_DSN": variables, options, headers whose values are secret
//	    flags: []               # e.g. "psql:-W" or "--pin": options whose value is secret
//	    value_prefixes: []      # e.g. "acme_live_": credential formats masked anywhere
//	server:
//	  body_limit: 1048576       # bytes; larger bodies are 413 TOO_LARGE
//	  shutdown_grace: 10s       # running commands may finish this long after SIGTERM
//	  request_timeout: 1m       # every endpoint but /v1/exec
//	  read_header_timeout: 10s
//	  read_timeout: 30s
//	  write_timeout: 0s         # 0 is exec.max_timeout plus one minute
//	  idle_timeout: 2m
//	  auth_failure_rate: 1      # refused authentications per second and client address...
//	  auth_failure_burst: 10    # ...after a burst of this many; then 429 RATE_LIMITED
//	  gc_percent: 400           # the Go GC target of cmdgate serve and mcp (GOGC); the GOGC variable wins
//	output:                     # results cut by max_output_chars
//	  keep: head                # what the result holds: head, tail, or head_tail (both ends)
//	  max_bytes: 16777216       # bytes of each stream kept for paging; -1 keeps nothing
//	  retention: 1h             # how long a kept output can be read
//	readonly:                   # the read-only pipeline language (/v1/execute, execute, cmdgate execute)
//	  allow: []                 # files it may read; "dir/" allows everything beneath dir (secret-looking
//	                            # names excepted unless listed); relative entries are the workspace's;
//	                            # empty: the language is off
type Config struct {
	Listen    string          `yaml:"listen"`
	Workspace string          `yaml:"workspace"`
	Data      string          `yaml:"data"`
	Sandbox   SandboxConfig   `yaml:"sandbox"`
	Env       EnvConfig       `yaml:"env"`
	Linux     LinuxConfig     `yaml:"linux"`
	Log       LogConfig       `yaml:"log"`
	Policy    PolicyConfig    `yaml:"policy"`
	Exec      ExecConfig      `yaml:"exec"`
	Audit     AuditConfig     `yaml:"audit"`
	Server    ServerConfig    `yaml:"server"`
	MCP       MCPConfig       `yaml:"mcp"`
	Approvals ApprovalsConfig `yaml:"approvals"`
	Jobs      JobsConfig      `yaml:"jobs"`
	Tasks     TasksConfig     `yaml:"tasks"`
	Output    OutputConfig    `yaml:"output"`
	Readonly  ReadonlyConfig  `yaml:"readonly"`
}

// ReadonlyConfig is the `readonly:` section: what the read-only pipeline language
// (POST /v1/execute, the MCP execute tool, cmdgate execute) may read.
type ReadonlyConfig struct {
	Allow []string `yaml:"allow"`
}

// OutputConfig is the `output:` section: what a result holds of a long output, and what
// is kept of it for paging (GET /v1/outputs/{id}, read_output).
type OutputConfig struct {
	Keep      string        `yaml:"keep"`
	MaxBytes  int64         `yaml:"max_bytes"`
	Retention time.Duration `yaml:"retention"`
}

func (o OutputConfig) options() gateway.OutputOptions {
	return gateway.OutputOptions{Keep: executor.Keep(o.Keep), MaxBytes: o.MaxBytes, Retention: o.Retention}
}

// JobsConfig is the `jobs:` section: background jobs (cmdgate job, /v1/jobs, the job_*
// MCP tools).
type JobsConfig struct {
	// Enabled turns jobs on (default true).
	Enabled *bool `yaml:"enabled"`
	// Root is the job root; default $CMDGATE_JOB_ROOT, else
	// $XDG_DATA_HOME/cmdgate/jobs, else ~/.local/share/cmdgate/jobs.
	Root string `yaml:"root"`
	// MaxPerPrincipal is how many jobs one principal may run at once (default 8).
	MaxPerPrincipal int `yaml:"max_per_principal"`
	// RetentionDays is how long finished jobs are kept (default 7).
	RetentionDays int `yaml:"retention_days"`
	// MaxRunTime kills a job that runs longer (default 0: no limit).
	MaxRunTime time.Duration `yaml:"max_run_time"`
	// LogCap caps each of a job's logs, in bytes (default 64 MiB).
	LogCap int64 `yaml:"log_cap"`
}

// TasksConfig is the `tasks:` section: per-task Docker environments (POST /v1/tasks,
// the task_* MCP tools, cmdgate task), with the keys of seed 001's configuration. The
// variables COMMAND_EXECUTOR_ENABLED, EXECUTOR_BASE_IMAGE, EXECUTOR_CPU_LIMIT,
// EXECUTOR_MEMORY_LIMIT and EXECUTOR_TIMEOUT override them under serve; DOCKER_HOST
// (and DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) name the engine.
type TasksConfig struct {
	Enabled         *bool             `yaml:"enabled"`
	MaxPerPrincipal int               `yaml:"max_per_principal"`
	Docker          TasksDockerConfig `yaml:"docker"`
	Clone           TasksCloneConfig  `yaml:"clone"`
	Execution       struct {
		TimeoutSeconds int64 `yaml:"timeout_seconds"`
		MaxOutputSize  int   `yaml:"max_output_size"`
	} `yaml:"execution"`
	Cleanup struct {
		IntervalHours       float64 `yaml:"interval_hours"`
		StaleThresholdHours float64 `yaml:"stale_threshold_hours"`
		OnShutdown          bool    `yaml:"on_shutdown"`
	} `yaml:"cleanup"`
}

// TasksDockerConfig is `tasks.docker`: the image, the limits and the network.
type TasksDockerConfig struct {
	BaseImage        string        `yaml:"base_image"`
	GuardImage       string        `yaml:"guard_image"`
	OperationTimeout time.Duration `yaml:"operation_timeout"`
	Resources        struct {
		CPULimit    float64 `yaml:"cpu_limit"`
		MemoryLimit string  `yaml:"memory_limit"`
		DiskLimit   string  `yaml:"disk_limit"`
		PidsLimit   int64   `yaml:"pids_limit"`
	} `yaml:"resources"`
	Network struct {
		ExternalAccess *bool    `yaml:"external_access"`
		WhitelistMode  bool     `yaml:"whitelist_mode"`
		AllowedDomains []string `yaml:"allowed_domains"`
	} `yaml:"network"`
}

// TasksCloneConfig is `tasks.clone`.
type TasksCloneConfig struct {
	Shallow            *bool    `yaml:"shallow"`
	Depth              int      `yaml:"depth"`
	AutoInstallDeps    *bool    `yaml:"auto_install_deps"`
	FailOnInstallError bool     `yaml:"fail_on_install_error"`
	GitHubHosts        []string `yaml:"github_hosts"`
	GitLabHosts        []string `yaml:"gitlab_hosts"`
}

// options maps the section onto the gateway's task options; getenv gives the
// variables that override the file ("" for none).
func (c TasksConfig) options(getenv func(string) string) (gateway.TaskOptions, error) {
	var errs []error
	o := gateway.TaskOptions{
		Enabled: c.Enabled != nil && *c.Enabled, MaxPerPrincipal: c.MaxPerPrincipal,
		Image: c.Docker.BaseImage, GuardImage: c.Docker.GuardImage, OpTimeout: c.Docker.OperationTimeout,
		CPUs: c.Docker.Resources.CPULimit, Pids: c.Docker.Resources.PidsLimit,
		Depth: c.Clone.Depth, NoAutoInstall: c.Clone.AutoInstallDeps != nil && !*c.Clone.AutoInstallDeps,
		FailOnInstallError: c.Clone.FailOnInstallError, GitHubHosts: c.Clone.GitHubHosts, GitLabHosts: c.Clone.GitLabHosts,
		Timeout:          time.Duration(c.Execution.TimeoutSeconds) * time.Second,
		MaxOutput:        c.Execution.MaxOutputSize,
		CleanupInterval:  time.Duration(c.Cleanup.IntervalHours * float64(time.Hour)),
		StaleAfter:       time.Duration(c.Cleanup.StaleThresholdHours * float64(time.Hour)),
		RemoveOnShutdown: c.Cleanup.OnShutdown,
	}
	if c.Clone.Shallow != nil && !*c.Clone.Shallow {
		o.Depth = -1
	}
	if c.Docker.Network.ExternalAccess != nil && !*c.Docker.Network.ExternalAccess {
		o.Network = gateway.TaskNetworkNone
	}
	if c.Docker.Network.WhitelistMode || len(c.Docker.Network.AllowedDomains) > 0 {
		errs = append(errs, errors.New("tasks.docker.network: the domain allowlist mode (whitelist_mode, allowed_domains) is not available yet: leave it off, or set external_access: false"))
	}
	size := func(key, v string, into *int64) {
		if v == "" {
			return
		}
		n, err := units.RAMInBytes(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s %q: want a size such as 4g", key, v))
			return
		}
		*into = n
	}
	size("tasks.docker.resources.memory_limit", c.Docker.Resources.MemoryLimit, &o.Memory)
	size("tasks.docker.resources.disk_limit", c.Docker.Resources.DiskLimit, &o.Disk)
	if getenv != nil {
		if v := getenv("COMMAND_EXECUTOR_ENABLED"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("COMMAND_EXECUTOR_ENABLED %q: want true or false", v))
			}
			o.Enabled = b
		}
		if v := getenv("EXECUTOR_BASE_IMAGE"); v != "" {
			o.Image = v
		}
		if v := getenv("EXECUTOR_CPU_LIMIT"); v != "" {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("EXECUTOR_CPU_LIMIT %q: want a number of CPUs", v))
			}
			o.CPUs = n
		}
		size("EXECUTOR_MEMORY_LIMIT", getenv("EXECUTOR_MEMORY_LIMIT"), &o.Memory)
		if v := getenv("EXECUTOR_TIMEOUT"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("EXECUTOR_TIMEOUT %q: want seconds", v))
			}
			o.Timeout = time.Duration(n) * time.Second
		}
	}
	return o, errors.Join(errs...)
}

// ApprovalsConfig is the `approvals:` section: what happens to a command the policy
// answers ask for.
type ApprovalsConfig struct {
	// Enabled holds such a command for a human's decision; false refuses it at once.
	Enabled *bool `yaml:"enabled"`
	// Expiry is how long an approval waits for a decision (nobody deciding denies).
	Expiry time.Duration `yaml:"expiry"`
	// Wait is how long an MCP tool call waits for the decision, and the most an exec
	// request's wait_ms may ask.
	Wait time.Duration `yaml:"wait"`
	// PersistentGrants lets approvers make grants (scopes beyond once).
	PersistentGrants *bool `yaml:"persistent_grants"`
	// GrantExpiry and MaxGrantExpiry: a grant's default and longest lifetime.
	GrantExpiry    time.Duration `yaml:"grant_expiry"`
	MaxGrantExpiry time.Duration `yaml:"max_grant_expiry"`
	// Webhook is told of every new approval.
	Webhook WebhookConfig `yaml:"webhook"`
}

// WebhookConfig is `approvals.webhook`: where new approvals are posted, and the file
// holding the secret their HMAC-SHA256 signature is made with.
type WebhookConfig struct {
	URL        string `yaml:"url"`
	SecretFile string `yaml:"secret_file"`
}

// secret reads the webhook's secret: the file's content, white space trimmed.
func (w WebhookConfig) secret() ([]byte, error) {
	if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("approvals.webhook.url %q is not an http or https URL", w.URL)
	}
	if w.SecretFile == "" {
		return nil, errors.New("approvals.webhook.secret_file is needed with approvals.webhook.url: every delivery is signed")
	}
	b, err := os.ReadFile(w.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("approvals.webhook.secret_file: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < 16 {
		return nil, errors.New("approvals.webhook.secret_file: the secret must be at least 16 bytes")
	}
	return b, nil
}

// MCPConfig is the `mcp:` section: the stdio server of `cmdgate mcp`.
type MCPConfig struct {
	// Principal names a token in the data directory (agent or admin role, not revoked)
	// whose principal `cmdgate mcp` calls as when no token is given: an MCP client's
	// configuration then holds no secret. Revoking the token stops it.
	Principal string `yaml:"principal"`
}

// SandboxConfig is the `sandbox:` key: the backend's name alone (`sandbox: linux`, the
// form of earlier versions), or a section with the backend and the tool caches.
type SandboxConfig struct {
	Backend   string `yaml:"backend"`
	Caches    *bool  `yaml:"caches"`
	CachesDir string `yaml:"caches_dir"`
}

// UnmarshalYAML takes a scalar as the backend's name and a mapping as the section,
// refusing keys that do not exist (a node's Decode would not).
func (s *SandboxConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&s.Backend)
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: sandbox: want a backend name or a mapping", n.Line)
	}
	if err := knownKeys(n, "sandbox", "backend", "caches", "caches_dir"); err != nil {
		return err
	}
	type plain SandboxConfig
	return n.Decode((*plain)(s))
}

// cachesOn is sandbox.caches, default true.
func (s SandboxConfig) cachesOn() bool { return s.Caches == nil || *s.Caches }

// EnvConfig is the `env:` section, mapped onto executor.Config's EnvMode, EnvPass and
// EnvSet.
type EnvConfig struct {
	Mode string            `yaml:"mode"`
	Pass []string          `yaml:"pass"`
	Set  map[string]string `yaml:"set"`
}

// knownKeys refuses a mapping key of section that is not among keys.
func knownKeys(n *yaml.Node, section string, keys ...string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(keys, k.Value) {
			return fmt.Errorf("line %d: field %s not found in %s", k.Line, k.Value, section)
		}
	}
	return nil
}

// LinuxConfig is the `linux:` section, mapped onto linux.Options.
type LinuxConfig struct {
	Helper        string   `yaml:"helper"`
	ReadOnly      []string `yaml:"read_only"`
	ExtraReadOnly []string `yaml:"extra_read_only"`
	Hide          []string `yaml:"hide"`
	TmpSize       int64    `yaml:"tmp_size"`
	Memory        int64    `yaml:"memory"`
	Pids          int64    `yaml:"pids"`
	CPUs          float64  `yaml:"cpus"`
	Pool          int      `yaml:"pool"`
}

// options maps the section onto the linux backend's options (Workspace, Config and
// Logger are the caller's).
func (l LinuxConfig) options() linux.Options {
	return linux.Options{
		Helper:        l.Helper,
		ReadOnly:      l.ReadOnly,
		ExtraReadOnly: l.ExtraReadOnly,
		ExtraHide:     l.Hide,
		TmpSize:       l.TmpSize,
		Limits:        linux.Limits{Memory: l.Memory, Pids: l.Pids, CPU: l.CPUs},
		Pool:          l.Pool,
	}
}

// validate checks the paths and sizes; whether they work is for the sandbox to say.
func (l LinuxConfig) validate() error {
	var errs []error
	for key, paths := range map[string][]string{"read_only": l.ReadOnly, "extra_read_only": l.ExtraReadOnly, "hide": l.Hide} {
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				errs = append(errs, fmt.Errorf("linux.%s: %q is not an absolute path", key, p))
			}
		}
	}
	if l.TmpSize < 0 {
		errs = append(errs, fmt.Errorf("linux.tmp_size %d is negative", l.TmpSize))
	}
	if l.CPUs < 0 {
		errs = append(errs, fmt.Errorf("linux.cpus %v is negative", l.CPUs))
	}
	return errors.Join(errs...)
}

// LogConfig is the `log:` section.
type LogConfig struct {
	Format string `yaml:"format"`
	Level  string `yaml:"level"`
}

// PolicyConfig is the `policy:` section: where the bundle comes from, plus the
// configuration the rules read (policies.Config, whose keys sit inline).
type PolicyConfig struct {
	policies.Config `yaml:",inline"`
	Dir             string        `yaml:"dir"`
	Watch           *bool         `yaml:"watch"`
	ReloadDebounce  time.Duration `yaml:"reload_debounce"`
	Profile         string        `yaml:"profile"`
	MaxScriptBytes  int           `yaml:"max_script_bytes"`
	DecisionCache   int           `yaml:"decision_cache"`
}

// ExecConfig is the `exec:` section, mapped onto executor.Config.
type ExecConfig struct {
	DefaultTimeout     time.Duration `yaml:"default_timeout"`
	MaxTimeout         time.Duration `yaml:"max_timeout"`
	DefaultOutputChars int           `yaml:"default_output_chars"`
	MaxOutputChars     int           `yaml:"max_output_chars"`
	KillGrace          time.Duration `yaml:"kill_grace"`
	EnvDeny            []string      `yaml:"env_deny"`
	Limits             LimitsConfig  `yaml:"limits"`
}

// LimitsConfig is `exec.limits`, mapped onto executor.Resources.
type LimitsConfig struct {
	CoreDumps bool  `yaml:"core_dumps"`
	FileSize  int64 `yaml:"file_size"`
	OpenFiles int64 `yaml:"open_files"`
	Processes int64 `yaml:"processes"`
}

// AuditConfig is the `audit:` section, mapped onto audit.Options.
type AuditConfig struct {
	CheckpointEvery    int           `yaml:"checkpoint_every"`
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	Witness            string        `yaml:"witness"`
	MaxInputBytes      int           `yaml:"max_input_bytes"`
	Mask               MaskConfig    `yaml:"mask"`
}

// MaskConfig is `audit.mask`: patterns added to audit's defaults. The file can only
// widen masking, so a mistake in it never lets a secret through that the defaults catch.
type MaskConfig struct {
	Names         []string `yaml:"names"`
	Flags         []string `yaml:"flags"`
	ValuePrefixes []string `yaml:"value_prefixes"`
}

// ServerConfig is the `server:` section: the HTTP front's limits.
type ServerConfig struct {
	BodyLimit         int64         `yaml:"body_limit"`
	ShutdownGrace     time.Duration `yaml:"shutdown_grace"`
	RequestTimeout    time.Duration `yaml:"request_timeout"`
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `yaml:"read_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	AuthFailureRate   float64       `yaml:"auth_failure_rate"`
	AuthFailureBurst  int           `yaml:"auth_failure_burst"`
	GCPercent         int           `yaml:"gc_percent"`
}

// setGCPercent gives this process, which runs a gateway (serve, mcp), the GC target of
// the configuration unless GOGC sets one.
func (m *Main) setGCPercent(cfg Config) {
	if m.Getenv("GOGC") == "" {
		debug.SetGCPercent(cfg.Server.gcPercent())
	}
}

func (s ServerConfig) gcPercent() int {
	if s.GCPercent == 0 {
		return gateway.DefaultGCPercent
	}
	return s.GCPercent
}

// configPath is the configuration file to read: the flag, else $CMDGATE_CONFIG, else
// none ("").
func (m *Main) configPath(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return m.Getenv("CMDGATE_CONFIG")
}

// loadConfig reads and validates the configuration file; "" gives the defaults.
func loadConfig(path string) (Config, error) {
	var cfg Config
	if path == "" {
		return cfg, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read configuration %s: %w", path, err)
	}
	if err := decodeConfig(raw, &cfg); err != nil {
		return Config{}, fmt.Errorf("configuration %s: %w", path, err)
	}
	return cfg, nil
}

// decodeConfig decodes one YAML document strictly (unknown keys are errors) and
// validates it. An empty document is the defaults.
func decodeConfig(raw []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document")
	}
	return cfg.validate()
}

// validate checks what the parts' own validation (at start-up) does not see.
func (c Config) validate() error {
	var errs []error
	if c.Policy.MaxScriptBytes < 0 {
		errs = append(errs, fmt.Errorf("policy.max_script_bytes %d is negative", c.Policy.MaxScriptBytes))
	}
	if c.Policy.DecisionCache < -1 {
		errs = append(errs, fmt.Errorf("policy.decision_cache %d: want -1 (off), 0 (the default) or more", c.Policy.DecisionCache))
	}
	if g := c.Server.GCPercent; g != 0 && (g < 10 || g > 10000) {
		errs = append(errs, fmt.Errorf("server.gc_percent %d: want 10 to 10000", g))
	}
	if c.Policy.ReloadDebounce < 0 {
		errs = append(errs, fmt.Errorf("policy.reload_debounce %v is negative", c.Policy.ReloadDebounce))
	}
	if err := c.Policy.Config.Validate(); err != nil {
		errs = append(errs, err) // a *policies.ConfigError names its key: policy.…
	}
	if err := c.Linux.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Sandbox.CachesDir != "" && !filepath.IsAbs(c.Sandbox.CachesDir) {
		errs = append(errs, fmt.Errorf("sandbox.caches_dir %q is not an absolute path", c.Sandbox.CachesDir))
	}
	if err := c.executor().Check(); err != nil {
		errs = append(errs, fmt.Errorf("exec: %w", err))
	}
	if c.Jobs.MaxPerPrincipal < 0 || c.Jobs.RetentionDays < 0 || c.Jobs.MaxRunTime < 0 || c.Jobs.LogCap < 0 {
		errs = append(errs, errors.New("jobs: max_per_principal, retention_days, max_run_time and log_cap must not be negative"))
	}
	if _, err := c.Tasks.options(nil); err != nil {
		errs = append(errs, err)
	}
	if c.Tasks.MaxPerPrincipal < 0 || c.Tasks.Clone.Depth < 0 || c.Tasks.Execution.TimeoutSeconds < 0 || c.Tasks.Execution.MaxOutputSize < 0 ||
		c.Tasks.Cleanup.IntervalHours < 0 || c.Tasks.Cleanup.StaleThresholdHours < 0 || c.Tasks.Docker.OperationTimeout < 0 ||
		c.Tasks.Docker.Resources.CPULimit < 0 || c.Tasks.Docker.Resources.PidsLimit < 0 {
		errs = append(errs, errors.New("tasks: limits, depths, timeouts and intervals must not be negative"))
	}
	if _, err := executor.ParseKeep(c.Output.Keep); err != nil {
		errs = append(errs, fmt.Errorf("output.keep: %w", err))
	}
	if c.Output.MaxBytes < -1 || c.Output.Retention < 0 {
		errs = append(errs, errors.New("output: max_bytes must be -1 (keep nothing), 0 (the default) or more, and retention must not be negative"))
	}
	if c.Audit.Witness != "" && !filepath.IsAbs(c.Audit.Witness) {
		errs = append(errs, fmt.Errorf("audit.witness %q is not an absolute path", c.Audit.Witness))
	}
	if _, err := audit.NewMasker(c.Audit.options().Mask); err != nil {
		errs = append(errs, fmt.Errorf("audit.mask: %w", err))
	}
	return errors.Join(errs...)
}

// executor is the executor's configuration: the exec section and the env section.
func (c Config) executor() executor.Config {
	ec := c.Exec.executor()
	ec.EnvMode, ec.EnvPass, ec.EnvSet = c.Env.Mode, c.Env.Pass, c.Env.Set
	return ec
}

// executor maps the section onto the executor's configuration.
func (e ExecConfig) executor() executor.Config {
	return executor.Config{
		DefaultTimeout:     e.DefaultTimeout,
		MaxTimeout:         e.MaxTimeout,
		DefaultOutputChars: e.DefaultOutputChars,
		MaxOutputChars:     e.MaxOutputChars,
		KillGrace:          e.KillGrace,
		EnvDeny:            e.EnvDeny,
		Resources: executor.Resources{
			CoreDumps: e.Limits.CoreDumps,
			FileSize:  e.Limits.FileSize,
			OpenFiles: e.Limits.OpenFiles,
			Processes: e.Limits.Processes,
		},
	}
}

// options maps the section onto the audit store's options; mask patterns are added to
// the defaults.
func (a AuditConfig) options() audit.Options {
	var mask audit.MaskOptions
	if len(a.Mask.Names) > 0 {
		mask.Names = append(audit.DefaultSecretNames(), a.Mask.Names...)
	}
	if len(a.Mask.Flags) > 0 {
		mask.Flags = append(audit.DefaultSecretFlags(), a.Mask.Flags...)
	}
	if len(a.Mask.ValuePrefixes) > 0 {
		mask.ValuePrefixes = append(audit.DefaultValuePrefixes(), a.Mask.ValuePrefixes...)
	}
	return audit.Options{CheckpointEvery: a.CheckpointEvery, CheckpointInterval: a.CheckpointInterval,
		Witness: a.Witness, MaxInputBytes: a.MaxInputBytes, Mask: mask}
}

// apply copies the file's gateway settings into opts (before the environment and the
// flags, which override them).
func (c Config) apply(opts *gateway.Options) {
	opts.Listen = c.Listen
	opts.Workspace = c.Workspace
	opts.Sandbox = c.Sandbox.Backend
	opts.NoCaches = !c.Sandbox.cachesOn()
	opts.CachesDir = c.Sandbox.CachesDir
	opts.Linux = c.Linux.options()
	opts.PolicyDir = c.Policy.Dir
	opts.Policy = c.Policy.Config
	opts.Profile = c.Policy.Profile
	opts.MaxScriptBytes = c.Policy.MaxScriptBytes
	opts.DecisionCache = c.Policy.DecisionCache
	opts.NoWatch = c.Policy.Watch != nil && !*c.Policy.Watch
	opts.ReloadDebounce = c.Policy.ReloadDebounce
	opts.Executor = c.executor()
	opts.Audit = c.Audit.options()
	opts.Approvals = gateway.ApprovalOptions{Disabled: c.Approvals.Enabled != nil && !*c.Approvals.Enabled,
		Expiry: c.Approvals.Expiry, Wait: c.Approvals.Wait,
		OnceOnly:    c.Approvals.PersistentGrants != nil && !*c.Approvals.PersistentGrants,
		GrantExpiry: c.Approvals.GrantExpiry, MaxGrantExpiry: c.Approvals.MaxGrantExpiry}
	opts.Jobs = gateway.JobOptions{Disabled: c.Jobs.Enabled != nil && !*c.Jobs.Enabled, Root: c.Jobs.Root,
		MaxPerPrincipal: c.Jobs.MaxPerPrincipal, Retention: time.Duration(c.Jobs.RetentionDays) * 24 * time.Hour,
		MaxRunTime: c.Jobs.MaxRunTime, LogCap: c.Jobs.LogCap}
	opts.Output = c.Output.options()
	opts.Readonly = gateway.ReadonlyOptions{Allow: c.Readonly.Allow}
	opts.BodyLimit = c.Server.BodyLimit
	opts.ShutdownGrace = c.Server.ShutdownGrace
	opts.RequestTimeout = c.Server.RequestTimeout
	opts.ReadHeaderTimeout = c.Server.ReadHeaderTimeout
	opts.ReadTimeout = c.Server.ReadTimeout
	opts.WriteTimeout = c.Server.WriteTimeout
	opts.IdleTimeout = c.Server.IdleTimeout
	opts.AuthFailureRate = c.Server.AuthFailureRate
	opts.AuthFailureBurst = c.Server.AuthFailureBurst
}
