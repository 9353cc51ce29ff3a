package executor

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// DefaultEnvDeny are the environment variables that never reach a command, whatever the
// configuration adds:
//
//   - CMDGATE_*: the gateway's own settings, among them its token (CMDGATE_TOKEN);
//   - BASH_ENV: a file bash sources before running any `bash -c` script;
//   - BASH_FUNC_*: functions exported to bash, which would shadow the commands the
//     policy saw (`BASH_FUNC_ls%%=() { ...; }` makes `ls` run other code);
//   - SHELLOPTS, BASHOPTS: shell options bash imports at start-up (noexec, xtrace, ...);
//   - CDPATH: makes `cd src` land in a directory other than ./src, so the directory the
//     policy resolved a command's paths against would not be the one it runs in.
//
// The last four keep "a script runs exactly as the policy saw it" true whatever the
// gateway's own environment holds.
var DefaultEnvDeny = []string{"CMDGATE_*", "BASH_ENV", "BASH_FUNC_*", "SHELLOPTS", "BASHOPTS", "CDPATH"}

// FilterEnv returns the entries of env ("NAME=value") whose names match none of the
// deny patterns. A pattern is matched against the whole name with path.Match syntax (`*`
// any run of characters, `?` one character, `[...]` a class); on Windows, where names
// are case-insensitive, so is the match. The result is a new slice; env is not modified.
func FilterEnv(env, deny []string) ([]string, error) {
	if err := checkPatterns(deny); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !denied(envName(kv), deny) {
			out = append(out, kv)
		}
	}
	return out, nil
}

// Environment modes of Config.EnvMode.
const (
	EnvAllowlist = "allowlist"
	EnvInherit   = "inherit"
)

// EnvBase are the variables of the gateway's environment that reach every command in
// the allowlist mode: the search path, the locale, the terminal type and the time
// zone (and, on Windows, what its programs cannot start without).
var EnvBase = envBase()

func envBase() []string {
	base := []string{"PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ"}
	if runtime.GOOS == "windows" {
		base = append(base, "PATHEXT", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "TEMP", "TMP")
	}
	return base
}

// defaultPath is PATH when the gateway has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// credentialPatterns are the names that look like credentials: they never reach a
// command in the inherit mode unless EnvPass names them. Matched case-insensitively
// against the whole name.
var credentialPatterns = []string{
	"*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*_PASS", "*_PWD",
	"*_KEY", "*_KEYS", "*APIKEY*", "*API_KEY*", "*ACCESS_KEY*", "*PRIVATE_KEY*", "*KEY_ID",
	"*CREDENTIAL*", "*_AUTH", "*_AUTH_*", "*AUTHORIZATION*", "*COOKIE*", "*SESSION*",
	"*_DSN", "*DATABASE_URL*", "*CONNECTION_STRING*", "*WEBHOOK*", "*SIGNING*",
	"AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GCP_*", "GCLOUD_*",
	"KUBECONFIG", "VAULT_*", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "NETRC", "DOCKER_CONFIG",
	"NPM_CONFIG__AUTH*", "NPM_CONFIG_//*", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL",
	"*_URL_WITH_TOKEN*",
}

// CredentialLike reports whether an environment variable's name looks like it holds a
// credential (a token, a secret, a password, a key, cloud credentials, an agent socket,
// a connection string; see credentialPatterns).
func CredentialLike(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range credentialPatterns {
		if ok, _ := path.Match(p, up); ok {
			return true
		}
	}
	return false
}

// Environ is the environment for a command, before its backend adds what belongs to
// the backend (a sandbox's HOME and TMPDIR), built in this order, a later step
// overriding an earlier one:
//
//  1. from the gateway's environment (os.Environ at the time of the call): in the
//     allowlist mode (the default) only EnvBase and the names EnvPass matches; in the
//     inherit mode everything but the variables CredentialLike names, unless EnvPass
//     names them; PATH defaults to the system directories when the gateway has none;
//  2. the tool caches' variables (Caches.Env: HOME, GOCACHE, npm_config_cache, ...);
//  3. EnvSet.
//
// DefaultEnvDeny and EnvDeny then remove what they match, whatever step added it.
func (c Config) Environ() ([]string, error) {
	deny := DefaultEnvDeny
	if len(c.EnvDeny) > 0 {
		deny = append(append([]string(nil), DefaultEnvDeny...), c.EnvDeny...)
	}
	if err := checkPatterns(deny); err != nil {
		return nil, err
	}
	if err := checkPatterns(c.EnvPass); err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]int{}
	put := func(kv string) {
		name := envName(kv)
		if runtime.GOOS == "windows" {
			name = strings.ToUpper(name)
		}
		if i, ok := seen[name]; ok {
			out[i] = kv
			return
		}
		seen[name] = len(out)
		out = append(out, kv)
	}
	inherit := c.EnvMode == EnvInherit
	for _, kv := range os.Environ() {
		name := envName(kv)
		passed := denied(name, c.EnvPass) // "denied" is the pattern match
		switch {
		case passed:
		case inherit && !CredentialLike(name):
		case !inherit && denied(name, EnvBase):
		default:
			continue
		}
		put(kv)
	}
	if _, ok := seen["PATH"]; !ok && runtime.GOOS != "windows" {
		put("PATH=" + defaultPath)
	}
	for _, kv := range c.Caches.Env() {
		put(kv)
	}
	for _, name := range slices.Sorted(maps.Keys(c.EnvSet)) {
		put(name + "=" + c.EnvSet[name])
	}
	return slices.DeleteFunc(out, func(kv string) bool { return denied(envName(kv), deny) }), nil
}

// checkEnv reports a malformed environment configuration.
func (c Config) checkEnv() error {
	var errs []error
	switch c.EnvMode {
	case "", EnvAllowlist, EnvInherit:
	default:
		errs = append(errs, fmt.Errorf("env mode %q: want %s or %s", c.EnvMode, EnvAllowlist, EnvInherit))
	}
	if err := checkPatterns(c.EnvPass); err != nil {
		errs = append(errs, fmt.Errorf("env pass: %w", err))
	}
	for name := range c.EnvSet {
		if !validEnvName(name) {
			errs = append(errs, fmt.Errorf("env set: %q is not a variable name", name))
		} else if denied(name, DefaultEnvDeny) {
			errs = append(errs, fmt.Errorf("env set: %s may never reach a command", name))
		}
	}
	if c.Caches.Dir != "" && !filepath.IsAbs(c.Caches.Dir) {
		errs = append(errs, fmt.Errorf("caches: %q is not an absolute path", c.Caches.Dir))
	}
	return errors.Join(errs...)
}

// validEnvName accepts the names a shell can read: a letter or underscore, then
// letters, digits and underscores.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && !(r >= 'A' && r <= 'Z') && !(r >= 'a' && r <= 'z') && !(i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// envName is the name part of "NAME=value". Windows keeps per-drive directories in
// entries like "=C:=C:\dir", whose name starts with '='.
func envName(kv string) string {
	start := 0
	if strings.HasPrefix(kv, "=") {
		start = 1
	}
	if i := strings.IndexByte(kv[start:], '='); i >= 0 {
		return kv[:start+i]
	}
	return kv
}

func denied(name string, deny []string) bool {
	if runtime.GOOS == "windows" {
		name = strings.ToUpper(name)
	}
	for _, p := range deny {
		if runtime.GOOS == "windows" {
			p = strings.ToUpper(p)
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// checkPatterns rejects malformed patterns up front: a pattern that cannot match would
// let the variable it was meant to stop through.
func checkPatterns(deny []string) error {
	for _, p := range deny {
		if p == "" {
			return fmt.Errorf("env deny pattern is empty")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("env deny pattern %q: %w", p, err)
		}
	}
	return nil
}
