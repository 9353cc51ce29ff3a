package policies

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestReport is the outcome of a bundle's Rego tests.
type TestReport struct {
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"`
	Errored  int           `json:"errored"`
	Skipped  int           `json:"skipped"`
	Failures []TestFailure `json:"failures"`
	// Coverage is the percentage of the bundle's policy lines (tests excluded) that the
	// tests evaluate, as OPA's cover package counts it; -1 when not computed.
	Coverage float64 `json:"coverage"`
}

// TestFailure is one test that failed or errored.
type TestFailure struct {
	Name     string `json:"name"`     // package.test_name
	Location string `json:"location"` // file:line
	Error    string `json:"error,omitempty"`
}

// OK reports whether every test passed (and there was at least one).
func (r TestReport) OK() bool { return r.Failed == 0 && r.Errored == 0 && r.Passed > 0 }

// TestOptions configure RunTests.
type TestOptions struct {
	// Dir is the bundle directory ("" for the embedded bundle).
	Dir string
	// Coverage computes TestReport.Coverage (tracing makes the run much slower).
	Coverage bool
}

// RunTests runs the bundle's test_* rules with OPA's tester, as `opa test` does (with
// --coverage when asked). The store holds what the engine's store holds for the
// default configuration: the bundle's data files plus the documents the engine
// precomputes, so the tests also exercise that path.
func RunTests(ctx context.Context, opts TestOptions) (TestReport, error) {
	o := buildOptions(nil)
	if opts.Dir != "" {
		o = buildOptions([]Option{WithDir(opts.Dir)})
	}
	b, err := loadBundle(o.fsys, o.root, o.source, o.display)
	if err != nil {
		return TestReport{}, err
	}
	data, _, err := prepareData(ctx, b, Config{})
	if err != nil {
		return TestReport{}, err
	}
	store := newStore(data)
	runner := tester.NewRunner().
		SetCompiler(ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1).WithEnablePrintStatements(true)).
		SetStore(store).
		SetModules(b.modules).
		CapturePrintOutput(true).
		SetTimeout(5 * time.Minute)
	var cov *cover.Cover
	if opts.Coverage {
		cov = cover.New()
		runner.SetCoverageQueryTracer(cov)
	}
	report := TestReport{Coverage: -1, Failures: []TestFailure{}}
	err = storage.Txn(ctx, store, storage.TransactionParams{}, func(txn storage.Transaction) error {
		ch, err := runner.RunTests(ctx, txn)
		if err != nil {
			return err
		}
		for r := range ch {
			switch {
			case r.Skip:
				report.Skipped++
			case r.Error != nil:
				report.Errored++
				report.Failures = append(report.Failures, failure(r, o))
			case r.Fail:
				report.Failed++
				report.Failures = append(report.Failures, failure(r, o))
			default:
				report.Passed++
			}
		}
		return nil
	})
	if err != nil {
		var errs ast.Errors
		if asAstErrors(err, &errs) {
			return TestReport{}, &BundleError{Source: o.source, Errors: errorLines(errs, o.root, o.display)}
		}
		return TestReport{}, fmt.Errorf("run tests of policy bundle %s: %w", o.source, err)
	}
	sort.Slice(report.Failures, func(i, j int) bool { return report.Failures[i].Name < report.Failures[j].Name })
	if cov != nil {
		report.Coverage = coverage(cov, b.modules)
	}
	return report, nil
}

func failure(r *tester.Result, o options) TestFailure {
	f := TestFailure{Name: r.Package + "." + r.Name}
	if r.Location != nil {
		f.Location = fmt.Sprintf("%s:%d", displayName(r.Location.File, o.root, o.display), r.Location.Row)
	}
	if r.Error != nil {
		f.Error = r.Error.Error()
	}
	return f
}

// coverage is the covered share of the policy modules' lines, tests excluded.
func coverage(cov *cover.Cover, modules map[string]*ast.Module) float64 {
	policy := make(map[string]*ast.Module, len(modules))
	for name, m := range modules {
		if !isTestFile(name) {
			policy[name] = m
		}
	}
	return cov.Report(policy).Coverage
}

func isTestFile(name string) bool {
	return filepath.Ext(name) == ".rego" && len(name) > len("_test.rego") && name[len(name)-len("_test.rego"):] == "_test.rego"
}

// asAstErrors is errors.As for ast.Errors (a slice type).
func asAstErrors(err error, target *ast.Errors) bool {
	if e, ok := err.(ast.Errors); ok {
		*target = e
		return true
	}
	return false
}

// statDir reports whether dir is a readable directory.
func statDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "open", Path: dir, Err: fmt.Errorf("not a directory")}
	}
	return nil
}
