package policies

// Decision is the policy's answer for one request (contract 2 of docs/architecture.md), with the
// revision of the bundle and configuration that gave it.
type Decision struct {
	// Action is "allow", "ask" or "deny".
	Action  string   `json:"action"`
	Reasons []Reason `json:"reasons"`
	Sandbox Sandbox  `json:"sandbox"`
	// Revision is Engine.Revision at the time of the decision.
	Revision string `json:"revision"`
	// Cached is true when the decision came from the decision cache: the policy gave it
	// to the same input document before, under the same revision.
	Cached bool `json:"-"`
}

// Reason is one finding of the policy.
type Reason struct {
	// Effect is what this finding alone asks for: "deny" or "ask".
	Effect string `json:"effect"`
	// Rule names the rule, e.g. "forbidden.rm_recursive_force".
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Command is the index of the command the finding is about, -1 for the request as
	// a whole.
	Command int `json:"command"`
}

// Sandbox is what the decision grants the sandbox that runs the command.
type Sandbox struct {
	// Network is true when an allowed command needs the network (curl, package
	// installs, ...).
	Network bool `json:"network"`
}
