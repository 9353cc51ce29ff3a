package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

// POST /v1/decide and POST /v1/exec map the request body to a gateway.Request and the
// caller to a gateway.Caller, call the core, and write its Outcome or *gateway.Error as
// contract 3 says.

// request reads and validates the body of an exec or decide request and names its
// caller.
func (f *Front) request(c echo.Context, endpoint string) (gateway.Caller, *gateway.Request, error) {
	caller := caller(c, endpoint)
	start := time.Now()
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return caller, nil, fmt.Errorf("read request body: %w", err)
	}
	req, err := f.core.DecodeRequest(raw)
	caller.Timing.Since(gateway.PhaseDecode, start)
	return caller, req, err
}

// noteDecision puts the decision, when one was taken, into the request's log line.
func noteDecision(c echo.Context, o *gateway.Outcome) {
	if o != nil {
		info(c).decision = o.Decision
	}
}

// decideAnswer is the 200 answer of POST /v1/decide.
type decideAnswer struct {
	Decision   string           `json:"decision"`
	DecisionID string           `json:"decision_id"`
	Revision   string           `json:"revision"`
	Reasons    []gateway.Reason `json:"reasons"`
	// Commands is []parse.Command, or nil when handleDecide adds their remembered JSON.
	Commands   any              `json:"commands,omitempty"`
	ParseError *parse.Error     `json:"parse_error,omitempty"`
	Sandbox    policies.Sandbox `json:"sandbox"`
}

// handleDecide answers the policy's decision without running anything. Every decision,
// deny and ask included, is a 200 answer: the client asked what the policy says.
func (f *Front) handleDecide(c echo.Context) error {
	caller, req, err := f.request(c, "decide")
	if err != nil {
		return err
	}
	o, err := f.core.Decide(c.Request().Context(), caller, req)
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
func (f *Front) handleExec(c echo.Context) error {
	caller, req, err := f.request(c, "exec")
	if err != nil {
		return err
	}
	o, err := f.core.Exec(c.Request().Context(), caller, req)
	noteDecision(c, o)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, execAnswer{Decision: o.Decision, DecisionID: o.DecisionID, Revision: o.Revision, Result: *o.Result})
}
