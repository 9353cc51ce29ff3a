package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/gateway"
)

// auditParams are the query parameters of GET /v1/audit.
var auditParams = []string{"cursor", "decision", "kind", "limit", "principal", "q", "rule", "since", "until"}

// handleAudit answers one page of audit records, newest first: {records, next_cursor}.
// Unknown parameters are refused, so that a misspelt filter cannot silently widen the
// selection.
func (f *Front) handleAudit(c echo.Context) error {
	q, err := auditQuery(c.QueryParams(), time.Now())
	if err != nil {
		return err
	}
	page, err := f.core.AuditStore().Query(c.Request().Context(), q)
	if errors.Is(err, audit.ErrInvalidQuery) {
		return &gateway.Error{Code: gateway.CodeInvalidArgument, Message: strings.TrimPrefix(err.Error(), audit.ErrInvalidQuery.Error()+": "), Err: err}
	}
	if err != nil {
		return &gateway.Error{Code: gateway.CodeUnavailable, Message: "the audit log cannot be read", Err: err}
	}
	return writeJSON(c, http.StatusOK, page)
}

func auditQuery(v url.Values, now time.Time) (audit.Query, error) {
	var q audit.Query
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vals := v[name]
		if !slices.Contains(auditParams, name) {
			return q, gateway.Invalid("unknown parameter %q (known: %s)", gateway.Truncate(strings.ToValidUTF8(name, "?"), 64), strings.Join(auditParams, ", "))
		}
		if len(vals) != 1 {
			return q, gateway.Invalid("parameter %s is given %d times", name, len(vals))
		}
		val := vals[0]
		if !utf8.ValidString(val) || strings.IndexByte(val, 0) >= 0 {
			return q, gateway.Invalid("parameter %s is not valid UTF-8 text", name)
		}
		var err error
		switch name {
		case "cursor":
			q.Cursor = val
		case "decision":
			q.Decision = val
		case "kind":
			q.Kind = audit.Kind(val)
			if !q.Kind.Valid() {
				return q, gateway.Invalid("kind %q is not one of decision, execution, approval, grant, job, policy_load, auth_failure", gateway.Truncate(val, 64))
			}
		case "limit":
			n, perr := strconv.Atoi(val)
			if perr != nil || n < 1 || n > audit.MaxLimit {
				return q, gateway.Invalid("limit must be an integer from 1 to %d", audit.MaxLimit)
			}
			q.Limit = n
		case "principal":
			q.Principal = val
		case "q":
			q.Text = val
		case "rule":
			q.Rule = val
		case "since":
			q.Since, err = parseWhen(name, val, now)
		case "until":
			q.Until, err = parseWhen(name, val, now)
		}
		if err != nil {
			return q, err
		}
	}
	return q, nil
}

// parseWhen reads a time filter: RFC 3339, a date (UTC), or a duration before now
// (24h, 90m), as `cmdgate audit query` does.
func parseWhen(name, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, gateway.Invalid("%s %q is not a time (RFC 3339, YYYY-MM-DD, or a duration such as 24h)", name, gateway.Truncate(s, 64))
}

// handleVerify walks the hash chain: {ok, records, head, ...}, naming the first broken
// record in problem when ok is false. A broken chain is an answer, not an error.
func (f *Front) handleVerify(c echo.Context) error {
	if len(c.QueryParams()) > 0 {
		return gateway.Invalid("this endpoint takes no parameters")
	}
	res, err := f.core.AuditStore().Verify(c.Request().Context(), audit.VerifyOptions{})
	if err != nil {
		return &gateway.Error{Code: gateway.CodeUnavailable, Message: "the audit log cannot be verified now", Err: err}
	}
	return writeJSON(c, http.StatusOK, res)
}

// handlePolicy answers the bundle in use: revision, files (path, SHA-256, size), the
// effective configuration and allowlist, the profile and the sandbox backend.
func (f *Front) handlePolicy(c echo.Context) error {
	if len(c.QueryParams()) > 0 {
		return gateway.Invalid("this endpoint takes no parameters")
	}
	out := f.core.Policy()
	return writeJSON(c, http.StatusOK, out)
}

// handlePrompt answers the system-prompt text of this gateway (what is in force: the
// workspace, the sandbox, the network rule, the tools, and the allowed commands by
// category): {revision, prompt} as JSON, or the bare text with ?format=text.
func (f *Front) handlePrompt(c echo.Context) error {
	format := "json"
	for name, vals := range c.QueryParams() {
		if name != "format" || len(vals) != 1 || (vals[0] != "json" && vals[0] != "text") {
			return gateway.Invalid("the only parameter is format=json or format=text")
		}
		format = vals[0]
	}
	prompt := f.core.Prompt()
	if format == "text" {
		return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, []byte(prompt))
	}
	return writeJSON(c, http.StatusOK, map[string]string{"revision": f.core.Revision(), "prompt": prompt})
}
