//go:build !windows

package process

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"

	"github.com/cmdgate/cmdgate/executor"
)

// platformShell is the ShellDefault shell: `zsh -lc` on macOS (as exec_command specifies), `bash -c`
// elsewhere, each falling back to the next of bash and sh that PATH holds.
func platformShell() ([]string, error) {
	candidates := [][]string{{"bash", "-c"}, {"sh", "-c"}}
	if runtime.GOOS == "darwin" {
		candidates = append([][]string{{"zsh", "-lc"}}, candidates...)
	}
	for _, c := range candidates {
		if path, err := exec.LookPath(c[0]); err == nil {
			return []string{path, c[1]}, nil
		}
	}
	return nil, fmt.Errorf("none of %v is in PATH", candidates)
}

// hasDir reports whether a command name is a path rather than a name to look up.
func hasDir(name string) bool { return strings.Contains(name, "/") }

// quote joins argv into a POSIX shell command line whose words are exactly argv.
func quote(argv []string) string { return executor.QuotePOSIX(argv) }
