package gateway

import (
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/policies"
)

// auditParams are the query parameters of GET /v1/audit.
var auditParams = []string{"cursor", "decision", "kind", "limit", "principal", "q", "rule", "since", "until"}

// handleAudit answers one page of audit records, newest first: {records, next_cursor}.
// Unknown parameters are refused, so that a misspelt filter cannot silently widen the
// selection.
func (s *Server) handleAudit(c echo.Context) error {
	q, err := auditQuery(c.QueryParams(), time.Now())
	if err != nil {
		return err
	}
	page, err := s.store.Query(c.Request().Context(), q)
	if errors.Is(err, audit.ErrInvalidQuery) {
		return &Error{Code: CodeInvalidArgument, Message: strings.TrimPrefix(err.Error(), audit.ErrInvalidQuery.Error()+": "), Err: err}
	}
	if err != nil {
		return &Error{Code: CodeUnavailable, Message: "the audit log cannot be read", Err: err}
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
			return q, invalid("unknown parameter %q (known: %s)", truncate(strings.ToValidUTF8(name, "?"), 64), strings.Join(auditParams, ", "))
		}
		if len(vals) != 1 {
			return q, invalid("parameter %s is given %d times", name, len(vals))
		}
		val := vals[0]
		if !utf8.ValidString(val) || strings.IndexByte(val, 0) >= 0 {
			return q, invalid("parameter %s is not valid UTF-8 text", name)
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
				return q, invalid("kind %q is not one of decision, execution, approval, policy_load, auth_failure", truncate(val, 64))
			}
		case "limit":
			n, perr := strconv.Atoi(val)
			if perr != nil || n < 1 || n > audit.MaxLimit {
				return q, invalid("limit must be an integer from 1 to %d", audit.MaxLimit)
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
	return time.Time{}, invalid("%s %q is not a time (RFC 3339, YYYY-MM-DD, or a duration such as 24h)", name, truncate(s, 64))
}

// handleVerify walks the hash chain: {ok, records, head, ...}, naming the first broken
// record in problem when ok is false. A broken chain is an answer, not an error.
func (s *Server) handleVerify(c echo.Context) error {
	if len(c.QueryParams()) > 0 {
		return invalid("this endpoint takes no parameters")
	}
	res, err := s.store.Verify(c.Request().Context(), audit.VerifyOptions{})
	if err != nil {
		return &Error{Code: CodeUnavailable, Message: "the audit log cannot be verified now", Err: err}
	}
	return writeJSON(c, http.StatusOK, res)
}

// policyFile describes one file of the bundle without its content.
type policyFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

type policyAnswer struct {
	Revision  string             `json:"revision"`
	Source    string             `json:"source"`
	Profile   string             `json:"profile"`
	Sandbox   string             `json:"sandbox"`
	Files     []policyFile       `json:"files"`
	Config    policies.Config    `json:"config"`
	Allowlist policies.Allowlist `json:"allowlist"`
}

// handlePolicy answers the bundle in use: revision, files (path, SHA-256, size), the
// effective configuration and allowlist, the profile and the sandbox backend.
func (s *Server) handlePolicy(c echo.Context) error {
	if len(c.QueryParams()) > 0 {
		return invalid("this endpoint takes no parameters")
	}
	// One snapshot of the engine's state is not exported, so the revision is read
	// last: a reload in between gives files of the newer bundle with its revision, or
	// (rarely) files of the newer one with the older revision, never a mix of files.
	files := s.engine.Files()
	out := policyAnswer{
		Source: "embedded", Profile: s.opts.Policy.Profile, Sandbox: s.sandbox,
		Files: make([]policyFile, 0, len(files)), Config: s.engine.Config(), Allowlist: s.engine.Allowlist(),
	}
	if s.opts.PolicyDir != "" {
		out.Source = s.opts.PolicyDir
	}
	for _, f := range files {
		h := sha256.Sum256([]byte(f.Content))
		out.Files = append(out.Files, policyFile{Path: f.Path, SHA256: hex.EncodeToString(h[:]), Bytes: len(f.Content)})
	}
	out.Revision = s.engine.Revision()
	return writeJSON(c, http.StatusOK, out)
}

// handlePrompt answers the system-prompt text of this gateway (what is in force: the
// workspace, the sandbox, the network rule, the tools, and the allowed commands by
// category): {revision, prompt} as JSON, or the bare text with ?format=text.
// PromptEnv describes the running configuration for the system prompt.
func (s *Server) PromptEnv() policies.PromptEnv {
	sb := s.sandboxInput
	ec := s.opts.Executor
	env := policies.PromptEnv{
		Workspace: s.ws.Root(), Backend: s.sandbox,
		Isolated: sb.Isolated, PrivateTmp: sb.PrivateTmp, Home: sb.Home,
		Caches: ec.Caches.Dir != "", Profile: s.opts.Policy.Profile,
		Tools: HTTPPromptTools,
	}
	if s.promptTools != nil {
		env.Tools = s.promptTools
	}
	if env.Caches {
		env.Home = ec.Caches.Home()
	}
	env.DefaultTimeout, _ = ec.TimeoutMS(nil)
	env.MaxTimeout = ec.MaxTimeout
	if env.MaxTimeout == 0 {
		env.MaxTimeout = executor.DefaultMaxTimeout
	}
	switch {
	case s.sandbox == SandboxProcess:
		env.Network = "not isolated: commands reach the network as the gateway's host does"
	case s.sandbox == SandboxLinux && (s.sandboxStatus.Linux == nil || s.sandboxStatus.Linux.Uplink == ""):
		env.Network = "none: no command gets the network, not even one the policy grants it (this gateway has no uplink for the sandbox)"
	case s.sandbox == SandboxLinux && s.opts.PolicyDir == "":
		env.Network = "none, except for dependency installs and downloads run as commands of their own (for example `npm ci`, `pip install -r requirements.txt`, `go mod download`, `cargo fetch`, `bundle install`): the policy grants those the network"
	case s.sandbox == SandboxLinux:
		env.Network = "none, unless the policy grants it to a command"
	}
	return env
}

func (s *Server) handlePrompt(c echo.Context) error {
	format := "json"
	for name, vals := range c.QueryParams() {
		if name != "format" || len(vals) != 1 || (vals[0] != "json" && vals[0] != "text") {
			return invalid("the only parameter is format=json or format=text")
		}
		format = vals[0]
	}
	prompt := s.Prompt()
	if format == "text" {
		return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, []byte(prompt))
	}
	return writeJSON(c, http.StatusOK, map[string]string{"revision": s.engine.Revision(), "prompt": prompt})
}
