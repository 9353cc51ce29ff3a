//go:build !windows

package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
)

func ExampleExecutor_Run() {
	e := process.New(process.Options{
		// Seed 001's builds: allow up to 30 minutes when a request asks for it.
		Config: executor.Config{MaxTimeout: 30 * time.Minute},
	})
	res, err := e.Run(context.Background(), executor.Spec{
		Argv:      []string{"echo", "hello"},
		ShellMode: executor.ShellDirect,
		Dir:       os.TempDir(),
	})
	if err != nil {
		var xe *executor.Error
		if errors.As(err, &xe) {
			fmt.Println(xe.Code, xe.Message) // the gateway maps the code to HTTP
		}
		return
	}
	fmt.Printf("exit %d, stdout %q, %d bytes\n", res.ExitCode, res.Stdout, res.StdoutBytes)
	// Output: exit 0, stdout "hello\n", 6 bytes
}
