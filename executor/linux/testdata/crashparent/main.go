// Crashparent is a gateway in miniature for TestEscapeGatewayCrash: it runs one script in
// the linux sandbox and prints the Result as JSON. The test kills it while the script
// runs, to check that the sandbox dies with its gateway. It builds no sandbox ahead and
// makes no cgroup, so that a killed crashparent leaves nothing behind on the host. With
// "probe" it probes the Executor first, as a gateway does: its inits then come from a
// spawner.
//
// Usage: crashparent HELPER WORKSPACE SCRIPT [probe]
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
)

func main() {
	if len(os.Args) != 4 && (len(os.Args) != 5 || os.Args[4] != "probe") {
		fmt.Fprintln(os.Stderr, "usage: crashparent HELPER WORKSPACE SCRIPT [probe]")
		os.Exit(2)
	}
	e, err := linux.New(linux.Options{Helper: os.Args[1], Workspace: os.Args[2], Pool: -1,
		Limits: linux.Limits{Memory: -1, Pids: -1}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(os.Args) == 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := e.Probe(ctx)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	res, err := e.Run(context.Background(), executor.Spec{Script: os.Args[3], Dir: e.Workspace(), Timeout: 100 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}
