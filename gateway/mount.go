package gateway

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Other fronts (the MCP server) are packages of their own over the core (core.go). A
// front served over HTTP is mounted on the gateway's listener with Mount, behind the
// same bearer tokens, roles, failure budget and audit of refused authentications as
// the HTTP API.

// Mount serves h at path (and below it) on the gateway's listener for the given roles
// (admin always may). It must be called before Serve.
func (s *Server) Mount(path string, h http.Handler, roles ...Role) {
	handler := echo.WrapHandler(h)
	s.echo.Any(path, handler, s.require(roles...))
	s.echo.Any(path+"/*", handler, s.require(roles...))
	s.routes[path] = true
	s.routes[path+"/*"] = true
}

// CheckToken checks a bearer token's secret, for a front that must see the token
// itself (the MCP server binds each session to it): the token, or ErrTokenUnknown or
// ErrTokenRevoked.
func (s *Server) CheckToken(secret string) (Token, error) {
	tok, err := s.tokens.Check(secret)
	if err != nil && !errors.Is(err, ErrTokenUnknown) && !errors.Is(err, ErrTokenRevoked) {
		return Token{}, &Error{Code: CodeUnavailable, Message: "the token store cannot be read", Err: err}
	}
	return tok, err
}

// Prompt is the system prompt for the running configuration (GET /v1/policy/prompt).
func (s *Server) Prompt() string { return s.engine.PromptFor(s.PromptEnv()) }

// HTTPPromptTools are the prompt's lines for the HTTP API, the ways an agent reaches
// cmdgate when nothing else is said (SetPromptTools).
var HTTPPromptTools = []string{
	"`POST /v1/exec` (cmdgate's HTTP API): run a command (a shell script, or an argument vector) and get its exit code, stdout and stderr",
	"`POST /v1/decide` (cmdgate's HTTP API): ask whether a command would be allowed, and why not, without running it",
}

// SetPromptTools sets the prompt's list of the ways an agent reaches cmdgate (each
// line: how to reach it, what it does), for the fronts in use: HTTPPromptTools and the
// mounted MCP server's tools under serve, the MCP tools alone over stdio.
func (s *Server) SetPromptTools(lines ...string) {
	s.promptTools = lines
}

// NewRequestID returns a new request id (26 characters, sortable by time), for a front
// whose requests do not come one per HTTP request.
func NewRequestID() string { return newRequestID() }

// Logger is the gateway's logger.
func (s *Server) Logger() *slog.Logger { return s.log }
