package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cmdgate/cmdgate/audit"
)

// What the fronts (package gateway/httpapi, package gateway/mcp) use of the core
// besides Decide and Exec.

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

// SetPromptTools sets the prompt's list of the ways an agent reaches cmdgate (each
// line: how to reach it, what it does), for the fronts in use: the HTTP API's and the
// mounted MCP server's tools under serve, the MCP tools alone over stdio. Call it
// before serving.
func (s *Server) SetPromptTools(lines ...string) {
	s.promptTools = lines
}

// Logger is the gateway's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Options are the gateway's options with their defaults filled in; a front reads its
// own settings there (the HTTP front its body limit, timeouts and failure budget).
func (s *Server) Options() Options { return s.opts }

// Tokens is the token store the gateway authenticates with.
func (s *Server) Tokens() *TokenStore { return s.tokens }

// AuditStore is the audit store, for reading it (query, verify). Records are
// appended by the core only.
func (s *Server) AuditStore() *audit.Store { return s.store }

// Registry is the gateway's Prometheus registry (never the global one), where a front
// registers its own metrics and which GET /metrics serves.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// RecordAuthFailure appends an auth_failure record for a refused authentication
// (detail: the client's address, the reason, what it asked for).
func (s *Server) RecordAuthFailure(ctx context.Context, requestID string, detail map[string]any) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = s.append(ctx, audit.Record{Kind: audit.KindAuthFailure, RequestID: requestID, Detail: b})
	return err
}

// Draining reports whether shutdown began (GET /healthz says so).
func (s *Server) Draining() bool { return s.draining.Load() }

// Drain marks the start of the shutdown: Draining is true from now on.
func (s *Server) Drain() { s.draining.Store(true) }

// StopBound is how long stopping the running commands may take once Abort was called:
// the executor's kill grace and wait delay, and time for the execution records.
func (s *Server) StopBound() time.Duration {
	return s.opts.Executor.Grace() + s.opts.Executor.Delay() + 10*time.Second
}
