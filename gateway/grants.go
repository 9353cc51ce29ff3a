package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// Grants: an approver may approve more than the held request. A grant is an object of
// its own (stored in the state store, listed, revocable, audited as grant records)
// that the policy reads as data.cmdgate.grants: the default bundle turns an ask it
// covers into an allow naming it, and never touches a deny. Every grant is bound to
// the requesting principal and expires; it may have a use count.

// Grant scopes besides ScopeOnce.
const (
	ScopeSession = "session" // every ask of the principal's requests in the same task
	ScopeTask    = "task"    // the same as session: the task is the agent's session here
	ScopeCommand = "command" // the same parsed commands (argv, cwd, env, redirections)
	ScopePrefix  = "prefix"  // static commands whose argv starts with the approver's words
)

// Defaults of grants.
const (
	DefaultGrantExpiry    = 8 * time.Hour
	DefaultMaxGrantExpiry = 7 * 24 * time.Hour
)

// Grant is a standing approval.
type Grant struct {
	ID        string                  `json:"id"`
	Scope     string                  `json:"scope"`
	Principal string                  `json:"principal"`
	Task      string                  `json:"task,omitempty"`
	Commands  []policies.GrantCommand `json:"commands,omitempty"`
	Prefix    []string                `json:"prefix,omitempty"`
	// ApprovalID is the approval the grant was made with.
	ApprovalID string          `json:"approval_id"`
	CreatedBy  audit.Principal `json:"created_by"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	// MaxUses bounds the requests it allows; 0 is no bound.
	MaxUses   int              `json:"max_uses"`
	Uses      int              `json:"uses"`
	RevokedAt *time.Time       `json:"revoked_at,omitempty"`
	RevokedBy *audit.Principal `json:"revoked_by,omitempty"`
	Comment   string           `json:"comment,omitempty"`
}

func (g *Grant) policy() policies.Grant {
	return policies.Grant{ID: g.ID, Scope: g.Scope, Task: g.Task, Commands: g.Commands, Prefix: g.Prefix}
}

// newGrant builds the grant an approver asked for with an approval, checking that it
// can cover the held request.
func (s *Server) newGrant(a *Approval, by Caller, v Verdict) (*Grant, error) {
	if !s.opts.Approvals.PersistentGrants() {
		return nil, Errorf(CodeForbidden, "this gateway allows approvals of scope once only (approvals.persistent_grants is false)")
	}
	expiry := v.Expiry
	if expiry == 0 {
		expiry = s.opts.Approvals.GrantExpiry
	}
	if expiry < time.Minute || expiry > s.opts.Approvals.MaxGrantExpiry {
		return nil, Invalid("a grant expires after 1 minute to %s (approvals.max_grant_expiry), not %s", s.opts.Approvals.MaxGrantExpiry, expiry)
	}
	if v.MaxUses < 0 {
		return nil, Invalid("max_uses must be 0 (no bound) or more")
	}
	now := time.Now().UTC()
	g := &Grant{ID: NewRequestID(), Scope: v.Scope, Principal: a.Principal.Name, ApprovalID: a.ID,
		CreatedBy: audit.Principal{Name: by.Name, Role: string(by.Role)}, CreatedAt: now, ExpiresAt: now.Add(expiry),
		MaxUses: v.MaxUses, Comment: v.Comment}
	var cmds []parse.Command
	if err := json.Unmarshal(a.Commands, &cmds); err != nil {
		return nil, fmt.Errorf("the approval's commands: %w", err)
	}
	asked := func() ([]parse.Command, error) {
		if len(a.AskCommands) == 0 {
			return nil, Invalid("this request asked as a whole, not because of one command: approve it once, or for the session")
		}
		var out []parse.Command
		for _, i := range a.AskCommands {
			if i < 0 || i >= len(cmds) {
				return nil, fmt.Errorf("the approval's ask command %d is not among its %d commands", i, len(cmds))
			}
			if cmds[i].Dynamic {
				return nil, Invalid("command %d (%s) has run-time parts, which a %s grant cannot cover: approve it once", i, cmds[i].Name, v.Scope)
			}
			out = append(out, cmds[i])
		}
		return out, nil
	}
	switch v.Scope {
	case ScopeSession, ScopeTask:
		g.Task = a.Task
	case ScopeCommand:
		ask, err := asked()
		if err != nil {
			return nil, err
		}
		for _, c := range ask {
			gc := policies.GrantCommand{Argv: c.Argv, Cwd: c.Cwd, Env: c.Env}
			for _, r := range c.Redirects {
				gc.Redirects = append(gc.Redirects, policies.GrantRedirect{Op: r.Op, Fd: r.Fd, Target: r.Target, Body: r.Body})
			}
			g.Commands = append(g.Commands, gc)
		}
	case ScopePrefix:
		if len(v.Prefix) == 0 {
			return nil, Invalid("a prefix grant needs prefix: the first words of the commands it allows (for example npm publish --dry-run)")
		}
		for _, w := range v.Prefix {
			if err := validText("prefix", w); err != nil || w == "" {
				return nil, Invalid("prefix holds an empty word, a NUL or invalid UTF-8")
			}
		}
		ask, err := asked()
		if err != nil {
			return nil, err
		}
		for _, c := range ask {
			if len(c.Argv) < len(v.Prefix) || !slices.Equal(c.Argv[:len(v.Prefix)], v.Prefix) {
				return nil, Invalid("the prefix %q does not cover command %d of the request (%q)", v.Prefix, c.Index, c.Argv)
			}
		}
		g.Prefix = v.Prefix
	default:
		return nil, Invalid("scope must be once, session, task, command or prefix, not %q", Truncate(v.Scope, 64))
	}
	return g, nil
}

// createGrant stores a grant, records it and gives it to the policy.
func (s *Server) createGrant(ctx context.Context, by Caller, a *Approval, g *Grant) error {
	if err := s.state.insertGrant(ctx, g); err != nil {
		return &Error{Code: CodeUnavailable, Message: "the grant cannot be stored", Err: err}
	}
	if err := s.recordGrant(ctx, by, g, "created", a.DecisionID, nil); err != nil {
		// Not in the chain: withdraw it (fail closed).
		now := time.Now().UTC()
		g.RevokedAt = &now
		s.state.revokeGrant(context.WithoutCancel(ctx), g)
		return &Error{Code: CodeUnavailable, Message: "the audit log cannot record the grant", Err: err}
	}
	return s.refreshGrants(ctx)
}

// recordGrant appends a grant record: event created, used or revoked.
func (s *Server) recordGrant(ctx context.Context, who Caller, g *Grant, event, decisionID string, extra map[string]any) error {
	detail := map[string]any{"grant_id": g.ID, "scope": g.Scope, "principal": g.Principal, "approval_id": g.ApprovalID,
		"expires_at": g.ExpiresAt.Format(time.RFC3339), "max_uses": g.MaxUses}
	if g.Task != "" {
		detail["task"] = g.Task
	}
	if len(g.Prefix) > 0 {
		detail["prefix"] = g.Prefix
	}
	if len(g.Commands) > 0 {
		argvs := make([][]string, 0, len(g.Commands))
		for _, c := range g.Commands {
			argvs = append(argvs, c.Argv)
		}
		detail["commands"] = argvs
	}
	for k, v := range extra {
		detail[k] = v
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = s.append(ctx, audit.Record{Kind: audit.KindGrant, Principal: audit.Principal{Name: who.Name, Role: string(who.Role)},
		RequestID: who.RequestID, DecisionID: decisionID, Decision: event, Detail: b})
	return err
}

// refreshGrants gives the policy the live grants, and notes when the next one expires.
func (s *Server) refreshGrants(ctx context.Context) error {
	s.grantsMu.Lock()
	defer s.grantsMu.Unlock()
	now := time.Now()
	live, err := s.state.liveGrants(ctx, now)
	if err != nil {
		return &Error{Code: CodeUnavailable, Message: "the grants cannot be read", Err: err}
	}
	byPrincipal := map[string][]policies.Grant{}
	next := time.Time{}
	for _, g := range live {
		byPrincipal[g.Principal] = append(byPrincipal[g.Principal], g.policy())
		if next.IsZero() || g.ExpiresAt.Before(next) {
			next = g.ExpiresAt
		}
	}
	if err := s.engine.SetGrants(ctx, byPrincipal); err != nil {
		return &Error{Code: CodeInternal, Message: "the grants cannot be given to the policy", Err: err}
	}
	s.nextGrantExpiry = next
	return nil
}

// useGrants counts one use of each grant a decision used. false when one of them is
// no longer live (used up, revoked or expired meanwhile): the grants the policy sees
// are refreshed, and the caller decides again.
func (s *Server) useGrants(ctx context.Context, ids []string) (bool, error) {
	now := time.Now()
	for _, id := range ids {
		ok, err := s.state.useGrant(ctx, id, now)
		if err != nil {
			return false, &Error{Code: CodeUnavailable, Message: "the grants cannot be updated", Err: err}
		}
		if !ok {
			return false, s.refreshGrants(ctx)
		}
		g, err := s.state.grant(ctx, id)
		if err == nil && g.MaxUses > 0 && g.Uses >= g.MaxUses {
			if err := s.refreshGrants(ctx); err != nil { // used up: no longer live
				return false, err
			}
		}
	}
	return true, nil
}

// recordGrantUses appends a grant record of each grant a decision used. A failure is
// logged: the decision record names the grants too (detail.grants).
func (s *Server) recordGrantUses(ctx context.Context, caller Caller, ids []string, decisionID string) {
	for _, id := range ids {
		g, err := s.state.grant(ctx, id)
		if err == nil {
			err = s.recordGrant(ctx, caller, g, "used", decisionID, map[string]any{"uses": g.Uses})
		}
		if err != nil {
			caller.log().Error("cannot record a grant's use", "grant_id", id, "error", err.Error())
		}
	}
}

// Grants lists grants: the live ones, or with all every one, newest first.
func (s *Server) Grants(ctx context.Context, caller Caller, all bool) ([]*Grant, error) {
	if caller.Role == RoleAgent {
		return nil, Errorf(CodeForbidden, "the agent role may not list grants")
	}
	var gs []*Grant
	var err error
	if all {
		gs, err = s.state.selectGrants(ctx, `SELECT doc, uses FROM grants ORDER BY id DESC LIMIT 1000`)
	} else {
		gs, err = s.state.liveGrants(ctx, time.Now())
		slices.Reverse(gs)
	}
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the grants cannot be read", Err: err}
	}
	return gs, nil
}

// RevokeGrant revokes a grant: from then on it allows nothing. Approver and admin only.
func (s *Server) RevokeGrant(ctx context.Context, caller Caller, id string) (*Grant, error) {
	if caller.Role != RoleApprover && caller.Role != RoleAdmin {
		return nil, Errorf(CodeForbidden, "the %s role may not revoke grants (it needs the approver role)", caller.Role)
	}
	if !validApprovalID(id) {
		return nil, &Error{Code: CodeNotFound, Message: "no such grant"}
	}
	g, err := s.state.grant(ctx, id)
	if err == errNoGrant {
		return nil, &Error{Code: CodeNotFound, Message: "no such grant"}
	}
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the grants cannot be read", Err: err}
	}
	now := time.Now().UTC()
	g.RevokedAt, g.RevokedBy = &now, &audit.Principal{Name: caller.Name, Role: string(caller.Role)}
	ok, err := s.state.revokeGrant(ctx, g)
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the grant cannot be revoked", Err: err}
	}
	if !ok {
		return nil, Errorf(CodeConflict, "grant %s was revoked already", id)
	}
	if err := s.refreshGrants(ctx); err != nil {
		return nil, err
	}
	if err := s.recordGrant(ctx, caller, g, "revoked", "", nil); err != nil {
		caller.log().Error("cannot record a grant's revocation", "grant_id", g.ID, "error", err.Error())
	}
	return g, nil
}
