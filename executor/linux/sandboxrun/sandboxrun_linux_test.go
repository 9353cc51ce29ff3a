package sandboxrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/linux/sandboxrun"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestRunInternalCause: a run that fails inside (here the sandbox's init is a program
// that exits at once, without a report) is an INTERNAL failure whose message gives the
// cause after the step, for the person at the terminal ("build the sandbox: the init
// ... ended without a report", whether the init was gone before or after its cgroup was
// checked); the gateway's agents get the step only.
func TestRunInternalCause(t *testing.T) {
	notInit := testenv.NeedCommand(t, "true")
	e, err := linux.New(linux.Options{Workspace: t.TempDir(), Helper: notInit, Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	_, f := sandboxrun.Run(context.Background(), e, "", "", []string{"true"}, 10*time.Second, false)
	if f == nil || f.Code != "INTERNAL" {
		t.Fatalf("Run with an init that exits at once = %+v; want an INTERNAL failure", f)
	}
	if want := "build the sandbox: the init " + notInit + " ended without a report"; f.Message != want {
		t.Errorf("message %q, want %q", f.Message, want)
	}
}
