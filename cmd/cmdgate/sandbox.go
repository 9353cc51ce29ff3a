package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/executor/linux/sandboxrun"
)

const sandboxUsage = `usage: cmdgate sandbox run [flags] -- ARGV...
       cmdgate sandbox run [flags] -c SCRIPT
       cmdgate sandbox check [flags]

run runs one command in the linux sandbox the gateway uses, without a gateway and
without a policy: for security teams to explore what a command can and cannot do. The
command's output goes to stdout and stderr as it would from the gateway (captured, then
printed), and cmdgate exits with the command's exit code (124 on timeout); --json
prints the whole result as one JSON object instead.

check builds one sandbox with every protection and prints what is in force (Landlock
ABI, rlimits, cgroup limits, the pool) as JSON; it fails where the sandbox cannot be
built here, with the reason.

The workspace (read-write at its own path) is --workspace, else the configuration's
workspace, else the current directory. --config FILE (else $CMDGATE_CONFIG) supplies the
linux: and exec: sections.

flags:`

// runSandbox implements `cmdgate sandbox run|check`.
func (m *Main) runSandbox(ctx context.Context, args []string) int {
	if len(args) == 0 || (args[0] != "run" && args[0] != "check") {
		help := len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help")
		if help {
			args = []string{"run", "-h"} // the usage with the flags
		} else {
			fmt.Fprintln(m.Stderr, sandboxUsage)
			return exitUsage
		}
	}
	sub := args[0]
	typ := "sandbox." + sub // sandbox.run, sandbox.check
	fs := flag.NewFlagSet("sandbox "+sub, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), sandboxUsage)
		fs.PrintDefaults()
	}
	config := fs.String("config", "", "configuration file (default $CMDGATE_CONFIG)")
	workspace := fs.String("workspace", "", "the workspace, bound read-write (default: the configuration's, else the current directory)")
	cwd := fs.String("cwd", "", "working directory, inside the workspace (default: the workspace)")
	network := fs.Bool("network", false, "give the command the network, as a decision granting it does: the outside world through the sandbox's uplink (slirp4netns), not the host's own addresses")
	script := fs.String("c", "", "the command as a shell script")
	timeout := fs.Duration("timeout", sandboxrun.DefaultTimeout, "timeout of the command")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	argv, err := m.parseFlags(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	scriptSet := false
	fs.Visit(func(f *flag.Flag) { scriptSet = scriptSet || f.Name == "c" })
	if sub == "run" && scriptSet == (len(argv) > 0) {
		fmt.Fprintln(m.Stderr, "cmdgate sandbox run: give either -c SCRIPT or -- ARGV...")
		return exitUsage
	}
	if sub == "check" && (scriptSet || len(argv) > 0) {
		fmt.Fprintln(m.Stderr, "cmdgate sandbox check: takes no command")
		return exitUsage
	}
	cfg, err := loadConfig(m.configPath(*config))
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}
	ws, f := sandboxrun.Workspace(*workspace, cfg.Workspace)
	if f != nil {
		return m.writeError(typ, f.Code, f.Message)
	}
	opts := cfg.Linux.options()
	opts.Workspace, opts.Config, opts.Pool = ws, cfg.executor(), -1 // one command: nothing to build ahead
	e, err := linux.New(opts)
	if err != nil {
		return m.writeError(typ, "UNAVAILABLE", err.Error())
	}
	defer e.Close()
	if sub == "check" {
		st, err := e.Probe(ctx)
		if err != nil {
			return m.writeError(typ, "UNAVAILABLE", err.Error())
		}
		return m.writeResult(typ, st)
	}
	res, f := sandboxrun.Run(ctx, e, *cwd, *script, argv, *timeout, *network)
	if f != nil {
		return m.writeError(typ, f.Code, f.Message)
	}
	if *asJSON {
		m.writeResult(typ, res)
		return res.ExitCode
	}
	sandboxrun.Print(m.Stdout, m.Stderr, res, *timeout)
	return res.ExitCode
}
