package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/gateway"
)

// The approval queue: GET /v1/approvals, GET /v1/approvals/{id}, POST
// /v1/approvals/{id}/approve and …/deny.

// caller is the request's principal as the core's Caller.
func caller(c echo.Context, endpoint string) gateway.Caller {
	ri := info(c)
	return gateway.Caller{Name: ri.token.Name, Role: ri.token.Role, RequestID: ri.id, Endpoint: endpoint,
		RemoteAddr: c.RealIP(), Log: ri.log, Timing: ri.timing}
}

// approvalsPage is the answer of GET /v1/approvals.
type approvalsPage struct {
	Approvals []*gateway.Approval `json:"approvals"`
}

// handleApprovals lists approvals newest first: ?state= (pending, denied, expired,
// running, completed, failed) and ?limit= (1 to 1000, default 100). An agent sees its
// own.
func (f *Front) handleApprovals(c echo.Context) error {
	state, limit := "", 100
	for name, vals := range c.QueryParams() {
		if len(vals) != 1 {
			return gateway.Invalid("parameter %s is given %d times", gateway.Truncate(name, 64), len(vals))
		}
		switch name {
		case "state":
			state = vals[0]
		case "limit":
			n, err := strconv.Atoi(vals[0])
			if err != nil {
				return gateway.Invalid("limit must be an integer from 1 to 1000")
			}
			limit = n
		default:
			return gateway.Invalid("unknown parameter %q (known: limit, state)", gateway.Truncate(name, 64))
		}
	}
	list, err := f.core.Approvals(c.Request().Context(), caller(c, "approvals"), state, limit)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, approvalsPage{list})
}

// maxPoll bounds the wait_ms of GET /v1/approvals/{id}.
const maxPoll = 5 * time.Minute

// handleApproval answers one approval; ?wait_ms=N waits up to N ms (at most 5
// minutes) for it to be decided and, approved, to have run.
func (f *Front) handleApproval(c echo.Context) error {
	var wait time.Duration
	for name, vals := range c.QueryParams() {
		n, err := strconv.Atoi(vals[0])
		if name != "wait_ms" || len(vals) != 1 || err != nil || n < 0 {
			return gateway.Invalid("the only parameter is wait_ms, a whole number of milliseconds")
		}
		wait = min(time.Duration(n)*time.Millisecond, maxPoll)
	}
	var a *gateway.Approval
	var err error
	if wait > 0 {
		a, err = f.core.WaitApproval(c.Request().Context(), caller(c, "approval"), c.Param("id"), wait)
	} else {
		a, err = f.core.Approval(c.Request().Context(), caller(c, "approval"), c.Param("id"))
	}
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, a)
}

func (f *Front) handleApprove(c echo.Context) error { return f.decideApproval(c, true) }
func (f *Front) handleDeny(c echo.Context) error    { return f.decideApproval(c, false) }

// decideApproval approves or denies: {"comment", "scope"} → the approval as it is then
// (running once approved: GET it, with wait_ms, for the result).
func (f *Front) decideApproval(c echo.Context, approve bool) error {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	v, err := gateway.DecodeVerdict(raw, approve)
	if err != nil {
		return err
	}
	endpoint := "deny"
	if approve {
		endpoint = "approve"
	}
	a, err := f.core.DecideApproval(c.Request().Context(), caller(c, endpoint), c.Param("id"), v)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, a)
}

// grantsPage is the answer of GET /v1/grants.
type grantsPage struct {
	Grants []*gateway.Grant `json:"grants"`
}

// handleGrants lists the live grants, newest first (?all=true: every grant, revoked
// and expired ones too, the latest 1000).
func (f *Front) handleGrants(c echo.Context) error {
	all := false
	for name, vals := range c.QueryParams() {
		if name != "all" || len(vals) != 1 || (vals[0] != "true" && vals[0] != "false") {
			return gateway.Invalid("the only parameter is all=true or all=false")
		}
		all = vals[0] == "true"
	}
	gs, err := f.core.Grants(c.Request().Context(), caller(c, "grants"), all)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, grantsPage{gs})
}

// handleRevokeGrant revokes a grant → the grant, revoked.
func (f *Front) handleRevokeGrant(c echo.Context) error {
	g, err := f.core.RevokeGrant(c.Request().Context(), caller(c, "revoke_grant"), c.Param("id"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, g)
}

// streamHeartbeat is how often the event stream sends a comment, so that proxies and
// clients see the connection alive.
const streamHeartbeat = 15 * time.Second

// handleApprovalStream is GET /v1/approvals/stream: server-sent events, one per change
// of an approval (event: the type, data: {type, approval, missed}), for approvers'
// screens and tools. It opens with the pending approvals as "requested" events, so a
// client that (re)connects has the whole queue.
func (f *Front) handleApprovalStream(c echo.Context) error {
	ctx := c.Request().Context()
	events := f.core.SubscribeApprovals(ctx)
	pending, err := f.core.Approvals(ctx, caller(c, "approval_stream"), gateway.ApprovalPending, 1000)
	if err != nil {
		return err
	}
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(ev gateway.ApprovalEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		rc.SetWriteDeadline(time.Now().Add(time.Minute))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	for i := len(pending) - 1; i >= 0; i-- { // oldest first
		if err := send(gateway.ApprovalEvent{Type: gateway.EventRequested, Approval: pending[i]}); err != nil {
			return nil
		}
	}
	beat := time.NewTicker(streamHeartbeat)
	defer beat.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if err := send(ev); err != nil {
				return nil // the client went away
			}
		case <-beat.C:
			rc.SetWriteDeadline(time.Now().Add(time.Minute))
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}
