// Package testenv lets tests skip when the machine lacks something they need, except
// under CI=true, where a missing prerequisite fails the test so CI proves every feature.
package testenv

import (
	"os"
	"os/exec"
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
