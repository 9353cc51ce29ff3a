package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/policies"
)

const policyUsage = `usage: cmdgate policy <command> [flags]

  test [DIR]     run the bundle's Rego tests (the embedded bundle without DIR): pass/fail
                 counts, the failures and the coverage; exit status 1 when a test fails
  prompt         print the system prompt: what cmdgate offers a model, with the allowed
                 commands by category
  eval           decide a raw policy input document (JSON): for rule authors

Run 'cmdgate policy <command> -h' for its flags.`

// runPolicy implements `cmdgate policy test|prompt|eval`.
func (m *Main) runPolicy(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(m.Stderr, policyUsage)
		return exitUsage
	}
	switch args[0] {
	case "test":
		return m.runPolicyTest(ctx, args[1:])
	case "prompt":
		return m.runPolicyPrompt(ctx, args[1:])
	case "eval":
		return m.runPolicyEval(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(m.Stdout, policyUsage)
		return exitOK
	}
	fmt.Fprintf(m.Stderr, "cmdgate policy: unknown command %q\n%s\n", args[0], policyUsage)
	return exitUsage
}

func (m *Main) runPolicyTest(ctx context.Context, args []string) int {
	const typ = "policy.test"
	fs := flag.NewFlagSet("policy test", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	coverage := fs.Bool("coverage", true, "compute the coverage (slower)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: cmdgate policy test [--coverage=false] [DIR]")
		fs.PrintDefaults()
	}
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(operands) > 1 {
		fs.Usage()
		return exitUsage
	}
	opts := policies.TestOptions{Coverage: *coverage}
	if len(operands) == 1 {
		if err := isDir(operands[0]); err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
		}
		opts.Dir = operands[0]
	}
	report, err := policies.RunTests(ctx, opts)
	if err != nil {
		return m.writeError(typ, "FAILED_PRECONDITION", err.Error())
	}
	for _, f := range report.Failures {
		fmt.Fprintf(m.Stderr, "FAIL %s (%s)", f.Name, f.Location)
		if f.Error != "" {
			fmt.Fprintf(m.Stderr, ": %s", f.Error)
		}
		fmt.Fprintln(m.Stderr)
	}
	fmt.Fprintf(m.Stderr, "PASS %d, FAIL %d, ERROR %d, SKIP %d", report.Passed, report.Failed, report.Errored, report.Skipped)
	if report.Coverage >= 0 {
		fmt.Fprintf(m.Stderr, ", coverage %.1f%%", report.Coverage)
	}
	fmt.Fprintln(m.Stderr)
	if !report.OK() {
		msg := fmt.Sprintf("%d of %d tests failed, %d errored", report.Failed, report.Passed+report.Failed+report.Errored, report.Errored)
		if report.Passed+report.Failed+report.Errored == 0 {
			msg = "the bundle has no tests"
		}
		return m.writeFailed(typ, "TESTS_FAILED", msg, report)
	}
	return m.writeResult(typ, report)
}

func (m *Main) runPolicyPrompt(ctx context.Context, args []string) int {
	const typ = "policy.prompt"
	fs := flag.NewFlagSet("policy prompt", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	dir := fs.String("policy", "", "policy bundle directory (default: the embedded bundle)")
	config := fs.String("config", "", "configuration file (default: $CMDGATE_CONFIG)")
	workspace := fs.String("workspace", "", "the workspace to describe (default: as cmdgate serve: $CMDGATE_WORKSPACE, the configuration's, the current directory)")
	sandbox := fs.String("sandbox", "", "the backend to describe: auto, process or linux (default: as cmdgate serve; auto probes the linux sandbox)")
	remoteURL := fs.String("url", "", "print the prompt of the gateway at this URL (GET /v1/policy/prompt) instead")
	tokenFile := fs.String("token-file", "", "with --url: read the token from this file instead of $CMDGATE_TOKEN")
	text := fs.Bool("text", false, "print the prompt text itself, not the JSON envelope")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: cmdgate policy prompt [--policy DIR] [--config FILE] [--workspace DIR] [--sandbox NAME] [--text]
       cmdgate policy prompt --url URL [--token-file FILE] [--text]

Prints the system prompt that tells a model what cmdgate offers: the workspace, the
sandbox and what it isolates, when commands get the network, the tools, the time
limits, and the allowed commands by category. Offline it describes what cmdgate serve
would run with the same configuration; with --url it is the running gateway's own.

flags:`)
		fs.PrintDefaults()
	}
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(operands) > 0 {
		fs.Usage()
		return exitUsage
	}
	if *remoteURL != "" {
		c, err := m.newClient(*remoteURL, *tokenFile)
		if err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
		}
		status, body, err := c.call(ctx, "GET", "/v1/policy/prompt", nil, nil)
		if err != nil {
			return m.clientFailed(typ, err)
		}
		if *text && status == 200 {
			var p struct {
				Prompt string `json:"prompt"`
			}
			if err := json.Unmarshal(body, &p); err == nil {
				fmt.Fprint(m.Stdout, p.Prompt)
				return exitOK
			}
		}
		return m.writeAnswer(typ, status, body)
	}
	opts, _, err := m.serveConfig(serveFlags{config: *config, workspace: *workspace, sandbox: *sandbox, policy: *dir})
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}
	opts.Logger = nil // the probe's findings are the prompt's, not log lines
	env, err := gateway.PromptEnvFor(ctx, opts)
	if err != nil {
		return m.writeError(typ, "FAILED_PRECONDITION", err.Error())
	}
	env.Tools = serveTools(opts) // the prompt of `cmdgate serve`, which has both fronts
	e, _, err := m.loadEngine(ctx, *dir, *config, env.Profile)
	if err != nil {
		return m.writeError(typ, "FAILED_PRECONDITION", err.Error())
	}
	prompt := e.PromptFor(env)
	if *text {
		fmt.Fprint(m.Stdout, prompt)
		return exitOK
	}
	return m.writeResult(typ, struct {
		Prompt    string             `json:"prompt"`
		Allowlist policies.Allowlist `json:"allowlist"`
		Revision  string             `json:"revision"`
	}{prompt, e.Allowlist(), e.Revision()})
}

// maxEvalInput bounds the input document of `policy eval`.
const maxEvalInput = 16 << 20

func (m *Main) runPolicyEval(ctx context.Context, args []string) int {
	const typ = "policy.eval"
	fs := flag.NewFlagSet("policy eval", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	dir := fs.String("policy", "", "policy bundle directory (default: the embedded bundle)")
	config := fs.String("config", "", "configuration file (default: $CMDGATE_CONFIG)")
	inputFile := fs.String("input", "", "input document (JSON), - for stdin")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: cmdgate policy eval [--policy DIR] [--config FILE] --input FILE|-")
		fs.PrintDefaults()
	}
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(operands) > 0 || *inputFile == "" {
		fs.Usage()
		return exitUsage
	}
	raw, err := m.readInput(*inputFile)
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var input any
	if err := dec.Decode(&input); err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", fmt.Sprintf("input is not JSON: %v", err))
	}
	if dec.More() {
		return m.writeError(typ, "INVALID_ARGUMENT", "input holds more than one JSON value")
	}
	e, _, err := m.loadEngine(ctx, *dir, *config, "")
	if err != nil {
		return m.writeError(typ, "FAILED_PRECONDITION", err.Error())
	}
	d, err := e.DecideInput(ctx, input)
	if err != nil {
		return m.writeError(typ, "INTERNAL", fmt.Sprintf("policy evaluation failed (the gateway would deny): %v", err))
	}
	return m.writeResult(typ, struct {
		Decision string            `json:"decision"`
		Reasons  []policies.Reason `json:"reasons"`
		Revision string            `json:"revision"`
		Sandbox  policies.Sandbox  `json:"sandbox"`
	}{d.Action, d.Reasons, d.Revision, d.Sandbox})
}

// readInput reads a file, or stdin for "-", up to maxEvalInput bytes.
func (m *Main) readInput(name string) ([]byte, error) {
	var r io.Reader = m.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxEvalInput+1))
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	if len(raw) > maxEvalInput {
		return nil, fmt.Errorf("input is larger than %d bytes", maxEvalInput)
	}
	return raw, nil
}

// isDir reports an error unless dir is a directory.
func isDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("policy directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("policy directory %s: not a directory", dir)
	}
	return nil
}
