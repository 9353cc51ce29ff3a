package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const taskUsage = `usage: cmdgate task create --repo URL [--ref REF | --pr N [--target BRANCH]]
                           [--image IMAGE] [--network external|none] [--cpus N]
                           [--memory SIZE] [--pids N] [--disk SIZE]
                           [--timeout-seconds N] [--no-install] [--depth N]
                           [--wait DURATION]
       cmdgate task list [--state STATE] [--limit N]
       cmdgate task show ID [--wait DURATION]
       cmdgate task rm ID

Per-task Docker environments of a running gateway (client of /v1/tasks; the gateway
needs tasks.enabled): a task is a container of its own, coding-agent-exec-ID, with the
repository cloned into /workspace/project and its dependencies installed. Run commands
there with cmdgate exec --task ID (or POST /v1/exec, or the MCP tool execute_command
with task), then remove it with cmdgate task rm ID.

  create  create a task as the token's agent: the default branch, --ref, or pull
          request --pr (with --target, the branch it merges into). The answer is the
          task as created; with --wait, as it is once ready or failed (at most 10m).
          SIZE is bytes or a size such as 512m or 4g; --depth 0 clones the whole
          history.
  list    tasks newest first (an agent sees its own): --state live, created,
          initializing, ready, running, stopped, deleted or failed
  show    one task: state, reason, steps (the clone and the installs), limits; with
          --wait, waits while it is being prepared
  rm      stop and remove the task's container (10 s grace): the task, deleted

The gateway is --url, else $CMDGATE_URL: tasks live in a running gateway, so there is
no default. The token is read from $CMDGATE_TOKEN or --token-file. Answers are one
JSON object on stdout, typed task.create, task.list, task.show, task.rm, with the
gateway's task document or its error {code, message}; exit 0 when the gateway answered
(read ok and http_status), 1 when there is no gateway or it could not be reached, 2
for a wrong command line.
`

// runTask implements `cmdgate task create|list|show|rm`.
func (m *Main) runTask(ctx context.Context, args []string) int {
	if code, done := m.groupHelp(args, func(w io.Writer) { fmt.Fprint(w, taskUsage) }); done {
		return code
	}
	sub, args := args[0], args[1:]
	subs := []string{"create", "list", "show", "rm"}
	known := false
	for _, s := range subs {
		known = known || s == sub
	}
	if !known {
		fmt.Fprintf(m.Stderr, "cmdgate task: unknown subcommand %q (%s)\n", sub, strings.Join(subs, ", "))
		fmt.Fprint(m.Stderr, taskUsage)
		return exitUsage
	}
	typ := "task." + sub
	fs := flag.NewFlagSet("task "+sub, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), taskUsage)
		fmt.Fprintf(fs.Output(), "\nflags of task %s:\n", sub)
		fs.PrintDefaults()
	}
	urlFlag := fs.String("url", "", "gateway URL (default: $CMDGATE_URL)")
	tokenFile := fs.String("token-file", "", "read the token from this file instead of $CMDGATE_TOKEN")
	var repo, ref, target, image, network, memory, disk, state *string
	var pr, depth, limit *int
	var pids, timeoutSeconds *int64
	var cpus *float64
	var noInstall *bool
	var wait *time.Duration
	switch sub {
	case "create":
		repo = fs.String("repo", "", "the repository to clone: an http or https URL, without credentials (required)")
		ref = fs.String("ref", "", "branch, tag or commit to check out (default: the default branch)")
		pr = fs.Int("pr", 0, "check out this pull request's (merge request's) head")
		target = fs.String("target", "", "with --pr: the branch it merges into, fetched too")
		image = fs.String("image", "", "container image (default: the gateway's)")
		network = fs.String("network", "", "external (the outside world, never the host's services) or none (default: the gateway's)")
		cpus = fs.Float64("cpus", 0, "CPUs (default: the gateway's, 2)")
		memory = fs.String("memory", "", "memory, swap included, such as 4g (default: the gateway's)")
		pids = fs.Int64("pids", 0, "most processes at once (default: the gateway's, 1024)")
		disk = fs.String("disk", "", "workspace size such as 10g (default: the gateway's; the task says whether the engine enforces it)")
		timeoutSeconds = fs.Int64("timeout-seconds", 0, "longest run of one command in the task (default and most: the gateway's)")
		noInstall = fs.Bool("no-install", false, "do not install the dependencies the project's manifests call for")
		depth = fs.Int("depth", 0, "commits of history to clone (default: the gateway's, 1; 0: the whole history)")
		wait = fs.Duration("wait", 0, "wait up to this long (at most 10m) for the task to be ready or failed")
	case "list":
		state = fs.String("state", "", "only tasks in this state: live, created, initializing, ready, running, stopped, deleted, failed")
		limit = fs.Int("limit", 100, "at most this many, newest first (1-1000)")
	case "show":
		wait = fs.Duration("wait", 0, "wait up to this long (at most 10m) while the task is being prepared")
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
		fmt.Fprintf(m.Stderr, "cmdgate task %s: "+format+"\n", append([]any{sub}, args...)...)
		return exitUsage
	}
	needID := sub == "show" || sub == "rm"
	switch {
	case needID && len(operands) != 1:
		return usageErr("want one task id")
	case !needID && len(operands) != 0:
		return usageErr("want no operand, got %q", operands[0])
	case wait != nil && *wait < 0:
		return usageErr("--wait must not be negative")
	}

	var method, path string
	q := url.Values{}
	var body map[string]any
	switch sub {
	case "create":
		switch {
		case *repo == "":
			return usageErr("--repo URL is required")
		case setFlags["ref"] && setFlags["pr"]:
			return usageErr("give either --ref or --pr, not both")
		case setFlags["pr"] && *pr <= 0:
			return usageErr("--pr must be a positive number")
		case setFlags["target"] && !setFlags["pr"]:
			return usageErr("--target goes with --pr")
		case setFlags["depth"] && *depth < 0:
			return usageErr("--depth must be 0 (the whole history) or more")
		}
		method, path = "POST", "/v1/tasks"
		body = map[string]any{"repo_url": *repo}
		for _, f := range []struct {
			flag, member string
			value        any
		}{
			{"ref", "ref", *ref}, {"pr", "pull_request", *pr}, {"target", "target_branch", *target},
			{"image", "image", *image}, {"network", "network", *network}, {"depth", "clone_depth", *depth},
		} {
			if setFlags[f.flag] {
				body[f.member] = f.value
			}
		}
		if *noInstall {
			body["auto_install_deps"] = false
		}
		limits := map[string]any{}
		for _, f := range []struct {
			flag, member string
			value        any
		}{
			{"cpus", "cpus", *cpus}, {"memory", "memory", *memory}, {"pids", "pids", *pids},
			{"disk", "disk", *disk}, {"timeout-seconds", "timeout_seconds", *timeoutSeconds},
		} {
			if setFlags[f.flag] {
				limits[f.member] = f.value
			}
		}
		if len(limits) > 0 {
			body["limits"] = limits
		}
		if *wait > 0 {
			body["wait_ms"] = max(wait.Milliseconds(), 1)
		}
	case "list":
		method, path = "GET", "/v1/tasks"
		q.Set("limit", strconv.Itoa(*limit))
		if *state != "" {
			q.Set("state", *state)
		}
	case "show":
		method, path = "GET", "/v1/tasks/"+url.PathEscape(operands[0])
		if *wait > 0 {
			q.Set("wait_ms", strconv.FormatInt(max(wait.Milliseconds(), 1), 10))
		}
	case "rm":
		method, path = "DELETE", "/v1/tasks/"+url.PathEscape(operands[0])
	}

	if *urlFlag == "" && m.Getenv("CMDGATE_URL") == "" {
		return m.writeError(typ, "INVALID_ARGUMENT", "no gateway: tasks live in a running gateway (cmdgate serve with tasks.enabled); give its URL with --url or $CMDGATE_URL")
	}
	c, err := m.newClient(*urlFlag, *tokenFile)
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}
	if c.token == "" {
		fmt.Fprintf(m.Stderr, "cmdgate %s: no token: set CMDGATE_TOKEN (cmdgate token create --role agent --name NAME prints one)\n", typ)
	}
	var payload any
	if body != nil {
		payload = body
	}
	status, answer, err := c.call(ctx, method, path, q, payload)
	if err != nil {
		return m.clientFailed(typ, err)
	}
	return m.writeAnswer(typ, status, answer)
}
