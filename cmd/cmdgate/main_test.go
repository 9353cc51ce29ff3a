package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestMain lets testscript run the real cmdgate binary (this test binary re-executed)
// as the `cmdgate` command of the scripts in testdata/script.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"cmdgate": func() {
			os.Exit(NewMain(os.Stdin, os.Stdout, os.Stderr).Run(context.Background(), os.Args[1:]))
		},
	})
}

// TestScripts runs every testdata/script/*.txtar. Each script gets its own $WORK
// directory; HOME and XDG_DATA_HOME point inside it so no script touches the real ones.
// PATH leads to a cmdgate-sandbox built from the source under test; the condition
// [sandbox] says whether the linux sandbox can be built here (under CI=true it must).
func TestScripts(t *testing.T) {
	t.Parallel()
	helper, dir, err := testenv.BuildHelper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sandbox := sync.OnceValue(func() error {
		e, err := linux.New(linux.Options{Workspace: dir, Helper: helper, Pool: -1})
		if err != nil {
			return err
		}
		defer e.Close()
		_, err = e.Probe(context.Background())
		return err
	})
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("XDG_DATA_HOME", env.WorkDir+"/xdg")
			env.Setenv("CMDGATE_DATA", "")
			env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond != "sandbox" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			err := sandbox()
			if err != nil && testenv.CI() {
				return false, fmt.Errorf("CI=true forbids skipping: the linux sandbox cannot be built here: %w", err)
			}
			return err == nil, nil
		},
		// jsonpath checks the one JSON object a command printed (job_test.go).
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"jsonpath": cmdJSONPath},
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}
