package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

const decideUsage = `usage: cmdgate decide [flags] (-c SCRIPT | -- ARGV... | --batch FILE|-)
       cmdgate decide --url URL|--remote [--cwd DIR] [--shell-mode MODE] (-c SCRIPT | -- ARGV...)

Decides commands offline with the policy (the bundle of --policy, else policy.dir of the
configuration file, else the embedded one), without running anything, and prints
{"decision","reasons","commands","revision","sandbox"} in the JSON envelope. A deny is a
result: the exit status is 0 whenever a decision was printed.

  -c SCRIPT       decide a shell script
  -- ARGV...      decide one program and its arguments (no shell)
  --batch FILE|-  decide one request per input line, {"command": SCRIPT} or
                  {"argv": [...]}, with an optional "cwd"; one output line per input
                  line, in order (a bad line gets an error line; the exit status is then 1)

--workspace defaults to the current directory, --cwd to the workspace (a relative
--cwd is relative to the workspace).

With --url URL (or --remote: $CMDGATE_URL, else http://127.0.0.1:8080) the gateway
decides instead (POST /v1/decide) with its own bundle, configuration and workspace, and
records the decision in its audit log; the token is $CMDGATE_TOKEN or --token-file.
Its answer is printed in the envelope; the exit status is 0 whenever it answered, 1
when it could not be reached (error code UNAVAILABLE).

flags:`

// decideFlags are the flags of `cmdgate decide`.
type decideFlags struct {
	policy, config, cwd, workspace, script, batch string
	maxBytes                                      int
	url, tokenFile, shellMode                     string
	remote                                        bool
	profile                                       string
}

// decideOutput is what decide prints for one request (a batch line's output also
// carries its input line number).
type decideOutput struct {
	Decision string            `json:"decision"`
	Reasons  []policies.Reason `json:"reasons"`
	Commands []parse.Command   `json:"commands"`
	Revision string            `json:"revision"`
	Sandbox  policies.Sandbox  `json:"sandbox"`
	Line     int               `json:"line,omitempty"`
}

// runDecide implements `cmdgate decide`.
func (m *Main) runDecide(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("decide", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), decideUsage)
		fs.PrintDefaults()
	}
	var df decideFlags
	fs.StringVar(&df.policy, "policy", "", "policy bundle directory (default: policy.dir of the configuration, else the embedded bundle)")
	fs.StringVar(&df.config, "config", "", "configuration file (default: $CMDGATE_CONFIG)")
	fs.StringVar(&df.cwd, "cwd", "", "directory the command runs in (default: the workspace)")
	fs.StringVar(&df.workspace, "workspace", "", "workspace directory (default: the current directory)")
	fs.StringVar(&df.script, "c", "", "shell script to decide")
	fs.StringVar(&df.profile, "profile", policies.ProfileStrict, "rule profile: strict, or sandboxed (as a gateway with the linux sandbox decides: its private /tmp and own home included)")
	fs.StringVar(&df.batch, "batch", "", "decide the requests of FILE (- for stdin), one JSON object per line")
	fs.IntVar(&df.maxBytes, "max-bytes", 0, fmt.Sprintf("largest script accepted, in bytes (default: policy.max_script_bytes of the configuration, else %d)", parse.DefaultMaxBytes))
	fs.StringVar(&df.url, "url", "", "ask this gateway (POST /v1/decide) instead of deciding offline")
	fs.BoolVar(&df.remote, "remote", false, "ask the gateway at $CMDGATE_URL (else "+defaultURL+") instead of deciding offline")
	fs.StringVar(&df.tokenFile, "token-file", "", "with --url/--remote: read the token from this file instead of $CMDGATE_TOKEN")
	fs.StringVar(&df.shellMode, "shell-mode", "", "with --url/--remote: default or direct")
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })
	modes := 0
	for _, set := range []bool{setFlags["c"], len(operands) > 0, df.batch != ""} {
		if set {
			modes++
		}
	}
	if modes != 1 || (setFlags["max-bytes"] && df.maxBytes <= 0) {
		fmt.Fprintln(m.Stderr, "cmdgate decide: give exactly one of -c SCRIPT, -- ARGV... or --batch FILE (and a positive --max-bytes)")
		fs.Usage()
		return exitUsage
	}
	if df.url != "" || df.remote {
		return m.decideRemote(ctx, df, setFlags, operands)
	}
	for _, name := range []string{"token-file", "shell-mode"} {
		if setFlags[name] {
			fmt.Fprintf(m.Stderr, "cmdgate decide: --%s needs --url or --remote\n", name)
			return exitUsage
		}
	}
	if df.profile != policies.ProfileStrict && df.profile != policies.ProfileSandboxed {
		fmt.Fprintf(m.Stderr, "cmdgate decide: --profile %q is not strict or sandboxed\n", df.profile)
		return exitUsage
	}
	engine, cfg, err := m.loadEngine(ctx, df.policy, df.config, df.profile)
	if err != nil {
		return m.writeError("decide", "FAILED_PRECONDITION", err.Error())
	}
	if df.maxBytes == 0 {
		df.maxBytes = cfg.Policy.MaxScriptBytes // 0 keeps parse's default
	}
	opts, err := m.parseOptions(df)
	if err != nil {
		return m.writeError("decide", "INVALID_ARGUMENT", err.Error())
	}
	if df.batch != "" {
		return m.decideBatch(ctx, engine, df, opts)
	}
	var doc *parse.Document
	if setFlags["c"] {
		doc = parse.Script(df.script, opts)
	} else {
		doc = parse.Argv(operands, opts)
	}
	out, err := decideDoc(ctx, engine, df.stamp(doc))
	if err != nil {
		return m.writeError("decide", "INTERNAL", err.Error())
	}
	return m.writeResult("decide", out)
}

// parseOptions resolves the workspace (default: the current directory) and the cwd
// (default: the workspace; relative to it when relative).
func (m *Main) parseOptions(df decideFlags) (parse.Options, error) {
	ws := df.workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return parse.Options{}, fmt.Errorf("current directory: %w", err)
		}
		ws = wd
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return parse.Options{}, fmt.Errorf("workspace %s: %w", df.workspace, err)
	}
	cwd := ws
	if df.cwd != "" {
		cwd = resolveCwd(ws, df.cwd)
	}
	return parse.Options{Cwd: cwd, Workspace: ws, MaxBytes: df.maxBytes}, nil
}

// stamp gives doc the profile of --profile and, for sandboxed, the guarantees of the
// linux sandbox that profile needs (a private /tmp, its own home), as a gateway
// running that backend would.
func (df decideFlags) stamp(doc *parse.Document) *parse.Document {
	doc.Request.Profile = df.profile
	if df.profile == policies.ProfileSandboxed {
		doc.Sandbox = parse.Sandbox{Backend: "linux", Isolated: true, PrivateTmp: true, Home: linux.SandboxHome}
	}
	return doc
}

// resolveCwd is cwd made absolute against the workspace.
func resolveCwd(ws, cwd string) string {
	if filepath.IsAbs(cwd) {
		return filepath.Clean(cwd)
	}
	return filepath.Join(ws, cwd)
}

// loadEngine loads the policy bundle with the configuration file's policy section:
// the bundle of dir, else of policy.dir, else the embedded one.
func (m *Main) loadEngine(ctx context.Context, dir, configFlag, profile string) (*policies.Engine, Config, error) {
	cfg, err := loadConfig(m.configPath(configFlag))
	if err != nil {
		return nil, cfg, err
	}
	cfg.Policy.Config.Profile = profile
	if dir == "" {
		dir = cfg.Policy.Dir
	}
	opts := []policies.Option{policies.WithConfig(cfg.Policy.Config)}
	if dir != "" {
		if err := isDir(dir); err != nil {
			return nil, cfg, err
		}
		opts = append(opts, policies.WithDir(dir))
	}
	e, err := policies.New(ctx, opts...)
	return e, cfg, err
}

// decideDoc decides one document. An engine failure is an error (the engine's
// fail-closed deny is not a decision worth printing as one).
func decideDoc(ctx context.Context, e *policies.Engine, doc *parse.Document) (decideOutput, error) {
	d, err := e.Decide(ctx, doc)
	if err != nil {
		return decideOutput{}, fmt.Errorf("policy evaluation failed (the gateway would deny): %w", err)
	}
	return decideOutput{
		Decision: d.Action,
		Reasons:  d.Reasons,
		Commands: doc.Commands,
		Revision: d.Revision,
		Sandbox:  d.Sandbox,
	}, nil
}

// maxBatchLine bounds one line of --batch input.
const maxBatchLine = 1 << 20

// batchRequest is one line of --batch input.
type batchRequest struct {
	Command *string  `json:"command"`
	Argv    []string `json:"argv"`
	Cwd     string   `json:"cwd"`
}

// decideBatch decides one request per line of the file (or stdin), streaming: one
// output line per input line, in order, with the engine reused.
func (m *Main) decideBatch(ctx context.Context, e *policies.Engine, df decideFlags, opts parse.Options) int {
	name := df.batch
	var in io.Reader = m.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return m.writeError("decide", "INVALID_ARGUMENT", fmt.Sprintf("batch input: %v", err))
		}
		defer f.Close()
		in = f
	}
	r := bufio.NewReaderSize(in, 64<<10)
	failed := 0
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return m.writeError("decide", "CANCELLED", err.Error())
		}
		raw, tooLong, err := readLine(r, maxBatchLine)
		if errors.Is(err, io.EOF) && raw == nil && !tooLong {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return m.writeError("decide", "INVALID_ARGUMENT", fmt.Sprintf("batch input line %d: %v", line, err))
		}
		if tooLong {
			failed++
			m.writeBatchError(line, fmt.Sprintf("line longer than %d bytes", maxBatchLine))
			continue
		}
		out, perr := decideLine(ctx, e, raw, opts, df)
		if perr != nil {
			failed++
			m.writeBatchError(line, perr.Error())
			continue
		}
		out.Line = line
		m.writeResult("decide", out)
	}
	if failed > 0 {
		fmt.Fprintf(m.Stderr, "cmdgate decide: %d batch lines were not decided\n", failed)
		return exitError
	}
	return exitOK
}

// decideLine decides one batch line.
func decideLine(ctx context.Context, e *policies.Engine, raw []byte, opts parse.Options, df decideFlags) (decideOutput, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var req batchRequest
	if err := dec.Decode(&req); err != nil {
		return decideOutput{}, fmt.Errorf("not a request object: %v", err)
	}
	if dec.More() {
		return decideOutput{}, errors.New("more than one JSON value on the line")
	}
	if (req.Command == nil) == (req.Argv == nil) {
		return decideOutput{}, errors.New(`give exactly one of "command" and "argv"`)
	}
	if req.Cwd != "" {
		opts.Cwd = resolveCwd(opts.Workspace, req.Cwd)
	}
	var doc *parse.Document
	if req.Command != nil {
		doc = parse.Script(*req.Command, opts)
	} else {
		if len(req.Argv) == 0 {
			return decideOutput{}, errors.New(`"argv" is empty`)
		}
		doc = parse.Argv(req.Argv, opts)
	}
	return decideDoc(ctx, e, df.stamp(doc))
}

// readLine reads one line without its newline. A line longer than max is consumed
// and reported with tooLong (its content dropped), so the next line is read normally.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := r.ReadLine()
		if len(line)+len(chunk) > max {
			tooLong = true
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		if err != nil {
			if line == nil && !tooLong {
				return nil, false, err
			}
			if tooLong {
				return nil, true, nil
			}
			return line, false, nil
		}
		if !isPrefix {
			if tooLong {
				return nil, true, nil
			}
			if line == nil {
				line = []byte{}
			}
			return line, false, nil
		}
	}
}

// writeBatchError prints the error line of a batch input line (stdout, in order).
func (m *Main) writeBatchError(line int, message string) {
	out := struct {
		SchemaVersion int      `json:"schema_version"`
		OK            bool     `json:"ok"`
		Type          string   `json:"type"`
		Line          int      `json:"line"`
		Error         cliError `json:"error"`
	}{schemaVersion, false, "decide", line, cliError{Code: "INVALID_ARGUMENT", Message: message}}
	b, _ := json.Marshal(out)
	m.Stdout.Write(append(b, '\n'))
}

// decideRemote asks a gateway instead of deciding offline (`decide --url URL` or
// `--remote`): POST /v1/decide with the script or the argv. The gateway decides with its
// own bundle, configuration and workspace and records the decision in its audit log;
// its answer is printed in the envelope, exit 0 whenever it answered.
func (m *Main) decideRemote(ctx context.Context, df decideFlags, setFlags map[string]bool, argv []string) int {
	for _, name := range []string{"policy", "config", "workspace", "max-bytes", "batch"} {
		if setFlags[name] {
			fmt.Fprintf(m.Stderr, "cmdgate decide: --%s decides offline; the gateway uses its own (drop it, or drop --url/--remote)\n", name)
			return exitUsage
		}
	}
	if df.remote && df.url != "" {
		fmt.Fprintln(m.Stderr, "cmdgate decide: give --url URL or --remote, not both")
		return exitUsage
	}
	c, err := m.newClient(df.url, df.tokenFile)
	if err != nil {
		return m.writeError("decide", "INVALID_ARGUMENT", err.Error())
	}
	body := map[string]any{}
	if setFlags["c"] {
		body["command"] = df.script
	} else {
		body["argv"] = argv
	}
	if setFlags["cwd"] {
		body["cwd"] = df.cwd
	}
	if setFlags["shell-mode"] {
		body["shell_mode"] = df.shellMode
	}
	status, answer, err := c.call(ctx, "POST", "/v1/decide", nil, body)
	if err != nil {
		return m.clientFailed("decide", err)
	}
	return m.writeAnswer("decide", status, answer)
}
