package executor

import (
	"fmt"
	"os"
	"path"
	"runtime"
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

// Environ is the environment for a command: the gateway's environment (os.Environ at
// the time of the call) without DefaultEnvDeny and c.EnvDeny.
func (c Config) Environ() ([]string, error) {
	deny := DefaultEnvDeny
	if len(c.EnvDeny) > 0 {
		deny = append(append([]string(nil), DefaultEnvDeny...), c.EnvDeny...)
	}
	return FilterEnv(os.Environ(), deny)
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
