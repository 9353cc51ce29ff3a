package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/console"
	"github.com/cmdgate/cmdgate/gateway/httpapi"
	"github.com/cmdgate/cmdgate/gateway/mcp"
	"github.com/cmdgate/cmdgate/gateway/webhook"
	"github.com/cmdgate/cmdgate/jobs"
)

const serveUsage = `usage: cmdgate serve [flags]

Runs the gateway: the HTTP API (docs/architecture.md) on --listen, deciding every
command with the policy bundle, recording every decision in the audit log of the data
directory, and running what is allowed in the sandbox. Logs go to stderr.

Every flag has an environment variable; a flag wins over its variable, and both win
over the configuration file:
  --listen     CMDGATE_LISTEN     default 127.0.0.1:8080
  --workspace  CMDGATE_WORKSPACE  default the current directory
  --data       CMDGATE_DATA       default $XDG_DATA_HOME/cmdgate, else ~/.local/share/cmdgate
  --policy     CMDGATE_POLICY     default the embedded bundle
  --sandbox    CMDGATE_SANDBOX    default auto
  --config     CMDGATE_CONFIG     YAML file; every key and its default in README.md
  --log-format CMDGATE_LOG_FORMAT default text
  --log-level  CMDGATE_LOG_LEVEL  default info

Signals: SIGHUP reloads the policy bundle (a broken one is rejected and the old one
keeps serving). SIGINT or SIGTERM shuts down gracefully: running commands get the
shutdown grace (10 s), then are stopped. A second SIGINT or SIGTERM stops them at once.

flags:`

// serveFlags are the command-line values of `cmdgate serve` (and `cmdgate mcp`, which
// runs the same pipeline); "" means not given.
type serveFlags struct {
	config, listen, workspace, data, policy, sandbox, addrFile, logFormat, logLevel string
}

// register adds the flags serve and mcp share.
func (sf *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&sf.workspace, "workspace", "", "directory tree commands may run in")
	fs.StringVar(&sf.data, "data", "", "data directory: tokens and the audit log")
	fs.StringVar(&sf.policy, "policy", "", "policy bundle directory, watched for changes")
	fs.StringVar(&sf.sandbox, "sandbox", "", "auto, process, linux or docker")
	fs.StringVar(&sf.logFormat, "log-format", "", "text or json")
	fs.StringVar(&sf.logLevel, "log-level", "", "debug, info, warn or error")
}

// runServe implements `cmdgate serve`.
func (m *Main) runServe(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	var sf serveFlags
	sf.register(fs)
	fs.StringVar(&sf.listen, "listen", "", "address to listen on, HOST:PORT (port 0 picks a free one)")
	fs.StringVar(&sf.addrFile, "addr-file", "", "write the address listened on to this file once listening")
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(operands) > 0 {
		fmt.Fprintf(m.Stderr, "cmdgate serve: unexpected argument %q\n", operands[0])
		return exitUsage
	}
	opts, cfg, err := m.serveConfig(sf)
	var whSecret []byte
	if err == nil && cfg.Approvals.Webhook.URL != "" {
		whSecret, err = cfg.Approvals.Webhook.secret()
	}
	if err != nil {
		return m.writeError("serve", "INVALID_ARGUMENT", err.Error())
	}
	log := opts.Logger
	m.setGCPercent(cfg)

	srv, err := gateway.New(ctx, opts)
	if err != nil {
		return m.writeError("serve", "UNAVAILABLE", err.Error())
	}
	front := httpapi.New(srv)
	front.MountStatic(console.Path, console.Handler()) // the web console for approvers and auditors
	mcp.Mount(front, version)                          // the MCP server at /mcp, on the same listener and tokens
	closeSrv := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Close(cctx); err != nil {
			log.Error("close", "error", err.Error())
		}
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		closeSrv()
		return m.writeError("serve", "UNAVAILABLE", fmt.Sprintf("listen on %s: %v", opts.Listen, err))
	}
	addr := ln.Addr().String()
	if sf.addrFile != "" {
		if err := writeFileAtomic(sf.addrFile, []byte(addr+"\n")); err != nil {
			ln.Close()
			closeSrv()
			return m.writeError("serve", "INTERNAL", fmt.Sprintf("write address file: %v", err))
		}
	}
	log.Info("cmdgate gateway listening", "addr", addr, "url", "http://"+addr,
		"workspace", srv.Workspace(), "data", opts.DataDir, "policy", policySource(opts.PolicyDir),
		"revision", srv.Revision(), "sandbox", srv.Sandbox())
	if n, err := srv.LiveTokens(); err == nil && n == 0 {
		create := "cmdgate token create --role agent --name NAME --data " + shellQuote(opts.DataDir)
		if _, isJSON := log.Handler().(*slog.JSONHandler); isJSON {
			// One more record of the log stream, not text in the middle of it.
			log.Warn("no API tokens exist yet: every request but /healthz will be refused", "create_one", create,
				"then", "send it as \"Authorization: Bearer <token>\" (cmdgate exec reads it from CMDGATE_TOKEN)")
		} else {
			fmt.Fprintf(m.Stderr, "\nNo API tokens exist yet: every request but /healthz will be refused. Create one with\n\n"+
				"    %s\n\n"+
				"and send it as \"Authorization: Bearer <token>\" (cmdgate exec reads it from CMDGATE_TOKEN).\n\n", create)
		}
	}

	// The first SIGINT or SIGTERM starts the graceful shutdown (main's context ends
	// too); a second stops the running commands at once. SIGHUP reloads the policy.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	if whSecret != nil {
		wait, err := webhook.Start(serveCtx, srv, webhook.Options{URL: cfg.Approvals.Webhook.URL, Secret: whSecret, Logger: log})
		if err != nil {
			return m.writeError("serve", "INTERNAL", err.Error())
		}
		defer func() { stop(); wait() }()
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		stops := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					log.Info("SIGHUP: reloading the policy bundle")
					rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					srv.ReloadPolicy(rctx) // logged and audited by the server
					cancel()
					continue
				}
				stops++
				if stops == 1 {
					log.Info("shutting down: running commands get the grace period; interrupt again to stop them now", "signal", sig.String())
					stop()
				} else {
					log.Warn("second interrupt: stopping the running commands now", "signal", sig.String())
					srv.Abort()
				}
			}
		}
	}()

	serveErr := front.Serve(serveCtx, ln)
	closeSrv()
	if sf.addrFile != "" {
		os.Remove(sf.addrFile)
	}
	if serveErr != nil {
		return m.writeError("serve", "INTERNAL", serveErr.Error())
	}
	log.Info("cmdgate gateway stopped")
	return exitOK
}

// serveOptions builds the gateway's options: the configuration file (--config, else
// CMDGATE_CONFIG), then the CMDGATE_* variables, then the flags, each overriding the one
// before.
func (m *Main) serveOptions(sf serveFlags) (gateway.Options, error) {
	opts, _, err := m.serveConfig(sf)
	return opts, err
}

// serveConfig is serveOptions, plus the configuration file it read (the settings of
// the process itself).
func (m *Main) serveConfig(sf serveFlags) (opts gateway.Options, cfg Config, err error) {
	cfg, err = loadConfig(m.configPath(sf.config))
	if err != nil {
		return opts, cfg, err
	}
	cfg.apply(&opts)
	// pick is the flag, else the variable, else the file's value.
	pick := func(flagValue, env, file string) string {
		if flagValue != "" {
			return flagValue
		}
		if v := m.Getenv(env); v != "" {
			return v
		}
		return file
	}
	opts.Listen = pick(sf.listen, "CMDGATE_LISTEN", cfg.Listen)
	if opts.Listen == "" {
		opts.Listen = gateway.DefaultListen
	}
	if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
		return opts, cfg, fmt.Errorf("listen address %q: want HOST:PORT", opts.Listen)
	}
	opts.Workspace = pick(sf.workspace, "CMDGATE_WORKSPACE", cfg.Workspace)
	// m.dataDir reads CMDGATE_DATA itself, between the flag and the file's value.
	dataFlag := sf.data
	if dataFlag == "" && m.Getenv("CMDGATE_DATA") == "" {
		dataFlag = cfg.Data
	}
	dir, err := m.dataDir(dataFlag)
	if err != nil {
		return opts, cfg, err
	}
	opts.DataDir = dir
	opts.PolicyDir = ""
	if p := pick(sf.policy, "CMDGATE_POLICY", cfg.Policy.Dir); p != "" {
		if opts.PolicyDir, err = filepath.Abs(p); err != nil {
			return opts, cfg, fmt.Errorf("policy directory %s: %w", p, err)
		}
	}
	opts.Sandbox = pick(sf.sandbox, "CMDGATE_SANDBOX", cfg.Sandbox.Backend)
	switch opts.Sandbox {
	case "", gateway.SandboxAuto, gateway.SandboxProcess, gateway.SandboxLinux, gateway.SandboxDocker:
	default:
		return opts, cfg, fmt.Errorf("--sandbox %q: want auto, process, linux or docker", opts.Sandbox)
	}
	log, err := newLogger(m.Stderr, pick(sf.logFormat, "CMDGATE_LOG_FORMAT", cfg.Log.Format), pick(sf.logLevel, "CMDGATE_LOG_LEVEL", cfg.Log.Level))
	if err != nil {
		return opts, cfg, err
	}
	opts.Logger = log
	// Tasks: the file's section, then seed 001's variables; the tokens of the clones
	// are read from the environment when a task is created.
	if opts.Tasks, err = cfg.Tasks.options(m.Getenv); err != nil {
		return opts, cfg, err
	}
	opts.Tasks.Getenv = m.Getenv
	// Jobs: the root `cmdgate job` finds, and the configuration file for the
	// supervisors (which inherit the environment too).
	if opts.Jobs.Root, err = jobs.ResolveRoot(cfg.Jobs.Root, m.Getenv); err != nil && !opts.Jobs.Disabled {
		return opts, cfg, err
	}
	if p := m.configPath(sf.config); p != "" {
		if opts.Jobs.Config, err = filepath.Abs(p); err != nil {
			return opts, cfg, err
		}
	}
	return opts, cfg, nil
}

// newLogger returns the slog logger of `cmdgate serve` on w.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if level != "" {
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
		}
	}
	ho := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

func policySource(dir string) string {
	if dir == "" {
		return "embedded"
	}
	return dir
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeFileAtomic writes b to path through a temporary file and a rename, so a reader
// never sees it half written.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// serveTools are the system prompt's tools under serve: the HTTP API's and the MCP
// server's mounted on it, for the gateway opts configure.
func serveTools(opts gateway.Options) []string {
	f := gateway.FeaturesOf(opts)
	return slices.Concat(httpapi.ToolsFor(f), mcp.ToolsFor(f))
}
