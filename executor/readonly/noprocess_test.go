package readonly_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestNoProcess keeps the package free of process creation: os/exec is not among its
// dependencies (for every OS the repository builds for), and its own code calls none
// of the lower-level ways to start a process.
func TestNoProcess(t *testing.T) {
	t.Parallel()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = testenv.NeedCommand(t, "go")
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command(gobin, "list", "-deps", "github.com/cmdgate/cmdgate/executor/readonly")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list -deps: %v", goos, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("GOOS=%s go list -deps lists only %q", goos, deps)
		}
		for _, d := range deps {
			if d == "os/exec" || strings.HasPrefix(d, "github.com/cmdgate/cmdgate/") && d != "github.com/cmdgate/cmdgate/executor/readonly" {
				t.Errorf("GOOS=%s: the package depends on %s", goos, d)
			}
		}
	}

	forbidden := map[string]bool{
		"syscall.ForkExec": true, "syscall.StartProcess": true, "syscall.Exec": true,
		"os.StartProcess": true, "syscall.CreateProcess": true, "syscall.RawSyscall": true,
		"syscall.Syscall": true, "syscall.Syscall6": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p == "os/exec" || p == "unsafe" || p == "plugin" {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && forbidden[x.Name+"."+sel.Sel.Name] {
					t.Errorf("%s: %s uses %s.%s", name, fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}
