package process

import (
	"fmt"
	"os/exec"
	"strings"
)

// platformShell is the ShellDefault shell: `pwsh.exe -NoLogo -NoProfile -Command`
// (as exec_command specifies), or Windows PowerShell with the same flags where PowerShell 7 is absent.
func platformShell() ([]string, error) {
	for _, name := range []string{"pwsh.exe", "powershell.exe"} {
		if path, err := exec.LookPath(name); err == nil {
			return []string{path, "-NoLogo", "-NoProfile", "-Command"}, nil
		}
	}
	return nil, fmt.Errorf("neither pwsh.exe nor powershell.exe is in PATH")
}

// hasDir reports whether a command name is a path rather than a name to look up.
func hasDir(name string) bool { return strings.ContainsAny(name, `/\:`) }

// psQuotes are the characters PowerShell accepts as a single quote.
const psQuotes = "'\u2018\u2019\u201a\u201b"

// quote joins argv into a PowerShell command that invokes argv[0] with the other words
// as its arguments: `& 'name' 'arg' ...`. Inside single quotes PowerShell expands
// nothing; each quote character (ASCII and the typographic ones PowerShell also accepts)
// is doubled.
func quote(argv []string) string {
	var b strings.Builder
	b.WriteString("&")
	for _, w := range argv {
		b.WriteString(" '")
		for _, r := range w {
			if strings.ContainsRune(psQuotes, r) {
				b.WriteRune(r)
			}
			b.WriteRune(r)
		}
		b.WriteByte('\'')
	}
	return b.String()
}
