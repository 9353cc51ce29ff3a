package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/cmdgate/cmdgate/audit"
)

// Reasons of an auth_failure record.
const (
	authMissing   = "missing"
	authMalformed = "malformed"
	authUnknown   = "unknown"
	authRevoked   = "revoked"
)

// require authenticates the request's bearer token and lets it through when the
// token's role is among roles (admin always is). No, malformed, unknown or revoked
// token: 401 UNAUTHENTICATED, audited as auth_failure. A valid token of another role:
// 403 FORBIDDEN. An address past its failure budget: 429 RATE_LIMITED for every
// request, valid token or not, until the budget refills; those refusals are counted and
// logged, not audited one by one.
func (s *Server) require(roles ...Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ri := info(c)
			addr := c.RealIP()
			if wait, blocked := s.limiter.blocked(addr, time.Now()); blocked {
				s.metrics.authFailures.WithLabelValues("rate_limited").Inc()
				if s.limiter.suppress(addr) == 1 {
					ri.log.Warn("rate limiting a client address after repeated authentication failures", "remote_addr", addr)
				}
				return &Error{Code: CodeRateLimited, RetryAfter: wait,
					Message: "too many failed authentications from this address: retry later"}
			}
			tok, reason, err := s.authenticate(c.Request())
			if err != nil {
				return &Error{Code: CodeUnavailable, Message: "the token store cannot be read", Err: err}
			}
			if reason != "" {
				return s.authFailed(c, addr, reason)
			}
			ri.token = &tok
			ri.log = ri.log.With("principal", tok.Name, "role", string(tok.Role))
			if tok.Role != RoleAdmin && !slices.Contains(roles, tok.Role) {
				return errorf(CodeForbidden, "the %s role may not use %s %s (it needs the %s role)",
					tok.Role, c.Request().Method, c.Path(), roles[0])
			}
			return next(c)
		}
	}
}

// authenticate checks the Authorization header: the reason of a refusal, or the token.
// err is for a token store that cannot be read (fail closed).
func (s *Server) authenticate(r *http.Request) (tok Token, reason string, err error) {
	values := r.Header.Values(echo.HeaderAuthorization)
	switch {
	case len(values) == 0:
		return Token{}, authMissing, nil
	case len(values) > 1:
		return Token{}, authMalformed, nil
	}
	scheme, secret, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" || strings.ContainsAny(secret, " \t") {
		return Token{}, authMalformed, nil
	}
	tok, err = s.tokens.Check(secret)
	switch {
	case errors.Is(err, ErrTokenUnknown):
		return Token{}, authUnknown, nil
	case errors.Is(err, ErrTokenRevoked):
		return Token{}, authRevoked, nil
	case err != nil:
		return Token{}, "", err
	}
	return tok, "", nil
}

var authMessages = map[string]string{
	authMissing:   "this endpoint needs a token: send the header Authorization: Bearer <token> (cmdgate token create makes one)",
	authMalformed: "the Authorization header must be exactly \"Bearer <token>\"",
	authUnknown:   "the token is not valid",
	authRevoked:   "the token was revoked",
}

// authFailed records a refused authentication (within the address's budget) and
// answers 401, or 429 once the address is past its budget.
func (s *Server) authFailed(c echo.Context, addr, reason string) error {
	ri := info(c)
	now := time.Now()
	wait, audited, suppressed := s.limiter.fail(addr, now)
	if !audited {
		s.metrics.authFailures.WithLabelValues("rate_limited").Inc()
		ri.log.Warn("rate limiting a client address after repeated authentication failures", "remote_addr", addr)
		return &Error{Code: CodeRateLimited, RetryAfter: wait,
			Message: "too many failed authentications from this address: retry later"}
	}
	s.metrics.authFailures.WithLabelValues(reason).Inc()
	detail := map[string]any{
		"remote_addr": addr,
		"reason":      reason,
		"method":      c.Request().Method,
		"path":        truncate(strings.ToValidUTF8(c.Request().URL.Path, "?"), 256),
	}
	if suppressed > 0 {
		detail["rate_limited_before"] = suppressed // refusals not audited one by one
	}
	b, _ := json.Marshal(detail)
	start := time.Now()
	_, err := s.store.Append(c.Request().Context(), audit.Record{
		Kind: audit.KindAuthFailure, RequestID: ri.id, Detail: b,
	})
	s.metrics.auditAppend.Observe(time.Since(start).Seconds())
	if err != nil {
		s.metrics.auditFailures.WithLabelValues(string(audit.KindAuthFailure)).Inc()
		ri.log.Error("cannot record an authentication failure", "error", err.Error())
	}
	ri.log.Warn("authentication failed", "reason", reason, "remote_addr", addr, "rate_limited_before", suppressed)
	return errorf(CodeUnauthenticated, "%s", authMessages[reason])
}

// authLimiter keeps a token bucket of authentication failures per client address.
// Entries whose bucket is full again are dropped now and then, so memory stays bounded
// by the addresses that failed recently.
type authLimiter struct {
	limit rate.Limit
	burst int

	mu        sync.Mutex
	addrs     map[string]*addrState
	lastSweep time.Time
}

type addrState struct {
	lim        *rate.Limiter
	suppressed int // refusals since the last audited failure
}

const sweepEvery = time.Minute

func newAuthLimiter(perSecond float64, burst int) *authLimiter {
	return &authLimiter{limit: rate.Limit(perSecond), burst: burst, addrs: map[string]*addrState{}}
}

// blocked reports whether addr has no failure left in its budget, and how long until
// it has one.
func (l *authLimiter) blocked(addr string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.addrs[addr]
	if !ok {
		return 0, false
	}
	tokens := st.lim.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	return l.wait(tokens), true
}

func (l *authLimiter) wait(tokens float64) time.Duration {
	if l.limit <= 0 {
		return time.Hour
	}
	return time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second))
}

// suppress counts a refusal that is not audited and returns the count since the last
// audited failure.
func (l *authLimiter) suppress(addr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st, ok := l.addrs[addr]; ok {
		st.suppressed++
		return st.suppressed
	}
	return 0
}

// fail spends one failure of addr's budget. audited is false when the budget was
// empty (the failure is then counted as suppressed); suppressed is the count of
// refusals since the last audited failure, reset when this one is audited.
func (l *authLimiter) fail(addr string, now time.Time) (wait time.Duration, audited bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	st, ok := l.addrs[addr]
	if !ok {
		st = &addrState{lim: rate.NewLimiter(l.limit, l.burst)}
		l.addrs[addr] = st
	}
	if !st.lim.AllowN(now, 1) {
		st.suppressed++
		return l.wait(st.lim.TokensAt(now)), false, st.suppressed
	}
	suppressed, st.suppressed = st.suppressed, 0
	return 0, true, suppressed
}

// sweep drops the addresses whose budget is full again. Called with mu held.
func (l *authLimiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < sweepEvery {
		return
	}
	l.lastSweep = now
	for addr, st := range l.addrs {
		if st.lim.TokensAt(now) >= float64(l.burst) {
			delete(l.addrs, addr)
		}
	}
}
