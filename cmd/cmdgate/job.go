package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/jobs"
)

const jobUsage = `usage: cmdgate job run [flags] -- ARGV...
       cmdgate job run [flags] -c SCRIPT
       cmdgate job status ID
       cmdgate job tail ID [--max-bytes N] [--lines N]
       cmdgate job wait ID [--timeout MS]
       cmdgate job list [--limit N] [--state STATE]
       cmdgate job kill ID [--signal TERM|INT|KILL]
       cmdgate job gc [--older-than-days N]

Background jobs: a command decided by the policy like cmdgate exec, started in the
sandbox, that runs on after the call; its output goes to logs you read later. Each job
has a directory under the job root (--root, else $CMDGATE_JOB_ROOT, else
$XDG_DATA_HOME/cmdgate/jobs, else ~/.local/share/cmdgate/jobs) with job.json,
stdout.log and stderr.log. An ID is the job's 32 hex characters, or a unique prefix of
6 or more.

  run     start a job, wait up to --snapshot-after ms (at most 10000; sooner when it
          ends) and answer job_id, state, the decision and a snapshot of both logs'
          ends (stdout_tail, stderr_tail, *_observed_bytes, *_included_bytes)
  status  the job: state (running, exited, killed, failed), exit_code, signal, times
  tail    the end of both logs (default the last 64 KiB and 50 lines of each)
  wait    until the job ends or --timeout ms pass (default 30000); finished says which
  list    jobs newest first: root, jobs, truncated, skipped (unreadable job directories)
  kill    stop the job's whole tree: TERM (default; KILL after the grace), INT, or KILL;
          any other signal name is KILL
  gc      remove finished jobs older than --older-than-days (default: the retention, 7)

With --url or $CMDGATE_URL the command is a client of that gateway's /v1/jobs (the
token from $CMDGATE_TOKEN or --token-file). Without, it works alone: the same policy,
sandbox and audit log as cmdgate serve finds them (--config, --data, --workspace,
--sandbox), calling as the agent of $CMDGATE_TOKEN or, without one, as local:USER.

Every answer is one JSON object on stdout, {"schema_version":1,"ok":true,"type":...},
or with "ok":false an error {code, message}: job_not_found, ambiguous_job_id,
invalid_input, denied, approval_pending, invalid_state, launch_failed, io_error,
internal_error. Exit status 0 when ok, 1 when not, 2 for a wrong command line.
`

// runJob implements `cmdgate job`.
func (m *Main) runJob(ctx context.Context, args []string) int {
	if code, done := m.groupHelp(args, func(w io.Writer) { fmt.Fprint(w, jobUsage) }); done {
		return code
	}
	sub, args := args[0], args[1:]
	if sub == "host" {
		return m.jobHost(ctx, args)
	}
	subs := []string{gateway.JobRun, gateway.JobStatus, gateway.JobTailOp, gateway.JobWait, gateway.JobList, gateway.JobKill, gateway.JobGC}
	known := false
	for _, s := range subs {
		known = known || s == sub
	}
	if !known {
		fmt.Fprintf(m.Stderr, "cmdgate job: unknown subcommand %q (%s)\n", sub, strings.Join(subs, ", "))
		fmt.Fprint(m.Stderr, jobUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("job "+sub, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), jobUsage)
		fmt.Fprintf(fs.Output(), "\nflags of job %s:\n", sub)
		fs.PrintDefaults()
	}
	var sf serveFlags
	sf.register(fs)
	root := fs.String("root", "", "job root (default $CMDGATE_JOB_ROOT, else $XDG_DATA_HOME/cmdgate/jobs, else ~/.local/share/cmdgate/jobs)")
	urlFlag := fs.String("url", "", "a gateway to call (default $CMDGATE_URL; none: work alone)")
	tokenFile := fs.String("token-file", "", "read the token from this file instead of $CMDGATE_TOKEN")
	call := gateway.JobCall{Op: sub}
	var script, cwd, task, shellMode, state, signal *string
	var snapshotAfter, timeoutMS, maxBytes, waitMS *int64
	var lines, limit, olderDays *int
	switch sub {
	case gateway.JobRun:
		script = fs.String("c", "", "the command as a shell script")
		cwd = fs.String("cwd", "", "working directory, inside the workspace (default: its root)")
		task = fs.String("task", "", "task name (default: default)")
		shellMode = fs.String("shell-mode", "", "default (through the shell) or direct (argv executed as is)")
		snapshotAfter = fs.Int64("snapshot-after", gateway.DefaultSnapshotAfter.Milliseconds(), "wait up to this many ms (at most 10000) for the job to end before answering")
		timeoutMS = fs.Int64("timeout", 0, "kill the job after this many ms (default: no limit but the gateway's jobs.max_run_time)")
		maxBytes = fs.Int64("max-bytes", gateway.DefaultTailBytes, "bytes of each log's end in the snapshot")
		waitMS = fs.Int64("wait-ms", 0, "when the policy asks a human, wait up to this many ms for the approval")
	case gateway.JobTailOp:
		maxBytes = fs.Int64("max-bytes", gateway.DefaultTailBytes, "at most this many bytes of each log's end")
		lines = fs.Int("lines", gateway.DefaultTailLines, "at most this many lines of each (0: no line limit)")
	case gateway.JobWait:
		timeoutMS = fs.Int64("timeout", gateway.DefaultJobWait.Milliseconds(), "wait at most this many ms (at most 300000)")
	case gateway.JobList:
		limit = fs.Int("limit", 0, "at most this many jobs, newest first (0: all)")
		state = fs.String("state", "", "only jobs in this state: running, exited, killed, failed")
	case gateway.JobKill:
		signal = fs.String("signal", jobs.SigTerm, "TERM, INT or KILL (any other name is KILL)")
	case gateway.JobGC:
		olderDays = fs.Int("older-than-days", 0, "remove finished jobs older than this many days (default: the retention)")
	}
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })
	usageErr := func(format string, args ...any) int {
		fmt.Fprintf(m.Stderr, "cmdgate job %s: "+format+"\n", append([]any{sub}, args...)...)
		return exitUsage
	}

	var body map[string]any // the run request, as POST /v1/jobs takes it
	switch sub {
	case gateway.JobRun:
		switch {
		case setFlags["c"] && len(operands) > 0:
			return usageErr("give either -c SCRIPT or -- ARGV..., not both")
		case !setFlags["c"] && len(operands) == 0:
			return usageErr("nothing to run: give -- ARGV... or -c SCRIPT")
		}
		body = map[string]any{"snapshot_after_ms": *snapshotAfter, "max_bytes": *maxBytes}
		if setFlags["c"] {
			body["command"] = *script
		} else {
			body["argv"] = operands
		}
		for name, v := range map[string]*string{"cwd": cwd, "task": task, "shell_mode": shellMode} {
			if *v != "" {
				body[name] = *v
			}
		}
		if setFlags["timeout"] {
			body["timeout_ms"] = *timeoutMS
		}
		if *waitMS > 0 {
			body["wait_ms"] = *waitMS
		}
	case gateway.JobList, gateway.JobGC:
		if len(operands) != 0 {
			return usageErr("unexpected argument %q", operands[0])
		}
	default:
		if len(operands) != 1 {
			return usageErr("want one job id")
		}
		call.ID = operands[0]
	}
	switch sub {
	case gateway.JobTailOp:
		// 0 is not "the default" here (the call's zero value is): the API and the MCP
		// tool refuse it too.
		if *maxBytes == 0 {
			return m.writeJob(gateway.JobReplyError(sub, &gateway.JobError{Code: jobs.CodeInvalidInput, Message: fmt.Sprintf("max-bytes must be between 1 and %d", gateway.MaxTailBytes)}))
		}
		call.MaxBytes, call.Lines = *maxBytes, *lines
	case gateway.JobWait:
		call.Timeout = time.Duration(*timeoutMS) * time.Millisecond
		if *timeoutMS <= 0 {
			return m.writeJob(gateway.JobReplyError(sub, &gateway.JobError{Code: jobs.CodeInvalidInput, Message: "--timeout must be 1 or more"}))
		}
	case gateway.JobList:
		call.Limit, call.State = *limit, *state
	case gateway.JobKill:
		call.Signal = *signal
	case gateway.JobGC:
		if *olderDays < 0 {
			return m.writeJob(gateway.JobReplyError(sub, &gateway.JobError{Code: jobs.CodeInvalidInput, Message: "--older-than-days must not be negative"}))
		}
		call.OlderThan = time.Duration(*olderDays) * 24 * time.Hour
	}

	if *urlFlag != "" || m.Getenv("CMDGATE_URL") != "" {
		return m.jobRemote(ctx, call, body, *urlFlag, *tokenFile, *root)
	}
	return m.jobLocal(ctx, call, body, sf, *root, *tokenFile)
}

// writeJob prints a job reply and answers its exit status: 0 when ok, 1 when not.
func (m *Main) writeJob(reply []byte) int {
	m.Stdout.Write(append(reply, '\n'))
	var r struct {
		OK    bool `json:"ok"`
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(reply, &r)
	if r.OK {
		return exitOK
	}
	fmt.Fprintf(m.Stderr, "cmdgate job: %s: %s\n", r.Error.Code, r.Error.Message)
	return exitError
}

// jobRemote sends the call to a gateway's /v1/jobs and prints its answer.
func (m *Main) jobRemote(ctx context.Context, call gateway.JobCall, body map[string]any, urlFlag, tokenFile, root string) int {
	fail := func(code, format string, args ...any) int {
		return m.writeJob(gateway.JobReplyError(call.Op, &gateway.JobError{Code: code, Message: fmt.Sprintf(format, args...)}))
	}
	if root != "" {
		return fail(jobs.CodeInvalidInput, "--root names a local job root: a gateway (--url, $CMDGATE_URL) uses its own")
	}
	c, err := m.newClient(urlFlag, tokenFile)
	if err != nil {
		return fail(jobs.CodeInvalidInput, "%v", err)
	}
	if call.ID != "" && (len(call.ID) > 32 || strings.Trim(strings.ToLower(call.ID), "0123456789abcdef") != "") {
		return fail(jobs.CodeInvalidInput, "a job id is 32 hex characters; a prefix of %d or more of them also names one", jobs.MinPrefix)
	}
	base := "/v1/jobs"
	if call.ID != "" {
		base += "/" + strings.ToLower(call.ID)
	}
	q := url.Values{}
	method, path := "GET", base
	var reqBody any
	switch call.Op {
	case gateway.JobRun:
		method, reqBody = "POST", body
	case gateway.JobTailOp:
		path += "/tail"
		q.Set("max_bytes", strconv.FormatInt(call.MaxBytes, 10))
		q.Set("lines", strconv.Itoa(call.Lines))
	case gateway.JobWait:
		path += "/wait"
		q.Set("timeout_ms", strconv.FormatInt(call.Timeout.Milliseconds(), 10))
	case gateway.JobList:
		if call.Limit != 0 {
			q.Set("limit", strconv.Itoa(call.Limit))
		}
		if call.State != "" {
			q.Set("state", call.State)
		}
	case gateway.JobKill:
		method, path, reqBody = "POST", path+"/kill", map[string]any{"signal": call.Signal}
	case gateway.JobGC:
		method, path, reqBody = "POST", "/v1/jobs/gc", map[string]any{"older_than_days": int64(call.OlderThan / (24 * time.Hour))}
	}
	status, answer, err := c.call(ctx, method, path, q, reqBody)
	if err != nil {
		return fail(jobs.CodeIO, "%v", err)
	}
	var probe struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &probe) == nil && probe.OK != nil {
		return m.writeJob(bytes.TrimSpace(answer))
	}
	// An answer of the gateway's own (authentication, limits): its error, in job terms.
	if probe.Error == nil {
		return fail(gateway.JobCodeInternal, "the gateway answered HTTP %d without a job answer", status)
	}
	return m.writeJob(gateway.JobReplyError(call.Op, gateway.AsJobError(&gateway.Error{Code: probe.Error.Code, Message: probe.Error.Message})))
}

// jobLocal carries out the call in this process: the calls that read need only the
// job root; run, kill and gc open the whole pipeline, as cmdgate mcp does.
func (m *Main) jobLocal(ctx context.Context, call gateway.JobCall, body map[string]any, sf serveFlags, root, tokenFile string) int {
	fail := func(code, format string, args ...any) int {
		return m.writeJob(gateway.JobReplyError(call.Op, &gateway.JobError{Code: code, Message: fmt.Sprintf(format, args...)}))
	}
	if sf.logLevel == "" && m.Getenv("CMDGATE_LOG_LEVEL") == "" {
		sf.logLevel = "warn" // stderr is for what went wrong, not for the start-up lines
	}
	opts, _, err := m.serveConfig(sf)
	if err != nil {
		return fail(jobs.CodeInvalidInput, "%v", err)
	}
	opts.Linux.Pool = -1 // this process runs no command itself: the job host does
	// Past their retention jobs go by serve's start or by gc (which says which), not by
	// every command of a user working alone.
	opts.Jobs.NoStartGC = true
	if root != "" {
		if opts.Jobs.Root, err = jobs.ResolveRoot(root, m.Getenv); err != nil {
			return fail(jobs.CodeInvalidInput, "%v", err)
		}
	}
	secret, err := m.token(tokenFile)
	if err != nil {
		return fail(jobs.CodeInvalidInput, "%v", err)
	}
	caller := gateway.Caller{Name: localName(), Role: gateway.RoleAgent, RequestID: gateway.NewRequestID(), Source: "cli", Log: opts.Logger}
	if secret != "" {
		tokens, err := gateway.OpenTokens(opts.DataDir)
		if err != nil {
			return fail(gateway.JobCodeInternal, "%v", err)
		}
		tok, err := tokens.Check(secret)
		if err != nil {
			return fail(gateway.JobCodeDenied, "the token is not valid: %v", err)
		}
		caller.Name, caller.Role = tok.Name, tok.Role
	}

	var srv *gateway.Server
	switch call.Op {
	case gateway.JobStatus, gateway.JobTailOp, gateway.JobWait, gateway.JobList:
		if srv, err = gateway.OpenJobs(opts); err != nil {
			return fail(jobs.CodeInvalidInput, "%v", err)
		}
	default:
		if srv, err = gateway.New(ctx, opts); err != nil {
			return fail(gateway.JobCodeInternal, "%v", err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			srv.Close(cctx)
		}()
	}
	if call.Op == gateway.JobRun {
		raw, _ := json.Marshal(body)
		run, err := srv.DecodeJobRun(raw)
		if err != nil {
			return m.writeJob(gateway.JobReplyError(call.Op, gateway.AsJobError(err)))
		}
		call.Run, call.SnapshotAfter, call.MaxBytes = run.Run, run.SnapshotAfter, run.MaxBytes
	}
	reply, _ := srv.DoJob(ctx, caller, call)
	return m.writeJob(reply)
}

// localName is the principal of `cmdgate job` working alone without a token.
func localName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "local:" + u.Username
	}
	return "local:" + strconv.Itoa(os.Getuid())
}

// jobHost implements the hidden `cmdgate job host --root ROOT --key KEY`, the process
// that runs the jobs of a job root (started by the gateway or `cmdgate job run`).
func (m *Main) jobHost(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("job host", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	var sf serveFlags
	sf.register(fs)
	root := fs.String("root", "", "job root")
	key := fs.String("key", "", "the host's key")
	operands, err := m.parseFlags(fs, args)
	if err != nil || len(operands) != 0 || *root == "" || *key == "" {
		fmt.Fprintln(m.Stderr, "usage: cmdgate job host [serve flags] --root ROOT --key KEY (started by cmdgate itself)")
		return exitUsage
	}
	var ready *os.File
	if f := os.NewFile(3, "ready"); f != nil {
		if _, err := f.Stat(); err == nil {
			ready = f
		}
	}
	fail := func(err error) int {
		if ready != nil {
			b, _ := json.Marshal(map[string]any{"ok": false, "message": err.Error()})
			ready.Write(append(b, '\n'))
		}
		fmt.Fprintf(m.Stderr, "cmdgate job host: %v\n", err)
		return exitError
	}
	opts, _, err := m.serveConfig(sf)
	if err != nil {
		return fail(err)
	}
	if err := gateway.RunJobHost(ctx, opts, *root, *key, ready); err != nil {
		fmt.Fprintf(m.Stderr, "cmdgate job host: %v\n", err)
		return exitError
	}
	return exitOK
}
