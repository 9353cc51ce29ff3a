// Package early hands an ordinary `cmdgate sandbox run` over to cmdgate-sandbox from its
// package initialiser (see package handover), before the policy engine, the audit
// store, the Docker client and the metrics registry initialise: milliseconds that a
// run, which decides nothing, does not need. cmdgate imports it for that effect alone.
// Where the run is not one to hand over, or cmdgate-sandbox cannot be executed, cmdgate
// goes on and runs it itself.
package early

import (
	"os"
	"syscall"

	"github.com/cmdgate/cmdgate/internal/handover"
)

func init() {
	args, ok := handover.Args(os.Args[1:], os.Getenv)
	if !ok {
		return
	}
	helper, err := handover.FindHelper()
	if err != nil {
		return // cmdgate says what is missing
	}
	syscall.Exec(helper, append([]string{handover.HelperName}, args...), os.Environ())
}
