package httpapi

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
)

// frontOutcome is what a front answered, in terms every front can be compared in.
type frontOutcome struct {
	Decision  string
	Rules     []string
	ErrorCode string
	ExitCode  int
	Stdout    string
	TimedOut  bool
	Truncated bool
	Recorded  bool // a decision record with the answer's decision id exists
}

// TestCoreMatchesHTTP runs the same requests through the core (Server.Exec, no HTTP)
// and through POST /v1/exec, and compares the outcomes field by field: the HTTP front
// maps the core's Outcome and *Error to its wire format and changes nothing.
func TestCoreMatchesHTTP(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	cases := []struct {
		name string
		body map[string]any
		req  gateway.Request
	}{
		{"allow", map[string]any{"command": "echo hi"}, gateway.Request{Script: "echo hi"}},
		{"deny with reasons", map[string]any{"command": "sudo rm -rf /"}, gateway.Request{Script: "sudo rm -rf /"}},
		{"bad cwd", map[string]any{"command": "ls", "cwd": "../outside"}, gateway.Request{Script: "ls", Cwd: "../outside"}},
		{"timeout", map[string]any{"command": "sleep 5", "timeout_ms": 200}, gateway.Request{Script: "sleep 5", Timeout: 200 * time.Millisecond}},
		{"truncation", map[string]any{"command": "printf '%05000d' 0", "max_output_chars": 1000}, gateway.Request{Script: "printf '%05000d' 0", MaxOutput: 1000}},
		{"limit out of range", map[string]any{"command": "ls", "max_output_chars": 10}, gateway.Request{Script: "ls", MaxOutput: 10}},
		{"NUL in the script", map[string]any{"command": "ls\u0000 /"}, gateway.Request{Script: "ls\x00 /"}},
		{"unknown command", map[string]any{"argv": []string{"no-such-cmd-xyz"}, "shell_mode": "direct"}, gateway.Request{Argv: []string{"no-such-cmd-xyz"}, ShellMode: executor.ShellDirect}},
		{"nonzero exit", map[string]any{"command": "ls no-such-file"}, gateway.Request{Script: "ls no-such-file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The core, as a front other than HTTP calls it (zero limits take the
			// defaults, as absent members do over HTTP).
			req := c.req
			o, err := env.srv.Exec(t.Context(), gateway.Caller{Name: "agent-tok", Role: gateway.RoleAgent, RequestID: gateway.NewRequestID(), Endpoint: "exec"}, &req)
			var core frontOutcome
			var ge *gateway.Error
			if errors.As(err, &ge) {
				core.ErrorCode = ge.Code
			} else if err != nil {
				t.Fatalf("Exec error %v is not an *Error", err)
			}
			if o != nil {
				core.Decision = o.Decision
				for _, r := range o.Reasons {
					core.Rules = append(core.Rules, r.Rule)
				}
				core.Recorded = env.recorded(o.DecisionID)
				if o.Result != nil {
					core.ExitCode, core.Stdout, core.TimedOut, core.Truncated = o.Result.ExitCode, o.Result.Stdout, o.Result.TimedOut, o.Result.StdoutTruncated
				}
			}

			// The HTTP front.
			a := env.exec("agent", c.body)
			var body struct {
				Decision        string           `json:"decision"`
				DecisionID      string           `json:"decision_id"`
				ExitCode        int              `json:"exit_code"`
				Stdout          string           `json:"stdout"`
				TimedOut        bool             `json:"timed_out"`
				StdoutTruncated bool             `json:"stdout_truncated"`
				Reasons         []gateway.Reason `json:"reasons"`
				Error           struct {
					Code       string           `json:"code"`
					Decision   string           `json:"decision"`
					DecisionID string           `json:"decision_id"`
					Reasons    []gateway.Reason `json:"reasons"`
				} `json:"error"`
			}
			a.decode(t, &body)
			http := frontOutcome{Decision: body.Decision, ErrorCode: body.Error.Code, ExitCode: body.ExitCode,
				Stdout: body.Stdout, TimedOut: body.TimedOut, Truncated: body.StdoutTruncated}
			id := body.DecisionID
			if body.Error.Code != "" {
				http.Decision, id = body.Error.Decision, body.Error.DecisionID
				for _, r := range body.Error.Reasons {
					http.Rules = append(http.Rules, r.Rule)
				}
			}
			http.Recorded = env.recorded(id)
			if body.Error.Code != "" && http.Decision == "" && http.Recorded {
				// Errors after the decision (the command could not start) carry its
				// id, not the decision: read it from the record.
				r, _ := env.srv.AuditStore().Get(t.Context(), id)
				http.Decision = r.Decision
			}
			if !reflect.DeepEqual(core, http) {
				t.Errorf("core and HTTP differ:\ncore %+v\nhttp %+v (%d %s)", core, http, a.status, a.body)
			}
		})
	}
}

// recorded reports whether a decision record with this id exists.
func (e *testEnv) recorded(id string) bool {
	if id == "" {
		return false
	}
	r, err := e.srv.AuditStore().Get(e.t.Context(), id)
	return err == nil && r.Kind == audit.KindDecision
}
