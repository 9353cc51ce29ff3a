package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/gateway"
)

// fullConfig sets every key of the configuration file.
const fullConfig = `
listen: 127.0.0.1:9001
workspace: /srv/ws
data: /srv/data
sandbox: {backend: process, caches: false, caches_dir: /srv/caches}
env:
  mode: inherit
  pass: [GOPROXY, "GONO*"]
  set: {GOFLAGS: -mod=mod}
log: {format: json, level: debug}
policy:
  dir: /srv/policy
  watch: false
  reload_debounce: 1s
  profile: readonly
  max_script_bytes: 4096
  decision_cache: 50
  allowed_commands:
    use_default: false
    custom_list: [go, git status]
    exclude: [git status]
  unknown_command: ask
  dynamic_command: ask
exec:
  default_timeout: 1m
  max_timeout: 30m
  default_output_chars: 5000
  max_output_chars: 50000
  kill_grace: 3s
  env_deny: ["AWS_*"]
  limits: {core_dumps: true, file_size: 1048576, open_files: 256, processes: 100}
audit:
  checkpoint_every: 10
  max_input_bytes: 2048
  mask: {names: ["*_DSN"], flags: ["psql:-W"], value_prefixes: ["acme_"]}
server:
  body_limit: 4096
  shutdown_grace: 1m
  request_timeout: 5s
  read_header_timeout: 2s
  read_timeout: 3s
  write_timeout: 31m
  idle_timeout: 4s
  auth_failure_rate: 0.5
  auth_failure_burst: 3
  gc_percent: 150
output: {keep: head_tail, max_bytes: 1048576, retention: 2h}
readonly: {allow: [docs/, /srv/notes.txt]}
approvals:
  enabled: false
  expiry: 2m
  wait: 30s
  persistent_grants: false
  grant_expiry: 1h
  max_grant_expiry: 2h
jobs:
  enabled: true
  root: /srv/jobs
  max_per_principal: 3
  retention_days: 2
  max_run_time: 1h
  log_cap: 1048576
tasks:
  enabled: true
  max_per_principal: 2
  docker:
    base_image: example/agent:1
    guard_image: example/guard:1
    operation_timeout: 30s
    resources: {cpu_limit: 1.5, memory_limit: 2g, disk_limit: 5g, pids_limit: 256}
    network: {external_access: false}
  clone:
    shallow: false
    depth: 5
    auto_install_deps: false
    fail_on_install_error: true
    github_hosts: [github.example.com]
    gitlab_hosts: ["http://git.internal:8080"]
  execution: {timeout_seconds: 600, max_output_size: 100000}
  cleanup: {interval_hours: 6, stale_threshold_hours: 12, on_shutdown: true}
`

func TestServeOptionsFromFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cmdgate.yaml")
	if err := os.WriteFile(path, []byte(fullConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Main{Stderr: os.Stderr, Getenv: func(string) string { return "" }}
	got, cfg, err := m.serveConfig(serveFlags{config: path})
	if err != nil {
		t.Fatalf("serveOptions: %v", err)
	}
	if g := cfg.Server.gcPercent(); g != 150 {
		t.Errorf("server.gc_percent = %d, want 150", g)
	}
	if g := (ServerConfig{}).gcPercent(); g != gateway.DefaultGCPercent {
		t.Errorf("default server.gc_percent = %d, want %d", g, gateway.DefaultGCPercent)
	}
	if got.Logger == nil {
		t.Fatal("no logger")
	}
	got.Logger = nil
	if got.Tasks.Getenv == nil {
		t.Error("the tasks read no environment for the clone tokens")
	}
	got.Tasks.Getenv = nil
	no := false
	want := gateway.Options{
		Listen: "127.0.0.1:9001", Workspace: "/srv/ws", DataDir: "/srv/data", PolicyDir: "/srv/policy",
		Sandbox: "process", NoCaches: true, CachesDir: "/srv/caches", Profile: "readonly", MaxScriptBytes: 4096, DecisionCache: 50, NoWatch: true, ReloadDebounce: time.Second,
		Executor: executor.Config{
			DefaultTimeout: time.Minute, MaxTimeout: 30 * time.Minute, DefaultOutputChars: 5000, MaxOutputChars: 50000,
			KillGrace: 3 * time.Second, EnvDeny: []string{"AWS_*"},
			EnvMode: "inherit", EnvPass: []string{"GOPROXY", "GONO*"}, EnvSet: map[string]string{"GOFLAGS": "-mod=mod"},
			Resources: executor.Resources{CoreDumps: true, FileSize: 1 << 20, OpenFiles: 256, Processes: 100},
		},
		Audit: audit.Options{CheckpointEvery: 10, MaxInputBytes: 2048, Mask: audit.MaskOptions{
			Names:         append(audit.DefaultSecretNames(), "*_DSN"),
			Flags:         append(audit.DefaultSecretFlags(), "psql:-W"),
			ValuePrefixes: append(audit.DefaultValuePrefixes(), "acme_"),
		}},
		BodyLimit: 4096, ShutdownGrace: time.Minute, RequestTimeout: 5 * time.Second, ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout: 3 * time.Second, WriteTimeout: 31 * time.Minute, IdleTimeout: 4 * time.Second,
		AuthFailureRate: 0.5, AuthFailureBurst: 3,
		Output:   gateway.OutputOptions{Keep: executor.KeepHeadTail, MaxBytes: 1 << 20, Retention: 2 * time.Hour},
		Readonly: gateway.ReadonlyOptions{Allow: []string{"docs/", "/srv/notes.txt"}},
		Approvals: gateway.ApprovalOptions{Disabled: true, Expiry: 2 * time.Minute, Wait: 30 * time.Second,
			OnceOnly: true, GrantExpiry: time.Hour, MaxGrantExpiry: 2 * time.Hour},
		Jobs: gateway.JobOptions{Root: "/srv/jobs", Config: path, MaxPerPrincipal: 3, Retention: 48 * time.Hour,
			MaxRunTime: time.Hour, LogCap: 1 << 20},
		Tasks: gateway.TaskOptions{Enabled: true, MaxPerPrincipal: 2, Image: "example/agent:1", GuardImage: "example/guard:1",
			OpTimeout: 30 * time.Second, CPUs: 1.5, Memory: 2 << 30, Disk: 5 << 30, Pids: 256, Network: gateway.TaskNetworkNone,
			Depth: -1, NoAutoInstall: true, FailOnInstallError: true,
			GitHubHosts: []string{"github.example.com"}, GitLabHosts: []string{"http://git.internal:8080"},
			Timeout: 10 * time.Minute, MaxOutput: 100000, CleanupInterval: 6 * time.Hour, StaleAfter: 12 * time.Hour,
			RemoveOnShutdown: true},
	}
	want.Policy.AllowedCommands.UseDefault = &no
	want.Policy.AllowedCommands.CustomList = []string{"go", "git status"}
	want.Policy.AllowedCommands.Exclude = []string{"git status"}
	want.Policy.UnknownCommand = "ask"
	want.Policy.DynamicCommand = "ask"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("serveOptions(file) mismatch (-want +got):\n%s", diff)
	}
}

// Seed 001's variables override the tasks: section; the allowlist mode and sizes that
// are not sizes are refused.
func TestTasksConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"COMMAND_EXECUTOR_ENABLED": "true", "EXECUTOR_BASE_IMAGE": "example/env:2",
		"EXECUTOR_CPU_LIMIT": "3", "EXECUTOR_MEMORY_LIMIT": "512m", "EXECUTOR_TIMEOUT": "90"}
	o, err := TasksConfig{}.options(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !o.Enabled || o.Image != "example/env:2" || o.CPUs != 3 || o.Memory != 512<<20 || o.Timeout != 90*time.Second {
		t.Errorf("from the environment: %+v", o)
	}
	for _, bad := range []string{
		"tasks: {docker: {network: {whitelist_mode: true}}}",
		"tasks: {docker: {network: {allowed_domains: [example.com]}}}",
		"tasks: {docker: {resources: {memory_limit: lots}}}",
		"tasks: {execution: {timeout_seconds: -1}}",
		"tasks: {nonsense: 1}",
	} {
		var cfg Config
		if err := decodeConfig([]byte(bad), &cfg); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	for k, v := range map[string]string{"COMMAND_EXECUTOR_ENABLED": "maybe", "EXECUTOR_CPU_LIMIT": "-1", "EXECUTOR_TIMEOUT": "soon", "EXECUTOR_MEMORY_LIMIT": "big"} {
		if _, err := (TasksConfig{}).options(func(n string) string {
			if n == k {
				return v
			}
			return ""
		}); err == nil {
			t.Errorf("%s=%s: accepted", k, v)
		}
	}
}

// The file is overridden by the CMDGATE_* variables, and both by the flags.
func TestServeOptionsPrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cmdgate.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:1111\nworkspace: /file/ws\ndata: /file/data\nsandbox: process\npolicy: {dir: /file/policy}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"CMDGATE_CONFIG":    path,
		"CMDGATE_LISTEN":    "127.0.0.1:2222",
		"CMDGATE_WORKSPACE": "/env/ws",
		"CMDGATE_DATA":      "/env/data",
		"CMDGATE_POLICY":    "/env/policy",
	}
	m := &Main{Stderr: os.Stderr, Getenv: func(k string) string { return env[k] }}
	for _, tc := range []struct {
		flags                         serveFlags
		listen, ws, data, policy, box string
	}{
		{serveFlags{}, "127.0.0.1:2222", "/env/ws", "/env/data", "/env/policy", "process"},
		{serveFlags{listen: "127.0.0.1:3333", workspace: "/flag/ws", data: "/flag/data", policy: "/flag/policy", sandbox: "auto"},
			"127.0.0.1:3333", "/flag/ws", "/flag/data", "/flag/policy", "auto"},
	} {
		got, err := m.serveOptions(tc.flags)
		if err != nil {
			t.Fatalf("serveOptions(%+v): %v", tc.flags, err)
		}
		if got.Listen != tc.listen || got.Workspace != tc.ws || got.DataDir != tc.data || got.PolicyDir != tc.policy || got.Sandbox != tc.box {
			t.Errorf("serveOptions(%+v) = listen %s, workspace %s, data %s, policy %s, sandbox %s; want %s %s %s %s %s",
				tc.flags, got.Listen, got.Workspace, got.DataDir, got.PolicyDir, got.Sandbox, tc.listen, tc.ws, tc.data, tc.policy, tc.box)
		}
	}
	// Without the variables the file's values apply.
	fileOnly := &Main{Stderr: os.Stderr, Getenv: func(k string) string {
		if k == "CMDGATE_CONFIG" {
			return path
		}
		return ""
	}}
	got, err := fileOnly.serveOptions(serveFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Listen != "127.0.0.1:1111" || got.Workspace != "/file/ws" || got.DataDir != "/file/data" || got.PolicyDir != "/file/policy" {
		t.Errorf("serveOptions(file only) = %s %s %s %s; want the file's values", got.Listen, got.Workspace, got.DataDir, got.PolicyDir)
	}
}

func TestConfigRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"listen: [1, 2]", "cannot unmarshal"},
		{"exec: {max_timeout: forever}", "into time.Duration"},
		{"exec: {max_timeout: 10m, default_timeout: 11m}", "default timeout"},
		{"exec: {max_output_chars: 10}", "max output chars"},
		{"exec: {env_deny: ['[']}", "exec:"},
		{"exec: {limits: {open_files: -7}}", "exec:"},
		{"audit: {mask: {names: ['']}}", "audit.mask"},
		{"audit: {mask: {flags: ['psql:W']}}", "audit.mask"},
		{"audit: {mask: {value_prefixes: ['x']}}", "audit.mask"},
		{"policy: {max_script_bytes: -1}", "policy.max_script_bytes"},
		{"policy: {reload_debounce: -1s}", "policy.reload_debounce"},
		{"server: {gc_percent: 5}", "server.gc_percent"},
		{"output: {keep: middle}", "output.keep"},
		{"output: {max_bytes: -2}", "output: max_bytes"},
		{"output: {retention: -1h}", "output: max_bytes"},
		{"policy: {decision_cache: -2}", "policy.decision_cache"},
		{"server: {gc_percent: -1}", "server.gc_percent"},
		{"policy: {unknown_command: allow}", "policy.unknown_command"},
		{"policy: {dir: x, dri: y}", "field dri not found"},
		{"server: {body_limt: 1}", "field body_limt not found"},
		{"a: 1\n---\nb: 2", "field a not found"},
		{"listen: x\n---\nlisten: y", "more than one YAML document"},
		{"\x00", "control characters"},
		{"sandbox: {backend: linux, cache: true}", "field cache not found in sandbox"},
		{"sandbox: [linux]", "sandbox: want a backend name or a mapping"},
		{"sandbox: {caches: maybe}", "cannot unmarshal"},
		{"sandbox: {caches_dir: relative/dir}", "sandbox.caches_dir"},
		{"audit: {witness: witness.jsonl}", "audit.witness"},
		{"audit: {checkpoint_interval: soon}", "into time.Duration"},
		{"env: {mode: everything}", "exec:"},
		{"env: {set: {BASH_ENV: /tmp/x}}", "exec:"},
		{"env: {pas: [X]}", "field pas not found"},
	} {
		var cfg Config
		err := decodeConfig([]byte(tc.yaml), &cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeConfig(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
	var cfg Config
	if err := decodeConfig([]byte(fullConfig), &cfg); err != nil {
		t.Errorf("decodeConfig(full) = %v", err)
	}
	if err := decodeConfig(nil, &cfg); err != nil {
		t.Errorf("decodeConfig(empty) = %v", err)
	}
}

// approvals.webhook needs an http(s) URL and a secret file of 16 bytes or more.
func TestWebhookConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short"), filepath.Join(dir, "long")
	os.WriteFile(short, []byte("tiny\n"), 0o600)
	os.WriteFile(long, []byte("  0123456789abcdef0123  \n"), 0o600)
	for _, c := range []struct {
		w    WebhookConfig
		want string // "" for success
	}{
		{WebhookConfig{URL: "https://hooks.example/x", SecretFile: long}, ""},
		{WebhookConfig{URL: "https://hooks.example/x"}, "secret_file"},
		{WebhookConfig{URL: "ftp://hooks.example/x", SecretFile: long}, "url"},
		{WebhookConfig{URL: "hooks.example", SecretFile: long}, "url"},
		{WebhookConfig{URL: "http://127.0.0.1:9/x", SecretFile: short}, "16 bytes"},
		{WebhookConfig{URL: "http://127.0.0.1:9/x", SecretFile: filepath.Join(dir, "none")}, "secret_file"},
	} {
		secret, err := c.w.secret()
		switch {
		case c.want == "" && (err != nil || string(secret) != "0123456789abcdef0123"):
			t.Errorf("%+v: %q, %v", c.w, secret, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v; want an error naming %s", c.w, err, c.want)
		}
	}
}

// TestSetGCPercent: serve and mcp run their gateway with server.gc_percent, unless
// GOGC sets the target (the runtime read it at start).
func TestSetGCPercent(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	cfg := Config{Server: ServerConfig{GCPercent: 250}}
	(&Main{Getenv: func(string) string { return "" }}).setGCPercent(cfg)
	if got := debug.SetGCPercent(100); got != 250 {
		t.Errorf("GC target %d after setGCPercent with gc_percent 250, want 250", got)
	}
	(&Main{Getenv: func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	}}).setGCPercent(cfg)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC target %d after setGCPercent with GOGC set, want it left at 100", got)
	}
}
