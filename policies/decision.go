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
	// Grants are the ids of the live grants (Engine.SetGrants) that turned the asks of
	// an allowed request into allows; empty otherwise.
	Grants []string `json:"grants,omitempty"`
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

// Grant is one live grant as the policy reads it (data.cmdgate.grants, by principal):
// a person's approval that covers more than one request. Scope "session" and "task"
// cover every ask of the principal's requests in Task; "command" the commands equal to
// one of Commands; "prefix" the static commands whose argv starts with Prefix.
type Grant struct {
	ID       string         `json:"id"`
	Scope    string         `json:"scope"`
	Task     string         `json:"task"`
	Commands []GrantCommand `json:"commands"`
	Prefix   []string       `json:"prefix"`
}

// GrantCommand is a command a "command" grant covers: its argv, its cwd, its env
// assignments and its redirections, all equal.
type GrantCommand struct {
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	Redirects []GrantRedirect   `json:"redirects"`
}

// GrantRedirect is what a command grant compares of a redirection.
type GrantRedirect struct {
	Op     string `json:"op"`
	Fd     int    `json:"fd"`
	Target string `json:"target"`
	Body   string `json:"body"`
}

// normalGrants gives every absent list and map its empty value, as the rules compare
// them with the input's.
func normalGrants(in map[string][]Grant) map[string][]Grant {
	out := make(map[string][]Grant, len(in))
	for name, gs := range in {
		for _, g := range gs {
			if g.Commands == nil {
				g.Commands = []GrantCommand{}
			}
			if g.Prefix == nil {
				g.Prefix = []string{}
			}
			for i, c := range g.Commands {
				if c.Env == nil {
					c.Env = map[string]string{}
				}
				if c.Redirects == nil {
					c.Redirects = []GrantRedirect{}
				}
				if c.Argv == nil {
					c.Argv = []string{}
				}
				g.Commands[i] = c
			}
			out[name] = append(out[name], g)
		}
	}
	return out
}
