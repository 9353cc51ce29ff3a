package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/mcp"
)

const mcpUsage = `usage: cmdgate mcp [flags]

Serves cmdgate's MCP server over stdio, for MCP clients that start a process: one
JSON-RPC message per line on stdin and stdout, logs on stderr. It runs the same
pipeline as serve, in this process: the configuration, workspace, data directory
(tokens and audit log), policy and sandbox are found as serve finds them, and it may
run beside a serve on the same data directory.

Every call comes from the principal of the agent token in $CMDGATE_TOKEN or in
--token-file (never a flag value: other users can read argv), or, when neither is
given, of the token named by mcp.principal in the configuration file (a local
principal: the client's configuration holds no secret, and revoking that token stops
it). The token must have the agent (or admin) role. Tools: exec_command,
execute_command, shell_exec, system_info, and unless jobs.enabled is false the
background job tools job_run, job_status, job_tail, job_wait, job_list, job_kill.

Example client configuration (the command and its environment):
  {"command": "cmdgate", "args": ["mcp", "--workspace", "/path/to/project"],
   "env": {"CMDGATE_TOKEN": "cmdgate_..."}}

flags:`

// runMCP implements `cmdgate mcp`.
func (m *Main) runMCP(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), mcpUsage)
		fs.PrintDefaults()
	}
	var sf serveFlags
	var tokenFile string
	sf.register(fs)
	fs.StringVar(&tokenFile, "token-file", "", "read the agent token from this file instead of $CMDGATE_TOKEN")
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(operands) > 0 {
		fmt.Fprintf(m.Stderr, "cmdgate mcp: unexpected argument %q\n", operands[0])
		return exitUsage
	}
	// stdout carries the protocol: every failure before it starts goes to stderr.
	fail := func(format string, args ...any) int {
		fmt.Fprintf(m.Stderr, "cmdgate mcp: "+format+"\n", args...)
		return exitError
	}
	secret, err := m.token(tokenFile)
	if err != nil {
		return fail("%v", err)
	}
	opts, cfg, err := m.serveConfig(sf)
	if err != nil {
		return fail("%v", err)
	}
	if secret == "" && cfg.MCP.Principal == "" {
		return fail("no token: set CMDGATE_TOKEN or --token-file (cmdgate token create --role agent --name NAME prints one), or name a local principal in the configuration (mcp.principal)")
	}
	m.setGCPercent(cfg) // the gateway in this process runs as serve's does
	srv, err := gateway.New(ctx, opts)
	if err != nil {
		return fail("%v", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Close(cctx)
	}()
	var tok gateway.Token
	if secret != "" {
		if tok, err = srv.CheckToken(secret); err != nil {
			return fail("the token is not valid: %v", err)
		}
	} else if tok, err = localPrincipal(srv.Tokens(), cfg.MCP.Principal); err != nil {
		return fail("%v", err)
	}
	if tok.Role != gateway.RoleAgent && tok.Role != gateway.RoleAdmin && tok.Role != gateway.RoleReader {
		return fail("the token %q has the %s role; the MCP server needs an agent (or reader) token", tok.Name, tok.Role)
	}
	srv.SetPromptTools(mcp.Tools(srv)...)
	server := mcp.New(srv, version, mcp.Options{Principal: &tok})

	// SIGINT or SIGTERM ends the session; so does the client closing stdin.
	runCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	limit := opts.BodyLimit // a frame is as large as a request body may be
	if limit <= 0 {
		limit = gateway.DefaultBodyLimit
	}
	if err := server.Run(runCtx, mcp.StdioTransport(m.Stdin, m.Stdout, int(limit))); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fail("%v", err)
	}
	return exitOK
}

// localPrincipal is the live token named by mcp.principal.
func localPrincipal(tokens *gateway.TokenStore, name string) (gateway.Token, error) {
	list, err := tokens.List()
	if err != nil {
		return gateway.Token{}, err
	}
	revoked := false
	for _, t := range list {
		if t.Name != name {
			continue
		}
		if !t.Revoked() {
			return t, nil
		}
		revoked = true
	}
	if revoked {
		return gateway.Token{}, fmt.Errorf("mcp.principal %q: its token was revoked", name)
	}
	return gateway.Token{}, fmt.Errorf("mcp.principal %q: no token of that name in the data directory (cmdgate token create --role agent --name %s)", name, name)
}
