// Command cmdgate is the command gateway: one binary for the server, the clients, the
// offline policy tools and the audit tools.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	// First of cmdgate's initialisers: `sandbox run` leaves before the others run.
	_ "github.com/cmdgate/cmdgate/cmd/cmdgate/internal/early"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(NewMain(os.Stdin, os.Stdout, os.Stderr).Run(ctx, os.Args[1:]))
}

// Main holds the standard streams so that tests can run the CLI in process.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
}

// NewMain returns a Main on the given streams and the process environment.
func NewMain(stdin io.Reader, stdout, stderr io.Writer) *Main {
	return &Main{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}
}

// command is one subcommand: run gets the arguments after its name and returns the
// process exit status.
type command struct {
	name    string
	summary string
	run     func(m *Main, ctx context.Context, args []string) int
}

// commands lists the subcommands in the order `cmdgate help` shows them.
// Each subcommand lives in its own file.
func commands() []command {
	return []command{
		// Subcommands are registered here, one line each.
		{"serve", "run the gateway (HTTP API, and MCP at /mcp) on embedded defaults", (*Main).runServe},
		{"mcp", "serve the MCP server over stdio, for MCP clients that start a process", (*Main).runMCP},
		{"exec", "run a command through a gateway (client of POST /v1/exec)", (*Main).runExec},
		{"execute", "read an allowlisted file through the read-only pipeline language (client of POST /v1/execute)", (*Main).runExecute},
		{"output", "page through the whole output of a cut result or a job's log (client of GET /v1/outputs/{id})", (*Main).runOutput},
		{"job", "run background jobs through the policy and sandbox, and read their logs", (*Main).runJob},
		{"task", "create, list, show and remove per-task Docker environments (client of /v1/tasks)", (*Main).runTask},
		{"approval", "decide the approvals of a gateway and manage its grants (client of /v1/approvals)", (*Main).runApproval},
		{"token", "create, list and revoke API tokens", (*Main).runToken},
		{"audit", "query, verify and export the audit log", (*Main).runAudit},
		{"decide", "decide commands offline with the policy (nothing runs)", (*Main).runDecide},
		{"policy", "test a policy bundle, print the system prompt, evaluate raw inputs", (*Main).runPolicy},
		{"sandbox", "run one command in the linux sandbox, without gateway or policy", (*Main).runSandbox},
		{"cache", "list and clear the per-workspace tool caches", (*Main).runCache},
	}
}

// Exit statuses shared by all subcommands.
const (
	exitOK    = 0
	exitError = 1 // the operation failed
	exitUsage = 2 // the command line is wrong
)

// Run runs the subcommand named by args[0] and returns the exit status.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		m.usage(m.Stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		m.usage(m.Stdout)
		return exitOK
	case "version", "--version":
		fmt.Fprintln(m.Stdout, "cmdgate", version)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(m, ctx, args[1:])
		}
	}
	fmt.Fprintf(m.Stderr, "cmdgate: unknown command %q\n", args[0])
	m.usage(m.Stderr)
	return exitUsage
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func (m *Main) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cmdgate <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  help     show this help")
	fmt.Fprintln(w, "  version  print the version")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'cmdgate <command> -h' for the flags of a command.")
}
