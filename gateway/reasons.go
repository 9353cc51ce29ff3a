package gateway

import (
	"fmt"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/policies"
)

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
