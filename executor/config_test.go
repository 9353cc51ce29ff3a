package executor_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/google/go-cmp/cmp"
)

// abs is an absolute directory on any platform (never touched: Prepare does no I/O).
var abs = func() string {
	d, err := filepath.Abs(filepath.Join(string(filepath.Separator), "srv", "ws"))
	if err != nil {
		panic(err)
	}
	return d
}()

var defaultResources = executor.Resources{
	FileSize:  executor.DefaultFileSize,
	OpenFiles: executor.DefaultOpenFiles,
	Processes: executor.Inherit,
}

func TestPrepare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  executor.Config
		spec executor.Spec
		want executor.Spec
	}{
		{
			name: "defaults filled in",
			spec: executor.Spec{Argv: []string{"echo", "hello"}, Dir: abs},
			want: executor.Spec{Argv: []string{"echo", "hello"}, Dir: abs, ShellMode: executor.ShellDefault,
				Timeout: 30 * time.Second, MaxOutputChars: 200_000, Resources: defaultResources},
		},
		{
			name: "explicit values kept, dir cleaned",
			spec: executor.Spec{Script: "make", Dir: abs + string(filepath.Separator) + "x" + string(filepath.Separator) + "..",
				ShellMode: executor.ShellDefault, Stdin: "é\x00", Timeout: time.Millisecond, MaxOutputChars: 1000, Network: true,
				Resources: executor.Resources{CoreDumps: true, FileSize: 10, OpenFiles: executor.Inherit, Processes: 50}},
			want: executor.Spec{Script: "make", Dir: abs, ShellMode: executor.ShellDefault, Stdin: "é\x00",
				Timeout: time.Millisecond, MaxOutputChars: 1000, Network: true,
				Resources: executor.Resources{CoreDumps: true, FileSize: 10, OpenFiles: executor.Inherit, Processes: 50}},
		},
		{
			name: "maximums",
			spec: executor.Spec{Argv: []string{"x"}, ShellMode: executor.ShellDirect, Dir: abs, Timeout: 120 * time.Second, MaxOutputChars: 1_000_000},
			want: executor.Spec{Argv: []string{"x"}, ShellMode: executor.ShellDirect, Dir: abs, Timeout: 120 * time.Second,
				MaxOutputChars: 1_000_000, Resources: defaultResources},
		},
		{
			name: "empty later arguments are valid",
			spec: executor.Spec{Argv: []string{"printf", ""}, Dir: abs},
			want: executor.Spec{Argv: []string{"printf", ""}, Dir: abs, ShellMode: executor.ShellDefault,
				Timeout: 30 * time.Second, MaxOutputChars: 200_000, Resources: defaultResources},
		},
		{
			name: "configured bounds and resources",
			cfg: executor.Config{MaxTimeout: 30 * time.Minute, DefaultTimeout: time.Minute, MaxOutputChars: 2_000_000,
				Resources: executor.Resources{CoreDumps: true, OpenFiles: 100}},
			spec: executor.Spec{Argv: []string{"make"}, Dir: abs, Timeout: 25 * time.Minute, MaxOutputChars: 1_500_000,
				Resources: executor.Resources{OpenFiles: 200}},
			want: executor.Spec{Argv: []string{"make"}, Dir: abs, ShellMode: executor.ShellDefault, Timeout: 25 * time.Minute,
				MaxOutputChars: 1_500_000, Resources: executor.Resources{CoreDumps: true, FileSize: executor.DefaultFileSize,
					OpenFiles: 200, Processes: executor.Inherit}},
		},
		{
			name: "defaults clamp to smaller maximums",
			cfg:  executor.Config{MaxTimeout: 5 * time.Second, MaxOutputChars: 5000},
			spec: executor.Spec{Argv: []string{"x"}, Dir: abs},
			want: executor.Spec{Argv: []string{"x"}, Dir: abs, ShellMode: executor.ShellDefault, Timeout: 5 * time.Second,
				MaxOutputChars: 5000, Resources: defaultResources},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.cfg.Prepare(tt.spec)
			if err != nil {
				t.Fatalf("Prepare(%+v) error = %v", tt.spec, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Prepare(%+v) mismatch (-want +got):\n%s", tt.spec, diff)
			}
		})
	}
}

func TestPrepareInvalid(t *testing.T) {
	t.Parallel()
	ok := executor.Spec{Argv: []string{"echo"}, Dir: abs}
	with := func(f func(*executor.Spec)) executor.Spec {
		s := ok
		f(&s)
		return s
	}
	tests := []struct {
		name string
		spec executor.Spec
		want string // in the message
	}{
		{"no command", with(func(s *executor.Spec) { s.Argv = nil }), "command is empty"},
		{"empty argv", with(func(s *executor.Spec) { s.Argv = []string{} }), "command is empty"},
		{"argv and script", with(func(s *executor.Spec) { s.Script = "ls" }), "not both"},
		{"empty command name", with(func(s *executor.Spec) { s.Argv = []string{"", "x"} }), "argv[0]"},
		{"direct with script", executor.Spec{Script: "ls", ShellMode: executor.ShellDirect, Dir: abs}, "needs an argv"},
		{"unknown shell mode", with(func(s *executor.Spec) { s.ShellMode = "login" }), "shell_mode"},
		{"NUL in argv", with(func(s *executor.Spec) { s.Argv = []string{"echo", "a\x00b"} }), "command[1] contains a NUL byte"},
		{"NUL in script", executor.Spec{Script: "echo a\x00; rm -rf /", Dir: abs}, "NUL byte"},
		{"invalid UTF-8 in argv", with(func(s *executor.Spec) { s.Argv = []string{"echo\xff"} }), "command[0] is not valid UTF-8"},
		{"invalid UTF-8 in script", executor.Spec{Script: "echo \xc0", Dir: abs}, "not valid UTF-8"},
		{"invalid UTF-8 in stdin", with(func(s *executor.Spec) { s.Stdin = "\xff" }), "stdin"},
		{"empty cwd", with(func(s *executor.Spec) { s.Dir = "" }), "cwd is empty"},
		{"relative cwd", with(func(s *executor.Spec) { s.Dir = "ws" }), "not an absolute path"},
		{"NUL in cwd", with(func(s *executor.Spec) { s.Dir = abs + "\x00" }), "NUL"},
		{"invalid UTF-8 in cwd", with(func(s *executor.Spec) { s.Dir = abs + "\xff" }), "cwd"},
		{"unknown keep", with(func(s *executor.Spec) { s.Keep = "middle" }), "unknown output keep \"middle\""},
		{"negative timeout", with(func(s *executor.Spec) { s.Timeout = -time.Second }), "timeout"},
		{"timeout below 1 ms", with(func(s *executor.Spec) { s.Timeout = time.Microsecond }), "timeout"},
		{"timeout above the maximum", with(func(s *executor.Spec) { s.Timeout = 120*time.Second + 1 }), "timeout"},
		{"output cap below 1000", with(func(s *executor.Spec) { s.MaxOutputChars = 999 }), "max_output_chars"},
		{"negative output cap", with(func(s *executor.Spec) { s.MaxOutputChars = -1 }), "max_output_chars"},
		{"output cap above the maximum", with(func(s *executor.Spec) { s.MaxOutputChars = 1_000_001 }), "max_output_chars"},
		{"resource below inherit", with(func(s *executor.Spec) { s.Resources.OpenFiles = -2 }), "open_files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := executor.Config{}.Prepare(tt.spec)
			if !errors.Is(err, executor.ErrInvalidArgument) {
				t.Fatalf("Prepare(%+v) error = %v, want INVALID_ARGUMENT", tt.spec, err)
			}
			var e *executor.Error
			if !errors.As(err, &e) || !strings.Contains(e.Message, tt.want) {
				t.Errorf("Prepare(%+v) error = %v, want a message with %q", tt.spec, err, tt.want)
			}
		})
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	valid := []executor.Config{
		{},
		{MaxTimeout: 30 * time.Minute, DefaultTimeout: 10 * time.Minute, MaxOutputChars: 1000, DefaultOutputChars: 1000},
		{EnvDeny: []string{"AWS_*", "GITHUB_TOKEN"}, KillGrace: time.Millisecond},
	}
	for _, c := range valid {
		if err := c.Check(); err != nil {
			t.Errorf("%+v.Check() = %v, want nil", c, err)
		}
	}
	invalid := []executor.Config{
		{MaxTimeout: time.Microsecond},
		{DefaultTimeout: 121 * time.Second},
		{MaxTimeout: time.Second, DefaultTimeout: 2 * time.Second},
		{MaxOutputChars: 999},
		{DefaultOutputChars: 2_000_000},
		{KillGrace: -1},
		{WaitDelay: -1},
		{EnvDeny: []string{"AWS_["}},
		{EnvDeny: []string{""}},
		{Resources: executor.Resources{FileSize: -5}},
	}
	spec := executor.Spec{Argv: []string{"echo"}, Dir: abs}
	for _, c := range invalid {
		if err := c.Check(); err == nil {
			t.Errorf("%+v.Check() = nil, want an error", c)
		}
		if _, err := c.Prepare(spec); !errors.Is(err, executor.ErrInternal) {
			t.Errorf("%+v.Prepare() error = %v, want INTERNAL", c, err)
		}
	}
}

func TestWireLimits(t *testing.T) {
	t.Parallel()
	p := func(v int64) *int64 { return &v }
	cfg := executor.Config{}
	timeouts := []struct {
		in      *int64
		want    time.Duration
		invalid bool
	}{
		{nil, 30 * time.Second, false},
		{p(1), time.Millisecond, false},
		{p(120_000), 120 * time.Second, false},
		{p(0), 0, true},
		{p(-1), 0, true},
		{p(120_001), 0, true},
		{p(1 << 62), 0, true}, // would overflow a Duration
	}
	for _, tt := range timeouts {
		got, err := cfg.TimeoutMS(tt.in)
		if tt.invalid != errors.Is(err, executor.ErrInvalidArgument) || got != tt.want {
			t.Errorf("TimeoutMS(%v) = %v, %v; want %v, invalid %v", deref(tt.in), got, err, tt.want, tt.invalid)
		}
	}
	outputs := []struct {
		in      *int64
		want    int
		invalid bool
	}{
		{nil, 200_000, false},
		{p(1000), 1000, false},
		{p(1_000_000), 1_000_000, false},
		{p(0), 0, true},
		{p(999), 0, true},
		{p(1_000_001), 0, true},
	}
	for _, tt := range outputs {
		got, err := cfg.OutputChars(tt.in)
		if tt.invalid != errors.Is(err, executor.ErrInvalidArgument) || got != tt.want {
			t.Errorf("OutputChars(%v) = %v, %v; want %v, invalid %v", deref(tt.in), got, err, tt.want, tt.invalid)
		}
	}
	long := executor.Config{MaxTimeout: 30 * time.Minute}
	if got, err := long.TimeoutMS(p(1_800_000)); err != nil || got != 30*time.Minute {
		t.Errorf("TimeoutMS(1800000) with a 30 min maximum = %v, %v; want 30m, nil", got, err)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestCheckDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	linkToDir := filepath.Join(dir, "link-dir")
	linkToFile := filepath.Join(dir, "link-file")
	dangling := filepath.Join(dir, "dangling")
	symlinks := true
	for link, target := range map[string]string{linkToDir: dir, linkToFile: file, dangling: filepath.Join(dir, "none")} {
		if err := os.Symlink(target, link); err != nil {
			symlinks = false // Windows without the privilege
		}
	}
	tests := []struct {
		dir   string
		valid bool
	}{
		{dir, true},
		{filepath.Join(dir, "missing"), false},
		{file, false},
		{filepath.Join(file, "sub"), false},
	}
	if symlinks {
		tests = append(tests, []struct {
			dir   string
			valid bool
		}{{linkToDir, true}, {linkToFile, false}, {dangling, false}}...)
	}
	for _, tt := range tests {
		err := executor.CheckDir(tt.dir)
		if tt.valid && err != nil || !tt.valid && !errors.Is(err, executor.ErrNotDirectory) {
			t.Errorf("CheckDir(%q) = %v, want valid %v (else NOT_DIRECTORY)", tt.dir, err, tt.valid)
		}
		if err != nil && !strings.Contains(err.Error(), tt.dir) {
			t.Errorf("CheckDir(%q) = %v, want the directory named", tt.dir, err)
		}
	}
}

func TestRlimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		res  executor.Resources
		want []executor.Rlimit
	}{
		{defaultResources, []executor.Rlimit{
			{Resource: executor.RlimitCore, Value: 0},
			{Resource: executor.RlimitFileSize, Value: 8 << 30},
			{Resource: executor.RlimitOpenFiles, Value: 8192},
		}},
		{executor.Resources{CoreDumps: true, FileSize: executor.Inherit, OpenFiles: executor.Inherit, Processes: 10},
			[]executor.Rlimit{{Resource: executor.RlimitProcesses, Value: 10}}},
		{executor.Resources{CoreDumps: true, FileSize: executor.Inherit, OpenFiles: executor.Inherit, Processes: executor.Inherit}, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.res.Rlimits()); diff != "" {
			t.Errorf("%+v.Rlimits() mismatch (-want +got):\n%s", tt.res, diff)
		}
	}
}
