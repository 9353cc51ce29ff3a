// Package gateway is cmdgate's core: the pipeline that parses, decides, audits and
// runs each command (parse → policies → audit → executor), the token store, the
// policy reloads and the metrics, with nothing of any transport in it.
//
// New(ctx, Options) opens everything the gateway needs (the workspace, the token store
// and the audit store in Options.DataDir, the policy engine, the sandbox backend) and
// fails at start with a clear error when any of them is missing or broken; Close(ctx)
// closes the stores.
//
// # The core and its fronts
//
// Server.Decide(ctx, Caller, *Request) and Server.Exec(ctx, Caller, *Request) take a
// typed request (script or argv, cwd, shell mode, stdin, limits, task) and who sent it
// (principal, request id, endpoint, address, logger), validate it whatever front built
// it (Request.validate: exactly one of script and argv, limits within the executor's
// bounds, no NUL or invalid UTF-8), and return an Outcome (decision, decision id,
// revision, reasons, the parsed document, the result when something ran) or an *Error
// with a contract code. The fronts are packages of their own that import this one,
// never the other way round: gateway/httpapi (the echo HTTP API of contract 3 of
// docs/architecture.md, with its roles, error statuses, request ids, log lines and
// graceful shutdown) and gateway/mcp (the MCP server, mounted on the HTTP front's
// listener, and over stdio by `cmdgate mcp`). Each maps its input to a Request and a
// Caller, calls the core, and writes the Outcome or *Error in its own format.
//
// # Background jobs
//
// Server.StartJob decides a job like Exec (jobs.go; deny at once, ask through an
// approval that starts the job once approved) and, allowed, creates its directory under
// the job root (package jobs) and hands it to the job host (jobhost.go): a detached
// process (`cmdgate job host`) per job root and configuration, started when a job first
// needs it, that runs every job with the same backend as the gateway (a warm pool of
// its own), writes the logs and job.json, holds each running job's lock (how anyone sees
// it alive; a job whose host died is failed the next time it is read) and appends each
// job's end as an execution record. Job, Jobs, TailJob, WaitJob, KillJob and GCJobs read
// and control jobs; an agent sees only its own. DoJob (jobcall.go) carries out one job
// call for any front and answers its one JSON object, so that POST /v1/jobs, the job_*
// MCP tools and `cmdgate job` answer the same bytes. OpenJobs answers the calls that
// only read without opening the pipeline.
//
// # The pipeline
//
// POST /v1/exec and POST /v1/decide take {"command": "script"} or {"argv": [...]}
// (exactly one), and optionally cwd, shell_mode ("default" or "direct", which needs
// argv), stdin, timeout_ms, max_output_chars and task. Each request goes, in this order:
//
//  1. validate: the body is read under the body limit (TOO_LARGE past it), must be
//     valid UTF-8 (checked on the raw bytes: Go's JSON decoder would replace invalid
//     sequences silently), exactly one JSON object, with no unknown or repeated member,
//     every member of its exact type (no null, integers without fraction or exponent),
//     no NUL character and no unpaired surrogate escape in any string, the limits within
//     the executor's bounds (exec_command's error codes). Every refusal is INVALID_ARGUMENT naming the
//     member;
//  2. resolve the cwd inside the workspace (Workspace.Resolve: `/` and `\` both
//     separate, relative to the workspace, symlinks resolved, outside refused);
//  3. parse (parse.Script or parse.Argv with the resolved cwd and the workspace), and
//     fill the principal, the request id, the task and the profile. A request whose
//     shape (everything its document depends on: script or argv, shell mode, resolved
//     cwd, principal, profile, task) was seen lately takes the document remembered for
//     it (parsed.go), with its own request id;
//  4. decide (policies.Engine.Decide, or DecideKeyed with the shape for a remembered
//     request; the engine answers a document it decided before from its decision cache,
//     Options.DecisionCache; an evaluation error is a deny, fail closed);
//  5. append the decision record (kind decision: the policy input, the action, the
//     reasons, the bundle revision; a remembered request's input from its
//     audit.InputTemplate, stored the same) and go on only once it is durable. An audit
//     store that cannot take it is 503 UNAVAILABLE and nothing runs;
//  6. deny: 403 DENIED with decision, decision_id and reasons. Ask: the request becomes
//     a pending approval (approvals.go: stored in StateFile, its approval record
//     appended) and the answer is APPROVAL_PENDING with its id, or, when the request
//     waits (Request.Wait), what a human decided by then: the run's result, DENIED, or
//     still pending. Approving (DecideApproval: approver or admin, never the requester)
//     appends a decision record that allows the held request and runs it, once, exactly
//     as held. With approvals disabled ask is DENIED. /v1/decide answers every
//     decision, deny and ask included, as 200
//     {decision, decision_id, revision, reasons, commands, sandbox}: its client asked
//     what the policy says;
//  7. allow on /v1/exec: run through the executor (Spec.Network from the decision),
//     append the execution record (kind execution, decision_id naming the decision
//     record, the exit code, duration, truncation and byte counts, the executor's error
//     if any) and answer 200 {decision, decision_id, revision, cwd, command, exit_code,
//     stdout, stderr, stdout_truncated, stderr_truncated, timed_out, duration_ms,
//     stdout_bytes, stderr_bytes}. A non-zero exit or a timeout is a result. An
//     execution record that cannot be appended after the command ran is logged at error
//     level and counted (cmdgate_audit_append_failures_total{kind="execution"}); the
//     answer still goes out, since the decision was durable before the command ran.
//
// A command stops when its timeout passes, when its client goes away (the record says
// stopped client_gone) or when the shutdown grace is over (stopped shutdown).
//
// # Policy reload
//
// ReloadPolicy (SIGHUP in `cmdgate serve`) and, when Options.PolicyDir is set, a
// watcher on that directory and every directory below it (fsnotify, debounced by
// Options.ReloadDebounce, hidden files ignored) load the bundle again. The engine
// validates and compiles it before swapping it in atomically, so a request decides with
// the old bundle or the new one, never a half-loaded one; a bundle that does not
// compile is rejected with its errors logged, the previous one keeps serving. Every
// attempt, the start included, appends a policy_load record: decision loaded or
// rejected, the revision serving afterwards, and in detail the trigger (start, reload,
// file_change), the source, ok, the previous revision and the compile errors.
//
// # Shutdown
//
// Drain marks the start of a shutdown; Abort stops the running commands (their context
// is cancelled with ErrShutdown; the executor kills the process tree, and their
// execution records say stopped shutdown). Close waits for running commands, stops the
// watcher and closes the audit store last, which writes its checkpoint.
//
// # Metrics
//
// Server.Registry is a registry of the Server's own (not the global one), which a
// front serves (GET /metrics) and adds its own metrics to:
//
//	cmdgate_decisions_total{action,rule}      decisions, by action and the rule that gave it
//	cmdgate_decision_cache_total{result}      hit, miss (none while the cache is off)
//	cmdgate_exec_duration_seconds             histogram of command wall time
//	cmdgate_audit_append_seconds              histogram of durable append latency
//	cmdgate_audit_append_failures_total{kind} appends that failed
//	cmdgate_commands_in_flight                gauge
//	cmdgate_policy_reloads_total{result}      ok, error
//
// plus the Go and process collectors.
//
// # Sandbox
//
// Options.Sandbox "auto" chooses the linux backend (package executor/linux) where one
// sandbox can be built at start-up, and otherwise the process backend with a warning,
// in the logs and in /healthz, that it isolates neither the file system nor the network,
// so the policy is the only boundary. "linux" refuses to start where its sandbox cannot
// be built; "docker" runs every command in a task's container and refuses a request
// that names no task (tasks.go: Options.Tasks turns tasks on beside another backend;
// a request whose task is a task's id runs in that task's container). A decision's
// sandbox.network gives the command the outside world through the sandbox's uplink,
// never the host's own services (see executor/linux). GET /healthz answers
// {"status":"ok","sandbox":{"backend","linux":{"helper","uplink","caches","landlock","rlimits",
// "cgroup","limits","unavailable","pool"},"caches":{"enabled","dir","home"},"warnings"}}.
//
// What the backend guarantees reaches every policy input as its sandbox object
// (parse.Sandbox: isolated, private /tmp, the command's own home), so the rules allow
// what the sandbox makes harmless there and nothing more. Unless Options.NoCaches, the
// workspace's tool caches (executor.Caches, under Options.CachesDir, one area per
// workspace) give commands a HOME and build caches that persist. GET /v1/policy/prompt
// is the system prompt of what is in force (Server.PromptEnv).
package gateway
