// Package handover says which `cmdgate sandbox run` command lines cmdgate hands over to
// cmdgate-sandbox (package sandboxrun) before its heavy package initialisers run, and
// finds cmdgate-sandbox. It imports only a few of the standard library's packages, so
// that the package of cmdgate that uses it is initialised among the first.
//
// Go initialises packages in import path order, each as soon as those it imports
// are, and a package without initialisers of its own still waits for its turn in that
// order. So an import late in the alphabet holds the handover back behind every
// package before it: importing strings made cmdgate run 78 initialisers (encoding/gob,
// flag, the crypto packages, ...) before handing over, against 22 without it, 0.7-1 ms
// of every `cmdgate sandbox run` (measured as processes on a 2-core VM). The few string
// functions it needs are written out below instead; TestSandboxRunHandover in
// cmd/cmdgate keeps it so.
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
		name, value, hasValue := cut(trimDash(trimDash(a)), '=')
		if !hasPrefix(a, "-") || name == "" || hasPrefix(name, "-") {
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
		if dir, _, found := cutLast(self, '/'); found && executable(dir+"/"+HelperName) {
			return dir + "/" + HelperName, nil
		}
	}
	for rest, more := os.Getenv("PATH"), true; more; {
		var dir string
		dir, rest, more = cut(rest, os.PathListSeparator)
		if hasPrefix(dir, "/") {
			if p := trimSlash(dir) + "/" + HelperName; executable(p) {
				return p, nil
			}
		}
	}
	return "", errors.New("sandbox: " + HelperName + " is neither beside this program nor in PATH (`make build` builds it into bin/)")
}

// The string functions of the package, written out rather than imported from strings
// (see the package comment).

// cut is strings.Cut for a one-byte separator.
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// cutLast cuts s around the last sep.
func cutLast(s string, sep byte) (before, after string, found bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// trimDash removes one leading "-".
func trimDash(s string) string {
	if hasPrefix(s, "-") {
		return s[1:]
	}
	return s
}

// trimSlash removes one trailing "/".
func trimSlash(s string) string {
	if len(s) > 0 && s[len(s)-1] == '/' {
		return s[:len(s)-1]
	}
	return s
}
