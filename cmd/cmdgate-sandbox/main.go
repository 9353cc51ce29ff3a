// Command cmdgate-sandbox is the init of cmdgate's linux sandbox. cmdgate starts it in
// fresh namespaces for each command; it is not meant to be run by hand (see
// `cmdgate sandbox run` for that). It is a program of its own, kept small, because it
// starts once per command.
package main

import (
	"os"

	"github.com/cmdgate/cmdgate/executor/linux/sandboxinit"
	"github.com/cmdgate/cmdgate/executor/linux/sandboxrun"
	"github.com/cmdgate/cmdgate/internal/handover"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == handover.Arg {
		os.Exit(sandboxrun.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	sandboxinit.Main()
}
