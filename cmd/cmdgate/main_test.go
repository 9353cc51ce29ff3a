package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
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
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("XDG_DATA_HOME", env.WorkDir+"/xdg")
			env.Setenv("CMDGATE_DATA", "")
			return nil
		},
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}
