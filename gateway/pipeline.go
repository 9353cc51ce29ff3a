package gateway

import (
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// The HTTP front of the pipeline: POST /v1/decide and POST /v1/exec map the request body
// to a Request and the caller to a Caller, call the core (core.go), and write its
// Outcome or *Error as contract 3 says.

// Reason is one reason of a decision as the API shows it (contract 2 of docs/architecture.md).
type Reason struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Command is the index in commands the reason is about; null when it is about the
	// request as a whole.
	Command *int `json:"command"`
	// Effect is what this reason alone asks for: deny or ask.
	Effect string `json:"effect,omitempty"`
}

// httpRequest reads and validates the body of an exec or decide request and names its
// caller.
func (s *Server) httpRequest(c echo.Context, endpoint string) (Caller, *Request, error) {
	ri := info(c)
	caller := Caller{Name: ri.token.Name, Role: ri.token.Role, RequestID: ri.id, Endpoint: endpoint,
		RemoteAddr: c.RealIP(), Log: ri.log}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return caller, nil, fmt.Errorf("read request body: %w", err)
	}
	req, err := decodeExecRequest(raw, s.opts.Executor)
	return caller, req, err
}

// noteDecision puts the decision, when one was taken, into the request's log line.
func noteDecision(c echo.Context, o *Outcome) {
	if o != nil {
		info(c).decision = o.Decision
	}
}

// decideAnswer is the 200 answer of POST /v1/decide.
type decideAnswer struct {
	Decision   string   `json:"decision"`
	DecisionID string   `json:"decision_id"`
	Revision   string   `json:"revision"`
	Reasons    []Reason `json:"reasons"`
	// Commands is []parse.Command, or nil when handleDecide adds their remembered JSON.
	Commands   any              `json:"commands,omitempty"`
	ParseError *parse.Error     `json:"parse_error,omitempty"`
	Sandbox    policies.Sandbox `json:"sandbox"`
}

// handleDecide answers the policy's decision without running anything. Every decision,
// deny and ask included, is a 200 answer: the client asked what the policy says.
func (s *Server) handleDecide(c echo.Context) error {
	caller, req, err := s.httpRequest(c, "decide")
	if err != nil {
		return err
	}
	o, err := s.Decide(c.Request().Context(), caller, req)
	noteDecision(c, o)
	if err != nil {
		return err
	}
	a := decideAnswer{
		Decision: o.Decision, DecisionID: o.DecisionID, Revision: o.Revision,
		Reasons: o.Reasons, ParseError: o.Doc.Error, Sandbox: o.Sandbox,
	}
	if o.CommandsJSON == nil {
		a.Commands = o.Doc.Commands
		return writeJSON(c, http.StatusOK, a)
	}
	// The remembered JSON of the commands goes in as it is (a json.RawMessage member
	// would be scanned and compacted again).
	extra := getBuffer()
	defer putBuffer(extra)
	extra.WriteString(`,"commands":`)
	extra.Write(o.CommandsJSON)
	return writeJSONWith(c, http.StatusOK, a, extra.Bytes())
}

// execAnswer is the 200 answer of POST /v1/exec: exec_command's output plus the decision.
type execAnswer struct {
	Decision   string `json:"decision"`
	DecisionID string `json:"decision_id"`
	Revision   string `json:"revision"`
	executor.Result
}

// handleExec runs the pipeline to the end. Deny and ask are 403 DENIED with the
// reasons; a command that ran is 200 whatever its exit code.
func (s *Server) handleExec(c echo.Context) error {
	caller, req, err := s.httpRequest(c, "exec")
	if err != nil {
		return err
	}
	o, err := s.Exec(c.Request().Context(), caller, req)
	noteDecision(c, o)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, execAnswer{Decision: o.Decision, DecisionID: o.DecisionID, Revision: o.Revision, Result: *o.Result})
}

// decisiveRule is the rule that gave the decision its action (the first reason with
// that effect), for the decisions metric: one count per decision.
func decisiveRule(d policies.Decision) string {
	for _, r := range d.Reasons {
		if r.Effect == d.Action {
			return r.Rule
		}
	}
	if len(d.Reasons) > 0 {
		return d.Reasons[0].Rule
	}
	return ""
}

func cacheResult(hit bool) string {
	if hit {
		return "hit"
	}
	return "miss"
}

func apiReasons(rs []policies.Reason) []Reason {
	out := make([]Reason, 0, len(rs))
	for _, r := range rs {
		out = append(out, Reason{Rule: r.Rule, Message: r.Message, Command: commandIndex(r.Command), Effect: r.Effect})
	}
	return out
}

func auditReasons(rs []policies.Reason) []audit.Reason {
	out := make([]audit.Reason, 0, len(rs))
	for _, r := range rs {
		out = append(out, audit.Reason{Rule: r.Rule, Message: r.Message, Command: commandIndex(r.Command)})
	}
	return out
}

func commandIndex(i int) *int {
	if i < 0 {
		return nil
	}
	return &i
}

// reasonSummary is the first reason's message, and how many more there are.
func reasonSummary(rs []Reason) string {
	switch len(rs) {
	case 0:
		return "no reason given"
	case 1:
		return rs[0].Message
	}
	return fmt.Sprintf("%s (and %d more reasons)", rs[0].Message, len(rs)-1)
}
