//go:build !linux

package sandboxinit

import (
	"fmt"
	"os"
)

// Main refuses: the sandbox needs Linux namespaces, Landlock and seccomp.
func Main() {
	fmt.Fprintln(os.Stderr, "cmdgate-sandbox: the linux sandbox runs on Linux only")
	os.Exit(125)
}
