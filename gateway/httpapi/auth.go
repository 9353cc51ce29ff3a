package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/cmdgate/cmdgate/gateway"
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
func (f *Front) require(roles ...gateway.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ri := info(c)
			addr := c.RealIP()
			if wait, blocked := f.limiter.blocked(addr, time.Now()); blocked {
				f.metrics.authFailures.WithLabelValues("rate_limited").Inc()
				if f.limiter.suppress(addr) == 1 {
					ri.log.Warn("rate limiting a client address after repeated authentication failures", "remote_addr", addr)
				}
				return &gateway.Error{Code: gateway.CodeRateLimited, RetryAfter: wait,
					Message: "too many failed authentications from this address: retry later"}
			}
			start := time.Now()
			tok, reason, err := f.authenticate(c.Request())
			ri.timing.Since(gateway.PhaseAuth, start)
			if err != nil {
				return &gateway.Error{Code: gateway.CodeUnavailable, Message: "the token store cannot be read", Err: err}
			}
			if reason != "" {
				return f.authFailed(c, addr, reason)
			}
			ri.token = &tok
			ri.log = ri.log.With("principal", tok.Name, "role", string(tok.Role))
			if tok.Role != gateway.RoleAdmin && !slices.Contains(roles, tok.Role) {
				return gateway.Errorf(gateway.CodeForbidden, "the %s role may not use %s %s (it needs the %s role)",
					tok.Role, c.Request().Method, c.Path(), roles[0])
			}
			return next(c)
		}
	}
}

// authenticate checks the Authorization header: the reason of a refusal, or the token.
// err is for a token store that cannot be read (fail closed).
func (f *Front) authenticate(r *http.Request) (tok gateway.Token, reason string, err error) {
	values := r.Header.Values(echo.HeaderAuthorization)
	switch {
	case len(values) == 0:
		return gateway.Token{}, authMissing, nil
	case len(values) > 1:
		return gateway.Token{}, authMalformed, nil
	}
	scheme, secret, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" || strings.ContainsAny(secret, " \t") {
		return gateway.Token{}, authMalformed, nil
	}
	tok, err = f.core.Tokens().Check(secret)
	switch {
	case errors.Is(err, gateway.ErrTokenUnknown):
		return gateway.Token{}, authUnknown, nil
	case errors.Is(err, gateway.ErrTokenRevoked):
		return gateway.Token{}, authRevoked, nil
	case err != nil:
		return gateway.Token{}, "", err
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
func (f *Front) authFailed(c echo.Context, addr, reason string) error {
	ri := info(c)
	now := time.Now()
	wait, audited, suppressed := f.limiter.fail(addr, now)
	if !audited {
		f.metrics.authFailures.WithLabelValues("rate_limited").Inc()
		ri.log.Warn("rate limiting a client address after repeated authentication failures", "remote_addr", addr)
		return &gateway.Error{Code: gateway.CodeRateLimited, RetryAfter: wait,
			Message: "too many failed authentications from this address: retry later"}
	}
	f.metrics.authFailures.WithLabelValues(reason).Inc()
	detail := map[string]any{
		"remote_addr": addr,
		"reason":      reason,
		"method":      c.Request().Method,
		"path":        gateway.Truncate(strings.ToValidUTF8(c.Request().URL.Path, "?"), 256),
	}
	if suppressed > 0 {
		detail["rate_limited_before"] = suppressed // refusals not audited one by one
	}
	if err := f.core.RecordAuthFailure(c.Request().Context(), ri.id, detail); err != nil {
		ri.log.Error("cannot record an authentication failure", "error", err.Error())
	}
	ri.log.Warn("authentication failed", "reason", reason, "remote_addr", addr, "rate_limited_before", suppressed)
	return gateway.Errorf(gateway.CodeUnauthenticated, "%s", authMessages[reason])
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
