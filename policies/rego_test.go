package policies

import (
	"testing"
)

// TestRego runs the default bundle's Rego tests (every *_test.rego) through OPA's
// tester, as `cmdgate policy test` and `opa test policies/bundle` do, and fails
// listing each failing Rego test.
func TestRego(t *testing.T) {
	t.Parallel()
	report, err := RunTests(t.Context(), TestOptions{})
	if err != nil {
		t.Fatalf("RunTests: %v", err)
	}
	for _, f := range report.Failures {
		t.Errorf("%s (%s): %s", f.Name, f.Location, f.Error)
	}
	if report.Passed == 0 {
		t.Fatal("no Rego test ran")
	}
	if !report.OK() {
		t.Fatalf("Rego tests: %d passed, %d failed, %d errored", report.Passed, report.Failed, report.Errored)
	}
	t.Logf("Rego tests: %d passed", report.Passed)
}
