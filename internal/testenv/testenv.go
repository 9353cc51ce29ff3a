// Package testenv lets tests skip when the machine lacks something they need, except
// under CI=true, where a missing prerequisite fails the test so CI proves every feature;
// and builds the programs tests run for real.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CI reports whether the tests run under CI (CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// Skip skips the test with the reason, or fails it under CI.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("CI=true forbids skipping: "+format, args...)
	}
	t.Skipf(format, args...)
}

// NeedCommand returns the path of the named program, skipping (or failing under CI)
// when it is not installed.
func NeedCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, "%s is not installed: %v", name, err)
	}
	return p
}

// BuildHelper builds the cmdgate-sandbox program from the source under test into a new
// temporary directory, without cgo as `make build` builds it, for a TestMain. The caller
// removes the directory it returns.
func BuildHelper() (path, dir string, err error) {
	dir, err = os.MkdirTemp("", "cmdgate-sandbox-test")
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "cmdgate-sandbox")
	build := exec.Command("go", "build", "-o", path, "github.com/cmdgate/cmdgate/cmd/cmdgate-sandbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("build cmdgate-sandbox: %v\n%s", err, out)
	}
	return path, dir, nil
}

// BuildCmdgate builds the cmdgate program and, beside it, cmdgate-sandbox into a new
// temporary directory, for tests that need the real program as a separate process (a
// background job's supervisor). The caller removes dir.
func BuildCmdgate() (path, dir string, err error) {
	helper, dir, err := BuildHelper()
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(filepath.Dir(helper), "cmdgate")
	if out, err := exec.Command("go", "build", "-o", path, "github.com/cmdgate/cmdgate/cmd/cmdgate").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("build cmdgate: %v\n%s", err, out)
	}
	return path, dir, nil
}
