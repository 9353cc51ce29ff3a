package linux_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// helper is the cmdgate-sandbox program the tests run, built once by TestMain from the
// source under test, without cgo as `make build` builds it.
var helper string

func TestMain(m *testing.M) {
	var dir string
	var err error
	if helper, dir, err = testenv.BuildHelper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// newExecutor returns an Executor on a fresh workspace, probed: a host where the sandbox
// cannot be built skips (and fails under CI=true).
func newExecutor(t testing.TB, opts linux.Options) (*linux.Executor, string) {
	t.Helper()
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	opts.Helper = helper
	e, err := linux.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Probe(ctx); err != nil {
		testenv.Skip(t, "the linux sandbox cannot be built here: %v", err)
	}
	return e, e.Workspace()
}

// run runs script in e with dir as working directory and a 20 s timeout.
func run(t testing.TB, e *linux.Executor, dir, script string) executor.Result {
	t.Helper()
	res, err := e.Run(context.Background(), executor.Spec{Script: script, Dir: dir, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Run(%q): %v", script, err)
	}
	return res
}
