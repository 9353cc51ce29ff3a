// Package httpapi is cmdgate's HTTP API (contract 3 of docs/architecture.md): an echo
// front over the gateway's core (package gateway). It maps each request body to a
// gateway.Request and the token to a gateway.Caller, calls Server.Decide or
// Server.Exec, and writes the Outcome or *gateway.Error as the contract says; around
// that it adds bearer-token authentication with roles and a failure budget per client
// address, request ids, one log line per request, the HTTP metrics and a graceful
// shutdown. Other fronts served over HTTP (the MCP server) are mounted on the same
// listener with Front.Mount, behind the same tokens.
//
// New(core) builds the front with the HTTP settings of the core's Options (BodyLimit,
// RequestTimeout, the HTTP server's timeouts, AuthFailureRate and AuthFailureBurst,
// ShutdownGrace); Serve(ctx, listener) answers until ctx ends and then shuts down
// gracefully; Handler() is the same API for a server of your own. The HTTP framework
// (echo) stays behind this API.
//
// # Roles
//
// Every endpoint but /healthz needs "Authorization: Bearer <token>" (gateway.TokenStore: hashed
// at rest, compared in constant time, revocable; `cmdgate token create`). Admin may do
// everything; otherwise:
//
//	POST /v1/exec, POST /v1/decide           agent
//	GET /v1/audit, GET /v1/audit/verify      auditor
//	GET /v1/policy, GET /v1/policy/prompt    any role
//	GET /v1/whoami                           any role
//	GET /v1/approvals, GET /v1/approvals/{id} any role (an agent: its own)
//	GET /v1/approvals/stream                 approver, auditor (server-sent events)
//	GET /v1/grants                           approver, auditor
//	DELETE /v1/grants/{id}                   approver
//	/ui/ (MountStatic)                       no token: static files whose calls carry one
//	POST /v1/approvals/{id}/approve, …/deny  approver (the core refuses, and audits,
//	                                         every other role and the requester)
//	GET /metrics                             admin
//	GET /healthz                             no token
//
// No, malformed, unknown or revoked token: 401 UNAUTHENTICATED with WWW-Authenticate:
// Bearer, appended as an auth_failure record (remote address, reason missing, malformed,
// unknown or revoked, method, path; never the presented token). A valid token of another
// role: 403 FORBIDDEN. Failures are rate-limited per client address (the peer address:
// X-Forwarded-For is not trusted) with a token bucket (gateway.Options.AuthFailureBurst at once,
// then AuthFailureRate per second): past it, every request from that address, valid
// token or not, is 429 RATE_LIMITED with Retry-After until the bucket refills, and
// those refusals are counted and logged rather than audited one by one (the next audited
// failure carries rate_limited_before), so a flood cannot flood the audit log.
//
// # Errors
//
// Every error answer is {"error": {"code", "message", "request_id", ...}}; DENIED adds
// decision, decision_id and reasons. asError maps errors to codes in one place (echo's
// own errors, then gateway.AsError), and the one echo HTTPErrorHandler writes them:
//
//	400 INVALID_ARGUMENT   malformed body, bad member, cwd outside the workspace, bad query
//	401 UNAUTHENTICATED    no, malformed, unknown or revoked token
//	403 DENIED             the policy said deny or ask
//	403 FORBIDDEN          the token's role may not use the endpoint
//	404 NOT_FOUND          no such endpoint
//	405 METHOD_NOT_ALLOWED wrong method for the endpoint
//	413 TOO_LARGE          body over gateway.Options.BodyLimit (1 MiB)
//	422 NOT_DIRECTORY      cwd missing or not a directory
//	422 COMMAND_NOT_FOUND  direct mode, argv[0] not found (the message names it)
//	202 APPROVAL_PENDING   the command waits for a human's approval (approval_id)
//	409 CONFLICT           an approval decided twice, or decided after it expired
//	429 RATE_LIMITED       too many failed authentications from the address
//	500 INTERNAL           anything unexpected, panics included: no detail is sent
//	503 UNAVAILABLE        audit store or token store unavailable, request timed out,
//	                       shutting down
//
// # Request ids
//
// Every request has an id: the client's X-Request-Id when it is 1 to 128 printable
// ASCII characters without spaces, else a new sortable one (26 characters, ULID
// layout). It is echoed in the X-Request-Id header, is request.id of the policy input,
// the request_id of the request's audit records and of its log lines.
//
// # Logs
//
// Options.Logger (log/slog) gets one line per request with stable keys: request_id,
// principal, role, method, path, status, duration_ms, remote_addr, decision; plus start,
// policy loads, authentication failures, shutdown and errors. Error causes are logged,
// never sent.
//
// # Shutdown
//
// When Serve's ctx ends, the listener closes and /healthz answers 503 shutting_down;
// requests in progress and their commands get gateway.Options.ShutdownGrace (10 s). Commands
// still running then are stopped (their context is cancelled with ErrShutdown; the
// executor kills the process tree), their execution records say stopped shutdown, and
// their clients get 503 UNAVAILABLE. Abort (a second interrupt) stops them at once.
// Call the core's Close after Serve returns.
//
// # Metrics
//
// GET /metrics (admin) serves the core's registry (gateway.Server.Registry), to which
// this front adds:
//
//	cmdgate_auth_failures_total{reason}       missing, malformed, unknown, revoked, rate_limited
//	cmdgate_http_requests_total{path,code}    by route pattern ("other" for unknown paths)
//	cmdgate_http_request_duration_seconds{path}
package httpapi
