package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// reqInfo is what the gateway knows about one request, for its log line and records.
type reqInfo struct {
	id       string
	start    time.Time
	token    *Token // after authentication
	decision string // the policy's action, when one was taken
	log      *slog.Logger
}

const infoKey = "cmdgate.request"

func info(c echo.Context) *reqInfo {
	if ri, ok := c.Get(infoKey).(*reqInfo); ok {
		return ri
	}
	// Only reachable if a route bypassed the middleware: give a usable value.
	ri := &reqInfo{id: newRequestID(), start: time.Now()}
	c.Set(infoKey, ri)
	return ri
}

// newEcho builds the HTTP front: middleware (request id and log line, panic recovery,
// body limit), the routes with their roles, and the one error handler.
func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// The client address is the peer's: X-Forwarded-For and X-Real-IP are not trusted,
	// so a client cannot pick the address its failures are counted against.
	e.IPExtractor = echo.ExtractIPDirect()

	e.Pre(s.requestMiddleware)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisableStackAll:     true,
		DisableErrorHandler: true, // the request middleware hands the error to handleError
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			info(c).log.Error("panic while handling the request", "error", err.Error(), "stack", string(stack))
			return &Error{Code: CodeInternal, Message: "internal error", Err: fmt.Errorf("panic: %w", err)}
		},
	}))
	e.Use(middleware.BodyLimit(strconv.FormatInt(s.opts.BodyLimit, 10) + "B"))
	timeout := middleware.ContextTimeout(s.opts.RequestTimeout)

	e.GET("/healthz", s.handleHealth)
	e.GET("/metrics", echo.WrapHandler(s.metrics.handler()), s.require(RoleAdmin), timeout)
	v1 := e.Group("/v1")
	v1.POST("/exec", s.handleExec, s.require(RoleAgent))
	v1.POST("/decide", s.handleDecide, s.require(RoleAgent), timeout)
	v1.GET("/audit", s.handleAudit, s.require(RoleAuditor), timeout)
	v1.GET("/audit/verify", s.handleVerify, s.require(RoleAuditor), timeout)
	v1.GET("/policy", s.handlePolicy, s.require(RoleAgent, RoleApprover, RoleAuditor), timeout)
	v1.GET("/policy/prompt", s.handlePrompt, s.require(RoleAgent, RoleApprover, RoleAuditor), timeout)
	s.routes = map[string]bool{}
	for _, r := range e.Routes() {
		s.routes[r.Path] = true
	}
	return e
}

// requestMiddleware gives every request its id (X-Request-Id when the client sent a
// usable one, else a new one), echoed in the response header, and writes one log line
// per request with stable keys. Errors are handed to handleError here, so the line and
// the metrics see the final status.
func (s *Server) requestMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) {
			id = newRequestID()
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		ri := &reqInfo{id: id, start: time.Now()}
		ri.log = s.log.With("request_id", id)
		c.Set(infoKey, ri)

		if err := next(c); err != nil {
			c.Error(err)
		}

		status := c.Response().Status
		route := c.Path()
		if !s.routes[route] {
			route = "other" // unknown paths must not grow the label set
		}
		elapsed := time.Since(ri.start)
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		s.metrics.requestTime.WithLabelValues(route).Observe(elapsed.Seconds())
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
		ri.log.Log(c.Request().Context(), level, "request", attrs...)
		return nil
	}
}

// handleError is the one place where errors become HTTP answers: the contract's
// {"error": {"code", "message", ...}} body and status, never echo's default body, never
// an internal detail (the cause goes to the log).
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := asError(err)
	ri := info(c)
	if e.Code == CodeInternal || e.Code == CodeUnavailable {
		ri.log.Error("request failed", "code", e.Code, "error", err.Error())
	}
	h := c.Response().Header()
	switch e.Code {
	case CodeUnauthenticated:
		h.Set(echo.HeaderWWWAuthenticate, `Bearer realm="cmdgate"`)
	case CodeRateLimited:
		if e.RetryAfter > 0 {
			h.Set(echo.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
		}
	}
	body := errorBody{Error: errorJSON{
		Code: e.Code, Message: e.Message, Decision: e.Decision, DecisionID: e.DecisionID,
		Reasons: e.Reasons, RequestID: ri.id,
	}}
	if c.Request().Method == http.MethodHead {
		c.NoContent(e.Status())
		return
	}
	writeJSON(c, e.Status(), body)
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code       string   `json:"code"`
	Message    string   `json:"message"`
	Decision   string   `json:"decision,omitempty"`
	DecisionID string   `json:"decision_id,omitempty"`
	Reasons    []Reason `json:"reasons,omitempty"`
	RequestID  string   `json:"request_id,omitempty"`
}

// writeJSON answers v as JSON without HTML escaping (command output shows < > & as
// they are).
func writeJSON(c echo.Context, status int, v any) error {
	return writeJSONWith(c, status, v, nil)
}

// writeJSONWith is writeJSON, with extra (`,"name":value` members) written into the
// object v encodes to, as they are.
func writeJSONWith(c echo.Context, status int, v any, extra []byte) error {
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
	return c.Blob(status, echo.MIMEApplicationJSON, out)
}

// buffers holds the buffers answers and audit inputs are encoded into: every request
// needs one or two, for the time of a write or an append.
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

func (s *Server) handleHealth(c echo.Context) error {
	if s.draining.Load() {
		return writeJSON(c, http.StatusServiceUnavailable, map[string]string{"status": "shutting_down"})
	}
	return writeJSON(c, http.StatusOK, struct {
		Status  string        `json:"status"`
		Sandbox SandboxStatus `json:"sandbox"`
	}{"ok", s.sandboxStatus})
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

// crockford is the base32 alphabet of ULIDs.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newRequestID returns a sortable random id: 26 characters, ULID layout (48 bits of
// milliseconds, then 80 random bits, Crockford base32).
func newRequestID() string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	rand.Read(b[6:])
	hi := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 | uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	lo := uint64(b[8])<<56 | uint64(b[9])<<48 | uint64(b[10])<<40 | uint64(b[11])<<32 | uint64(b[12])<<24 | uint64(b[13])<<16 | uint64(b[14])<<8 | uint64(b[15])
	var out [26]byte
	// 128 bits as 26 base32 digits: the first digit holds the top 3 bits.
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
