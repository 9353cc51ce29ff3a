package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a command (exec_command's). The minimums are fixed; the maximums are Config's defaults.
const (
	MinTimeout         = time.Millisecond
	DefaultTimeout     = 30 * time.Second
	DefaultMaxTimeout  = 120 * time.Second
	MinOutputChars     = 1000
	DefaultOutputChars = 200_000
	DefaultMaxOutput   = 1_000_000
)

// Defaults of the stopping behaviour.
const (
	// DefaultKillGrace is how long a tree gets between SIGTERM and SIGKILL.
	DefaultKillGrace = 2 * time.Second
	// DefaultWaitDelay bounds the wait for output and for the last processes once the
	// command's tree has been killed.
	DefaultWaitDelay = time.Second
)

// Config is the server-side configuration every backend shares. The zero value is the
// seed defaults: timeout 30 s (at most 120 s), 200 000 characters per stream (at most
// 1 000 000), DefaultEnvDeny, the default Resources, a 2 s kill grace. A Config is
// read-only once a backend uses it.
type Config struct {
	// DefaultTimeout applies when a Spec has none; 0 means 30 s, or MaxTimeout if that
	// is smaller.
	DefaultTimeout time.Duration
	// MaxTimeout is the largest timeout a Spec may ask; 0 means 120 s. 30-minute
	// builds need 30 * time.Minute here.
	MaxTimeout time.Duration
	// DefaultOutputChars applies when a Spec has no MaxOutputChars; 0 means 200 000, or
	// MaxOutputChars if that is smaller.
	DefaultOutputChars int
	// MaxOutputChars is the largest per-stream cap a Spec may ask; 0 means 1 000 000.
	MaxOutputChars int
	// KillGrace is the time between SIGTERM and SIGKILL when a tree is stopped; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration
	// WaitDelay bounds how long a run waits, after its tree was killed, for the output
	// pipes to close and the last processes to exit; 0 means DefaultWaitDelay.
	WaitDelay time.Duration
	// EnvDeny lists more patterns of environment variables that must never reach a
	// command, added to DefaultEnvDeny (see FilterEnv for the pattern syntax).
	EnvDeny []string
	// EnvMode is EnvAllowlist ("" too: commands get EnvBase of the gateway's
	// environment only) or EnvInherit (the gateway's environment without what looks
	// like a credential); see Environ.
	EnvMode string
	// EnvPass names more of the gateway's variables passed to commands (names or
	// FilterEnv patterns); in the inherit mode it also lets credential-like ones through.
	EnvPass []string
	// EnvSet are variables set for every command; they win over everything else.
	EnvSet map[string]string
	// Caches is the workspace's tool cache area; the zero value has none (every command
	// then starts with empty caches and a HOME of its own).
	Caches Caches
	// Resources are the default limits for Spec.Resources fields left zero.
	Resources Resources
}

func (c Config) maxTimeout() time.Duration {
	if c.MaxTimeout == 0 {
		return DefaultMaxTimeout
	}
	return c.MaxTimeout
}

func (c Config) defaultTimeout() time.Duration {
	if c.DefaultTimeout == 0 {
		return min(DefaultTimeout, c.maxTimeout())
	}
	return c.DefaultTimeout
}

func (c Config) maxOutput() int {
	if c.MaxOutputChars == 0 {
		return DefaultMaxOutput
	}
	return c.MaxOutputChars
}

func (c Config) defaultOutput() int {
	if c.DefaultOutputChars == 0 {
		return min(DefaultOutputChars, c.maxOutput())
	}
	return c.DefaultOutputChars
}

// Grace is the effective KillGrace.
func (c Config) Grace() time.Duration {
	if c.KillGrace == 0 {
		return DefaultKillGrace
	}
	return c.KillGrace
}

// Delay is the effective WaitDelay.
func (c Config) Delay() time.Duration {
	if c.WaitDelay == 0 {
		return DefaultWaitDelay
	}
	return c.WaitDelay
}

// Check reports a configuration that cannot work: a bound below the seed minimum, a
// default above its maximum, a negative duration, a malformed EnvDeny pattern or an
// out-of-range resource limit. The gateway calls it at start-up; every Run calls it too
// and refuses to run on error (INTERNAL).
func (c Config) Check() error {
	var errs []error
	if c.MaxTimeout != 0 && c.MaxTimeout < MinTimeout {
		errs = append(errs, fmt.Errorf("max timeout %v is below %v", c.MaxTimeout, MinTimeout))
	}
	if c.DefaultTimeout != 0 && (c.DefaultTimeout < MinTimeout || c.DefaultTimeout > c.maxTimeout()) {
		errs = append(errs, fmt.Errorf("default timeout %v is outside %v..%v", c.DefaultTimeout, MinTimeout, c.maxTimeout()))
	}
	if c.MaxOutputChars != 0 && c.MaxOutputChars < MinOutputChars {
		errs = append(errs, fmt.Errorf("max output chars %d is below %d", c.MaxOutputChars, MinOutputChars))
	}
	if c.DefaultOutputChars != 0 && (c.DefaultOutputChars < MinOutputChars || c.DefaultOutputChars > c.maxOutput()) {
		errs = append(errs, fmt.Errorf("default output chars %d is outside %d..%d", c.DefaultOutputChars, MinOutputChars, c.maxOutput()))
	}
	if c.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("kill grace %v is negative", c.KillGrace))
	}
	if c.WaitDelay < 0 {
		errs = append(errs, fmt.Errorf("wait delay %v is negative", c.WaitDelay))
	}
	if err := checkPatterns(c.EnvDeny); err != nil {
		errs = append(errs, err)
	}
	if err := c.checkEnv(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Resources.check(); err != nil {
		errs = append(errs, fmt.Errorf("resources: %w", err))
	}
	return errors.Join(errs...)
}

// TimeoutMS turns exec_command's optional `timeout_ms` into a Spec.Timeout: nil takes the
// default; a present value must lie in 1..MaxTimeout (in milliseconds), so an explicit 0
// is INVALID_ARGUMENT.
func (c Config) TimeoutMS(ms *int64) (time.Duration, error) {
	if ms == nil {
		return c.defaultTimeout(), nil
	}
	maxMS := c.maxTimeout().Milliseconds()
	if *ms < 1 || *ms > maxMS {
		return 0, invalidf("timeout_ms must be between 1 and %d, got %d", maxMS, *ms)
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// OutputChars turns exec_command's optional `max_output_chars` into a Spec.MaxOutputChars:
// nil takes the default; a present value must lie in 1000..MaxOutputChars.
func (c Config) OutputChars(n *int64) (int, error) {
	if n == nil {
		return c.defaultOutput(), nil
	}
	if *n < MinOutputChars || *n > int64(c.maxOutput()) {
		return 0, invalidf("max_output_chars must be between %d and %d, got %d", MinOutputChars, c.maxOutput(), *n)
	}
	return int(*n), nil
}

// Prepare validates spec and returns it with the defaults filled in and Dir cleaned. It
// checks only the spec itself (no file system access: a backend's directory may live in
// a container); see CheckDir. Errors are *Error with CodeInvalidArgument, or
// CodeInternal when the Config itself is invalid.
//
// Rejected: no command or both Argv and Script; an unknown ShellMode; ShellDirect with a
// Script; an empty Argv[0]; a NUL byte or invalid UTF-8 in Argv, Script, Dir or Stdin
// (what the policy saw as text must be what runs); an empty or relative Dir; a timeout
// or output cap out of range; a resource limit below Inherit.
func (c Config) Prepare(spec Spec) (Spec, error) {
	if err := c.Check(); err != nil {
		return Spec{}, Internal("invalid executor configuration", err)
	}
	switch spec.ShellMode {
	case "":
		spec.ShellMode = ShellDefault
	case ShellDefault, ShellDirect:
	default:
		return Spec{}, invalidf("shell_mode must be %q or %q, got %q", ShellDefault, ShellDirect, spec.ShellMode)
	}
	switch {
	case len(spec.Argv) == 0 && spec.Script == "":
		return Spec{}, invalidf("command is empty")
	case len(spec.Argv) > 0 && spec.Script != "":
		return Spec{}, invalidf("command must be an argv or a script, not both")
	case spec.Script != "" && spec.ShellMode == ShellDirect:
		return Spec{}, invalidf("shell_mode %q needs an argv, not a script", ShellDirect)
	case len(spec.Argv) > 0 && spec.Argv[0] == "":
		return Spec{}, invalidf("command name (argv[0]) is empty")
	}
	for i, a := range spec.Argv {
		if err := checkText(a); err != nil {
			return Spec{}, invalidf("command[%d] %s", i, err)
		}
	}
	if err := checkText(spec.Script); err != nil {
		return Spec{}, invalidf("command %s", err)
	}
	if !utf8.ValidString(spec.Stdin) {
		return Spec{}, invalidf("stdin is not valid UTF-8")
	}

	if spec.Dir == "" {
		return Spec{}, invalidf("cwd is empty")
	}
	if err := checkText(spec.Dir); err != nil {
		return Spec{}, invalidf("cwd %s", err)
	}
	if !filepath.IsAbs(spec.Dir) {
		return Spec{}, invalidf("cwd %q is not an absolute path", spec.Dir)
	}
	spec.Dir = filepath.Clean(spec.Dir)

	switch {
	case spec.Timeout == 0:
		spec.Timeout = c.defaultTimeout()
	case spec.Timeout < MinTimeout || spec.Timeout > c.maxTimeout():
		return Spec{}, invalidf("timeout must be between %v and %v, got %v", MinTimeout, c.maxTimeout(), spec.Timeout)
	}
	switch {
	case spec.MaxOutputChars == 0:
		spec.MaxOutputChars = c.defaultOutput()
	case spec.MaxOutputChars < MinOutputChars || spec.MaxOutputChars > c.maxOutput():
		return Spec{}, invalidf("max_output_chars must be between %d and %d, got %d", MinOutputChars, c.maxOutput(), spec.MaxOutputChars)
	}

	if _, err := ParseKeep(string(spec.Keep)); err != nil {
		return Spec{}, invalidf("%s", err)
	}
	if err := spec.Resources.check(); err != nil {
		return Spec{}, invalidf("resources: %s", err)
	}
	spec.Resources = spec.Resources.withDefaults(c.Resources)
	return spec, nil
}

// checkText rejects what cannot reach a process intact: a NUL byte (execve would cut the
// string there) or invalid UTF-8 (the policy saw it as replacement characters).
func checkText(s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("contains a NUL byte at offset %d", i)
	}
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	return nil
}

// CheckDir verifies that dir exists and is a directory (following symbolic links), as
// NOT_DIRECTORY otherwise. Backends that run on the host call it before starting.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &Error{Code: CodeNotDirectory, Message: fmt.Sprintf("cwd %q does not exist", dir), Err: err}
	case err != nil:
		return &Error{Code: CodeNotDirectory, Message: fmt.Sprintf("cwd %q is not accessible", dir), Err: err}
	case !fi.IsDir():
		return &Error{Code: CodeNotDirectory, Message: fmt.Sprintf("cwd %q is not a directory", dir)}
	}
	return nil
}

func (r Resources) check() error {
	for _, l := range []struct {
		name string
		v    int64
	}{{"file_size", r.FileSize}, {"open_files", r.OpenFiles}, {"processes", r.Processes}} {
		if l.v < Inherit {
			return fmt.Errorf("%s must be positive, 0 (default) or %d (inherit), got %d", l.name, Inherit, l.v)
		}
	}
	return nil
}

// withDefaults fills r's zero fields from def, then from the package defaults.
func (r Resources) withDefaults(def Resources) Resources {
	pick := func(v, d, pkg int64) int64 {
		switch {
		case v != 0:
			return v
		case d != 0:
			return d
		}
		return pkg
	}
	return Resources{
		CoreDumps: r.CoreDumps || def.CoreDumps,
		FileSize:  pick(r.FileSize, def.FileSize, DefaultFileSize),
		OpenFiles: pick(r.OpenFiles, def.OpenFiles, DefaultOpenFiles),
		Processes: pick(r.Processes, def.Processes, DefaultProcesses),
	}
}

// Rlimit is one resource limit to apply: both soft and hard value set to Value.
type Rlimit struct {
	Resource RlimitResource
	Value    uint64
}

// RlimitResource names a limit portably; backends map it to the platform's constant.
type RlimitResource int

const (
	RlimitCore RlimitResource = iota
	RlimitFileSize
	RlimitOpenFiles
	RlimitProcesses
)

// Rlimits lists the limits r asks for, leaving out those set to Inherit. r should come
// from Prepare (defaults filled in).
func (r Resources) Rlimits() []Rlimit {
	var out []Rlimit
	if !r.CoreDumps {
		out = append(out, Rlimit{RlimitCore, 0})
	}
	for _, l := range []struct {
		res RlimitResource
		v   int64
	}{{RlimitFileSize, r.FileSize}, {RlimitOpenFiles, r.OpenFiles}, {RlimitProcesses, r.Processes}} {
		if l.v > 0 {
			out = append(out, Rlimit{l.res, uint64(l.v)})
		}
	}
	return out
}
