// Package handover says which `cmdgate sandbox run` command lines cmdgate hands over to
// cmdgate-sandbox (package sandboxrun) before its heavy package initialisers run, and
// finds cmdgate-sandbox. It imports only the standard library's basics, so that the
// package of cmdgate that uses it is initialised among the first: Go initialises a
// package as soon as those it imports are, in import path order.
//
// Only a run that needs nothing but the linux executor is handed over: no configuration
// file (--config, $CMDGATE_CONFIG), no --json, no help, and the command given as -c
// SCRIPT or after --. Anything else, including every malformed command line, stays
// with cmdgate, which says what is wrong.
package handover

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// HelperName is the sandbox's program, cmdgate-sandbox (cmd/cmdgate-sandbox).
const HelperName = "cmdgate-sandbox"

// Arg is cmdgate-sandbox's first argument for a run handed over.
const Arg = "run"

// DefaultTimeout is the command's timeout when --timeout is not given.
const DefaultTimeout = 30 * time.Second

// Args reports whether cmdgate's arguments (without the program name) are a `sandbox
// run` that cmdgate-sandbox runs the same as cmdgate, and returns cmdgate-sandbox's
// arguments for it. getenv reads the environment.
func Args(args []string, getenv func(string) string) ([]string, bool) {
	if len(args) < 2 || args[0] != "sandbox" || args[1] != "run" || getenv("CMDGATE_CONFIG") != "" {
		return nil, false
	}
	out := []string{Arg}
	script, argv := false, false
	rest := args[2:]
	for len(rest) > 0 {
		a := rest[0]
		rest = rest[1:]
		if a == "--" {
			if len(rest) == 0 {
				return nil, false
			}
			out = append(append(out, "--"), rest...)
			argv = true
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || name == "" || strings.HasPrefix(name, "-") {
			return nil, false // a positional argument, or ---x: cmdgate says
		}
		switch name {
		case "network":
			if hasValue {
				b, err := strconv.ParseBool(value)
				if err != nil {
					return nil, false
				}
				if !b {
					continue
				}
			}
			out = append(out, "-network")
			continue
		case "workspace", "cwd", "timeout", "c":
		default:
			return nil, false // --config, --json, -h and the unknown
		}
		if !hasValue {
			if len(rest) == 0 {
				return nil, false
			}
			value, rest = rest[0], rest[1:]
		}
		if name == "timeout" {
			if d, err := time.ParseDuration(value); err != nil || d <= 0 {
				return nil, false
			}
		}
		script = script || name == "c"
		out = append(out, "-"+name+"="+value)
	}
	if script == argv {
		return nil, false // both or neither: cmdgate says
	}
	return out, true
}

// FindHelper looks for cmdgate-sandbox beside the running program, then in the
// absolute directories of PATH. It leaves path/filepath and os/exec aside: they would
// make the package's initialisation wait for many others (see the package comment).
func FindHelper() (string, error) {
	executable := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
	}
	// On Linux the running program's path is the link /proc/self/exe resolves to.
	if self, err := os.Executable(); err == nil {
		if i := strings.LastIndexByte(self, '/'); i >= 0 && executable(self[:i+1]+HelperName) {
			return self[:i+1] + HelperName, nil
		}
	}
	for _, dir := range strings.Split(os.Getenv("PATH"), string(os.PathListSeparator)) {
		if strings.HasPrefix(dir, "/") && executable(strings.TrimSuffix(dir, "/")+"/"+HelperName) {
			return strings.TrimSuffix(dir, "/") + "/" + HelperName, nil
		}
	}
	return "", errors.New("sandbox: " + HelperName + " is neither beside this program nor in PATH (`make build` builds it into bin/)")
}
