package sandboxinit

import (
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// restoreCPUs puts the init's main thread back on the CPUs its starter had (the
// argument after wire.CPUsArg). The command, and whatever it starts, is forked from
// that thread and inherits them. The runtime's other threads of the init stay on the
// starter's one CPU: they only wait for the command and pass signals on.
func restoreCPUs(arg string) error {
	set, err := wire.ParseCPUs(arg)
	if err != nil {
		return err
	}
	return unix.SchedSetaffinity(0, &set)
}
