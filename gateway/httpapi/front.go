package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cmdgate/cmdgate/gateway"
)

// PromptTools are the system prompt's lines for the HTTP API (gateway.SetPromptTools).
var PromptTools = []string{
	"`POST /v1/exec` (cmdgate's HTTP API): run a command (a shell script, or an argument vector) and get its exit code, stdout and stderr",
	"`POST /v1/decide` (cmdgate's HTTP API): ask whether a command would be allowed, and why not, without running it",
}

// JobPromptTools is the system prompt's line for the jobs API, when jobs are on.
var JobPromptTools = []string{
	"`POST /v1/jobs` (cmdgate's HTTP API): start a long command as a background job decided by the same policy, then `GET /v1/jobs/{id}`, `…/tail`, `…/wait` and `POST /v1/jobs/{id}/kill`",
}

// TaskPromptTools is the system prompt's line for the tasks API, when tasks are on.
var TaskPromptTools = []string{
	"`POST /v1/tasks` (cmdgate's HTTP API): create a task's own Docker environment with a repository cloned into /workspace/project (`repo_url`, and `ref` or `pull_request`), then run commands there with `POST /v1/exec` naming its `task_id` in `task`; `GET /v1/tasks/{id}` (with `wait_ms` until it is ready), `GET /v1/tasks`, `DELETE /v1/tasks/{id}` when done",
}

// OutputPromptTools is the system prompt's line for the outputs API, when outputs are
// kept.
var OutputPromptTools = []string{
	"`GET /v1/outputs/{output_id}?stream=stdout&start=BYTE&size=4096` (cmdgate's HTTP API): page through the whole output of a command whose result was cut (its `output_id`)",
}

// ReadonlyPromptTools is the system prompt's line for the read-only language, when
// files are on its allowlist.
var ReadonlyPromptTools = []string{
	"`POST /v1/execute` (cmdgate's HTTP API): read an allowlisted file through a small read-only pipeline language that never runs a process (`cat FILE | grep -n TODO | head -n 50`; stages cat, nl, head, tail, wc, sort, grep, sed -n), paged by `start` and `size`",
}

// Tools are the system prompt's lines for the HTTP API over g: the jobs API only when
// g has jobs, and so on for each feature.
func Tools(g *gateway.Server) []string { return ToolsFor(g.Features()) }

// ToolsFor are Tools for a gateway offering f.
func ToolsFor(f gateway.Features) []string {
	tools := PromptTools
	if f.Outputs {
		tools = slices.Concat(tools, OutputPromptTools)
	}
	if f.Readonly {
		tools = slices.Concat(tools, ReadonlyPromptTools)
	}
	if f.Jobs {
		tools = slices.Concat(tools, JobPromptTools)
	}
	if f.Tasks {
		tools = slices.Concat(tools, TaskPromptTools)
	}
	return tools
}

// Front is the HTTP API over one gateway core. Create it with New, serve it with Serve
// (or mount Handler in a server of your own).
type Front struct {
	core    *gateway.Server
	opts    gateway.Options // the HTTP settings: BodyLimit, timeouts, the failure budget, ShutdownGrace
	log     *slog.Logger
	echo    *echo.Echo
	routes  map[string]bool // the registered paths, for metric labels
	limiter *authLimiter
	metrics *metrics
}

// New builds the HTTP API over core, with the HTTP settings of core's Options, and
// registers its metrics on core's registry. The system prompt lists the HTTP API's
// tools of core's configuration (Tools); a front mounted after it sets them again.
func New(core *gateway.Server) *Front {
	opts := core.Options()
	f := &Front{core: core, opts: opts, log: opts.Logger,
		limiter: newAuthLimiter(opts.AuthFailureRate, opts.AuthFailureBurst),
		metrics: newMetrics(core.Registry())}
	f.echo = f.newEcho()
	core.SetPromptTools(Tools(core)...)
	return f
}

// Core is the gateway core the front serves.
func (f *Front) Core() *gateway.Server { return f.core }

// Handler is the HTTP API as an http.Handler.
func (f *Front) Handler() http.Handler { return f.echo }

// Mount serves h at path (and below it) for the given roles (admin always may), behind
// the same bearer tokens, roles, failure budget and audit of refused authentications
// as the HTTP API. It must be called before Serve.
func (f *Front) Mount(path string, h http.Handler, roles ...gateway.Role) {
	handler := echo.WrapHandler(h)
	f.echo.Any(path, handler, f.require(roles...))
	f.echo.Any(path+"/*", handler, f.require(roles...))
	f.routes[path] = true
	f.routes[path+"/*"] = true
}

// MountStatic serves h at path (a directory path ending in "/", and below it) to
// anyone, without a token: for static files only (the web console's), whose every
// call to the API carries a token of its own. path without its slash redirects there.
func (f *Front) MountStatic(path string, h http.Handler) {
	f.echo.GET(path+"*", echo.WrapHandler(h))
	f.echo.HEAD(path+"*", echo.WrapHandler(h))
	f.echo.GET(strings.TrimSuffix(path, "/"), func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, path)
	})
	f.routes[path+"*"] = true
	f.routes[strings.TrimSuffix(path, "/")] = true
}

// Serve answers HTTP requests on ln until ctx ends, then shuts down gracefully: it stops
// accepting, lets requests and running commands finish for Options.ShutdownGrace, then
// stops the commands still running (their execution records say so), waits for their
// answers and returns. It does not close the core: call its Close after it.
func (f *Front) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           f.echo,
		ReadHeaderTimeout: f.opts.ReadHeaderTimeout,
		ReadTimeout:       f.opts.ReadTimeout,
		WriteTimeout:      f.opts.WriteTimeout,
		IdleTimeout:       f.opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(f.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	f.log.Info("shutting down", "grace", f.opts.ShutdownGrace.String())
	return f.shutdown(hs, served)
}

// shutdown stops hs gracefully: requests get ShutdownGrace, then running commands are
// stopped and their handlers get a bounded time to answer.
func (f *Front) shutdown(hs *http.Server, served <-chan error) error {
	f.core.Drain()
	grace := max(f.opts.ShutdownGrace, 0)
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(graceCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		f.log.Warn("shutdown grace over: stopping the commands still running")
		f.core.Abort()
		finalCtx, cancel := context.WithTimeout(context.Background(), f.core.StopBound())
		defer cancel()
		err = hs.Shutdown(finalCtx)
		if err != nil {
			f.log.Error("requests still running after the commands were stopped: closing their connections", "error", err)
			hs.Close()
		}
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && serr != nil {
		return serr
	}
	return err
}

// reqInfo is what the gateway knows about one request, for its log line and records.
type reqInfo struct {
	id       string
	start    time.Time
	timing   *gateway.Timing // the phases of the request (Server-Timing)
	token    *gateway.Token  // after authentication
	decision string          // the policy's action, when one was taken
	log      *slog.Logger
}

const infoKey = "cmdgate.request"

func info(c echo.Context) *reqInfo {
	if ri, ok := c.Get(infoKey).(*reqInfo); ok {
		return ri
	}
	// Only reachable if a route bypassed the middleware: give a usable value.
	ri := &reqInfo{id: gateway.NewRequestID(), start: time.Now(), log: slog.Default()}
	c.Set(infoKey, ri)
	return ri
}

// newEcho builds the HTTP front: middleware (request id and log line, panic recovery,
// body limit), the routes with their roles, and the one error handler.
func (f *Front) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = f.handleError
	// The client address is the peer's: X-Forwarded-For and X-Real-IP are not trusted,
	// so a client cannot pick the address its failures are counted against.
	e.IPExtractor = echo.ExtractIPDirect()

	e.Pre(f.requestMiddleware)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisableStackAll:     true,
		DisableErrorHandler: true, // the request middleware hands the error to handleError
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			info(c).log.Error("panic while handling the request", "error", err.Error(), "stack", string(stack))
			return &gateway.Error{Code: gateway.CodeInternal, Message: "internal error", Err: fmt.Errorf("panic: %w", err)}
		},
	}))
	e.Use(middleware.BodyLimit(strconv.FormatInt(f.opts.BodyLimit, 10) + "B"))
	timeout := middleware.ContextTimeout(f.opts.RequestTimeout)

	e.GET("/healthz", f.handleHealth)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(f.core.Registry(), promhttp.HandlerOpts{Registry: f.core.Registry()})), f.require(gateway.RoleAdmin), timeout)
	v1 := e.Group("/v1")
	v1.POST("/exec", f.handleExec, f.require(gateway.RoleAgent))
	v1.POST("/decide", f.handleDecide, f.require(gateway.RoleAgent), timeout)
	v1.GET("/audit", f.handleAudit, f.require(gateway.RoleAuditor), timeout)
	v1.GET("/audit/verify", f.handleVerify, f.require(gateway.RoleAuditor), timeout)
	v1.GET("/policy", f.handlePolicy, f.require(gateway.RoleAgent, gateway.RoleApprover, gateway.RoleAuditor), timeout)
	v1.GET("/policy/prompt", f.handlePrompt, f.require(gateway.RoleAgent, gateway.RoleApprover, gateway.RoleAuditor), timeout)
	anyRole := f.require(gateway.RoleAgent, gateway.RoleApprover, gateway.RoleAuditor)
	v1.GET("/whoami", f.handleWhoami, f.require(gateway.RoleAgent, gateway.RoleApprover, gateway.RoleAuditor, gateway.RoleReader), timeout)
	v1.GET("/approvals", f.handleApprovals, anyRole, timeout)
	v1.GET("/approvals/stream", f.handleApprovalStream, f.require(gateway.RoleApprover, gateway.RoleAuditor))
	v1.GET("/approvals/:id", f.handleApproval, anyRole) // wait_ms bounds it
	// Every role reaches the decision: the core refuses (and audits) all but approvers,
	// and a requester deciding its own approval.
	v1.POST("/approvals/:id/approve", f.handleApprove, anyRole, timeout)
	v1.POST("/approvals/:id/deny", f.handleDeny, anyRole, timeout)
	v1.GET("/outputs/:id", f.handleOutput, f.require(gateway.RoleAgent, gateway.RoleAuditor, gateway.RoleReader), timeout)
	v1.POST("/execute", f.handleExecute, f.require(gateway.RoleAgent, gateway.RoleReader), timeout)
	f.mountJobs(v1, timeout)
	f.mountTasks(v1, timeout)
	v1.GET("/grants", f.handleGrants, f.require(gateway.RoleApprover, gateway.RoleAuditor), timeout)
	v1.DELETE("/grants/:id", f.handleRevokeGrant, f.require(gateway.RoleApprover), timeout)
	f.routes = map[string]bool{}
	for _, r := range e.Routes() {
		f.routes[r.Path] = true
	}
	return e
}

// requestMiddleware gives every request its id (X-Request-Id when the client sent a
// usable one, else a new one), echoed in the response header, and writes one log line
// per request with stable keys. Errors are handed to handleError here, so the line and
// the metrics see the final status.
func (f *Front) requestMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) {
			id = gateway.NewRequestID()
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		ri := &reqInfo{id: id, start: time.Now(), timing: &gateway.Timing{}}
		ri.log = gateway.RequestLogger(f.log, slog.String("request_id", id))
		c.Set(infoKey, ri)

		if err := next(c); err != nil {
			c.Error(err)
		}

		status := c.Response().Status
		route := c.Path()
		if !f.routes[route] {
			route = "other" // unknown paths must not grow the label set
		}
		elapsed := time.Since(ri.start)
		f.metrics.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		f.metrics.requestTime.WithLabelValues(route).Observe(elapsed.Seconds())
		ri.timing.Each(func(p gateway.Phase, d time.Duration) {
			f.metrics.phases[p].Observe(d.Seconds())
		})
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		if !ri.log.Enabled(c.Request().Context(), level) {
			return nil
		}
		attrs := []any{
			"method", c.Request().Method,
			"path", c.Request().URL.Path,
			"status", status,
			"duration_ms", elapsed.Milliseconds(),
			"remote_addr", c.RealIP(),
		}
		if ri.token != nil {
			attrs = append(attrs, "principal", ri.token.Name, "role", string(ri.token.Role))
		}
		if ri.decision != "" {
			attrs = append(attrs, "decision", ri.decision)
		}
		if ri.log.Enabled(c.Request().Context(), slog.LevelDebug) {
			// Where the time went, phase by phase, in microseconds.
			var phases []any
			ri.timing.Each(func(p gateway.Phase, d time.Duration) { phases = append(phases, p.String(), d.Microseconds()) })
			if len(phases) > 0 {
				attrs = append(attrs, slog.Group("phases_us", phases...))
			}
		}
		ri.log.Log(c.Request().Context(), level, "request", attrs...)
		return nil
	}
}

// handleError is the one place where errors become HTTP answers: the contract's
// {"error": {"code", "message", ...}} body and status, never echo's default body, never
// an internal detail (the cause goes to the log).
func (f *Front) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := asError(err)
	ri := info(c)
	if e.Code == gateway.CodeInternal || e.Code == gateway.CodeUnavailable {
		ri.log.Error("request failed", "code", e.Code, "error", err.Error())
	}
	h := c.Response().Header()
	switch e.Code {
	case gateway.CodeUnauthenticated:
		h.Set(echo.HeaderWWWAuthenticate, `Bearer realm="cmdgate"`)
	case gateway.CodeRateLimited:
		if e.RetryAfter > 0 {
			h.Set(echo.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
		}
	}
	body := errorBody{Error: errorJSON{
		Code: e.Code, Message: e.Message, Decision: e.Decision, DecisionID: e.DecisionID,
		Reasons: e.Reasons, ApprovalID: e.ApprovalID, RequestID: ri.id,
	}}
	if c.Request().Method == http.MethodHead {
		c.NoContent(Status(e.Code))
		return
	}
	writeJSON(c, Status(e.Code), body)
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code       string           `json:"code"`
	Message    string           `json:"message"`
	Decision   string           `json:"decision,omitempty"`
	DecisionID string           `json:"decision_id,omitempty"`
	Reasons    []gateway.Reason `json:"reasons,omitempty"`
	ApprovalID string           `json:"approval_id,omitempty"`
	RequestID  string           `json:"request_id,omitempty"`
}

// writeJSON answers v as JSON without HTML escaping (command output shows < > & as
// they are).
func writeJSON(c echo.Context, status int, v any) error {
	return writeJSONWith(c, status, v, nil)
}

// writeJSONWith is writeJSON, with extra (`,"name":value` members) written into the
// object v encodes to, as they are.
func writeJSONWith(c echo.Context, status int, v any, extra []byte) error {
	start := time.Now()
	b := getBuffer()
	defer putBuffer(b)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	out := b.Bytes()
	if len(extra) > 0 {
		out = append(out[:len(out)-2], extra...) // before `}\n`
		out = append(out, "}\n"...)
	}
	// The phases so far, encoding included, go out before the body.
	if ri, ok := c.Get(infoKey).(*reqInfo); ok {
		ri.timing.Since(gateway.PhaseEncode, start)
		if st := ri.timing.ServerTiming(); st != "" {
			c.Response().Header().Set("Server-Timing", st)
		}
	}
	return c.Blob(status, echo.MIMEApplicationJSON, out)
}

// buffers holds the buffers answers are encoded into, for the time of a write.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer {
	b := buffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 { // a huge answer's buffer is left to the GC
		buffers.Put(b)
	}
}

// handleWhoami answers the token's principal: {name, role}.
func (f *Front) handleWhoami(c echo.Context) error {
	tok := info(c).token
	return writeJSON(c, http.StatusOK, map[string]string{"name": tok.Name, "role": string(tok.Role)})
}

func (f *Front) handleHealth(c echo.Context) error {
	if f.core.Draining() {
		return writeJSON(c, http.StatusServiceUnavailable, map[string]string{"status": "shutting_down"})
	}
	return writeJSON(c, http.StatusOK, struct {
		Status  string                `json:"status"`
		Sandbox gateway.SandboxStatus `json:"sandbox"`
	}{"ok", f.core.SandboxStatus()})
}

// validRequestID accepts a client's X-Request-Id: 1 to 128 printable ASCII characters
// without spaces, so it is safe in logs and records.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= 0x20 || id[i] >= 0x7f {
			return false
		}
	}
	return true
}
