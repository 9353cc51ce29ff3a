// Package sandboxrun is `cmdgate sandbox run` as cmdgate-sandbox runs it on cmdgate's
// behalf. The cmdgate program links the policy engine, the audit store and the HTTP
// fronts, whose package initialisers cost milliseconds on every start (measured: 10 ms
// for `cmdgate version` on a 2-core VM, against 2 ms for a minimal Go program) before
// any subcommand runs, though `sandbox run` decides nothing. So cmdgate hands an
// ordinary `sandbox run` over to cmdgate-sandbox from its first package initialiser,
// before the heavy ones run, and
// cmdgate-sandbox runs it (Main) with the same executor, defaults and output. Package
// internal/handover says which runs are handed over.
package sandboxrun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/envelope"
	"github.com/cmdgate/cmdgate/internal/handover"
)

// DefaultTimeout is the command's timeout when --timeout is not given.
const DefaultTimeout = handover.DefaultTimeout

// Main runs a `sandbox run` handed over (args are handover.Args's, after handover.Arg)
// and returns the
// exit status: the command's, or 1 with an error printed as cmdgate prints it.
func Main(args []string, stdout, stderr io.Writer) int {
	const typ = "sandbox.run"
	fs := flag.NewFlagSet("sandbox run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workspace := fs.String("workspace", "", "")
	cwd := fs.String("cwd", "", "")
	network := fs.Bool("network", false, "")
	script := fs.String("c", "", "")
	timeout := fs.Duration("timeout", DefaultTimeout, "")
	fail := func(code, message string) int {
		envelope.WriteError(stdout, stderr, typ, code, message)
		return 1
	}
	if err := fs.Parse(args); err != nil {
		return fail("INVALID_ARGUMENT", err.Error())
	}
	scriptSet := false
	fs.Visit(func(f *flag.Flag) { scriptSet = scriptSet || f.Name == "c" })
	if scriptSet == (fs.NArg() > 0) {
		fmt.Fprintln(stderr, "cmdgate sandbox run: give either -c SCRIPT or -- ARGV...")
		return 2
	}
	ws, f := Workspace(*workspace, "")
	if f != nil {
		return fail(f.Code, f.Message)
	}
	// The defaults of an empty configuration, one command: nothing to build ahead. This
	// process starts the init itself, from one CPU (linux.KeepToOneCPU); the init goes
	// back to this process's CPUs.
	e, err := linux.New(linux.Options{Workspace: ws, Pool: -1, InitCPUs: linux.KeepToOneCPU()})
	if err != nil {
		return fail("UNAVAILABLE", err.Error())
	}
	defer e.Close()
	// Interrupted or terminated, the command stops, as under cmdgate.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, f := Run(ctx, e, *cwd, *script, fs.Args(), *timeout, *network)
	if f != nil {
		return fail(f.Code, f.Message)
	}
	Print(stdout, stderr, res, *timeout)
	return res.ExitCode
}

// Failure is a run that could not be done: a code of the CLI's error envelope and the
// message.
type Failure struct{ Code, Message string }

// Workspace is the run's workspace, made absolute: given, else configured, else the
// current directory.
func Workspace(given, configured string) (string, *Failure) {
	ws := given
	if ws == "" {
		ws = configured
	}
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return "", &Failure{"INTERNAL", err.Error()}
		}
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return "", &Failure{"INVALID_ARGUMENT", err.Error()}
	}
	return ws, nil
}

// Run runs one command in e: argv as is when given, else script with the sandbox's
// shell; cwd (default the workspace) is made absolute.
func Run(ctx context.Context, e *linux.Executor, cwd, script string, argv []string, timeout time.Duration, network bool) (executor.Result, *Failure) {
	dir := cwd
	if dir == "" {
		dir = e.Workspace()
	} else {
		var err error
		if dir, err = filepath.Abs(dir); err != nil {
			return executor.Result{}, &Failure{"INVALID_ARGUMENT", err.Error()}
		}
	}
	spec := executor.Spec{Argv: argv, Script: script, Dir: dir, Timeout: timeout, Network: network}
	if len(argv) > 0 {
		spec.ShellMode = executor.ShellDirect
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		var ee *executor.Error
		if errors.As(err, &ee) {
			msg := ee.Message
			if ee.Code == executor.CodeInternal && ee.Err != nil {
				// The agent-facing message names the step; the person at this
				// terminal needs the cause as well (the gateway logs it instead).
				msg += ": " + ee.Err.Error()
			}
			return res, &Failure{string(ee.Code), msg}
		}
		return res, &Failure{"INTERNAL", err.Error()}
	}
	return res, nil
}

// Print writes a command's result as `cmdgate sandbox run` does without --json: its
// output, then what was cut or stopped.
func Print(stdout, stderr io.Writer, res executor.Result, timeout time.Duration) {
	fmt.Fprint(stdout, res.Stdout)
	fmt.Fprint(stderr, res.Stderr)
	if res.StdoutTruncated || res.StderrTruncated {
		fmt.Fprintf(stderr, "cmdgate sandbox: output truncated (%d and %d bytes written)\n", res.StdoutBytes, res.StderrBytes)
	}
	if res.TimedOut {
		fmt.Fprintf(stderr, "cmdgate sandbox: timed out after %v\n", timeout)
	}
}
