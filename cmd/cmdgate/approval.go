package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const approvalUsage = `usage: cmdgate approval list [--state STATE] [--limit N]
       cmdgate approval show ID [--wait DURATION]
       cmdgate approval approve ID [--scope once|command|prefix|session|task]
                                   [--prefix WORDS] [--expires-in DURATION] [--max-uses N]
                                   [--comment TEXT]
       cmdgate approval deny ID [--comment TEXT]
       cmdgate approval grants [--all]
       cmdgate approval revoke GRANT_ID

The approval queue of a running gateway (client of /v1/approvals and /v1/grants), for
approvers: a command the policy answers ask for waits there until an approver (never
its requester) approves or denies it. approve runs the held request exactly as it was
asked, once; a scope other than once also makes a grant that allows the same again
(command: the same parsed commands; prefix: commands starting with WORDS; session or
task: every ask of the requester in the same task) until it expires or is revoked.
show --wait waits for the decision and, once approved, the result.

The gateway is --url, else $CMDGATE_URL, else http://127.0.0.1:8080; the token is read
from $CMDGATE_TOKEN or --token-file. Answers are one JSON object on stdout, typed
approval.list, approval.show, approval.approve, approval.deny, approval.grants,
approval.revoke; exit 0 when the gateway answered (read ok and http_status), 1 when it
could not be reached, 2 for a wrong command line.
`

// runApproval implements `cmdgate approval list|show|approve|deny|grants|revoke`.
func (m *Main) runApproval(ctx context.Context, args []string) int {
	if code, done := m.groupHelp(args, func(w io.Writer) { fmt.Fprint(w, approvalUsage) }); done {
		return code
	}
	sub, args := args[0], args[1:]
	subs := []string{"list", "show", "approve", "deny", "grants", "revoke"}
	known := false
	for _, s := range subs {
		known = known || s == sub
	}
	if !known {
		fmt.Fprintf(m.Stderr, "cmdgate approval: unknown subcommand %q (%s)\n", sub, strings.Join(subs, ", "))
		fmt.Fprint(m.Stderr, approvalUsage)
		return exitUsage
	}
	typ := "approval." + sub
	fs := flag.NewFlagSet("approval "+sub, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), approvalUsage)
		fmt.Fprintf(fs.Output(), "\nflags of approval %s:\n", sub)
		fs.PrintDefaults()
	}
	urlFlag := fs.String("url", "", "gateway URL (default: $CMDGATE_URL, else "+defaultURL+")")
	tokenFile := fs.String("token-file", "", "read the token from this file instead of $CMDGATE_TOKEN")
	var state, scope, prefix, comment *string
	var limit, maxUses *int
	var wait, expires *time.Duration
	var all *bool
	switch sub {
	case "list":
		state = fs.String("state", "", "only approvals in this state: pending, denied, expired, running, completed, failed")
		limit = fs.Int("limit", 100, "at most this many, newest first (1-1000)")
	case "show":
		wait = fs.Duration("wait", 0, "wait up to this long (at most 5m) for the decision and, approved, the result")
	case "approve":
		scope = fs.String("scope", "once", "once, command, prefix, session or task")
		prefix = fs.String("prefix", "", "for --scope prefix: the first words of the commands it allows")
		expires = fs.Duration("expires-in", 0, "a grant's lifetime (default: the gateway's approvals.grant_expiry)")
		maxUses = fs.Int("max-uses", 0, "a grant allows at most this many requests (0: no bound)")
		comment = fs.String("comment", "", "recorded with the decision")
	case "deny":
		comment = fs.String("comment", "", "recorded with the decision")
	case "grants":
		all = fs.Bool("all", false, "revoked and expired grants too")
	}
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	needID := sub != "list" && sub != "grants"
	if needID && len(operands) != 1 || !needID && len(operands) != 0 {
		fmt.Fprintf(m.Stderr, "cmdgate approval %s: want %s\n", sub, map[bool]string{true: "one id", false: "no operand"}[needID])
		return exitUsage
	}
	c, err := m.newClient(*urlFlag, *tokenFile)
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}
	var method, path string
	q := url.Values{}
	var body any
	switch sub {
	case "list":
		method, path = "GET", "/v1/approvals"
		q.Set("limit", strconv.Itoa(*limit))
		if *state != "" {
			q.Set("state", *state)
		}
	case "show":
		method, path = "GET", "/v1/approvals/"+url.PathEscape(operands[0])
		if *wait > 0 {
			q.Set("wait_ms", strconv.FormatInt(wait.Milliseconds(), 10))
		}
	case "approve":
		method, path = "POST", "/v1/approvals/"+url.PathEscape(operands[0])+"/approve"
		v := map[string]any{"scope": *scope, "comment": *comment}
		if *prefix != "" {
			v["prefix"] = *prefix
		}
		if *expires > 0 {
			v["expires_in"] = expires.String()
		}
		if *maxUses > 0 {
			v["max_uses"] = *maxUses
		}
		body = v
	case "deny":
		method, path = "POST", "/v1/approvals/"+url.PathEscape(operands[0])+"/deny"
		body = map[string]any{"comment": *comment}
	case "grants":
		method, path = "GET", "/v1/grants"
		if *all {
			q.Set("all", "true")
		}
	case "revoke":
		method, path = "DELETE", "/v1/grants/"+url.PathEscape(operands[0])
	}
	status, answer, err := c.call(ctx, method, path, q, body)
	if err != nil {
		return m.clientFailed(typ, err)
	}
	return m.writeAnswer(typ, status, answer)
}
