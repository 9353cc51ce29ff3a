package policies

import "strings"

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

// grantIndex is one principal's grants as data.cmdgate.grants holds them: session and
// task grants by task, command grants by each command's argv joined with spaces,
// prefix grants by their first word. A key only narrows the search; the rules compare
// every field.
type grantIndex struct {
	Task    map[string][]Grant `json:"task"`
	Command map[string][]Grant `json:"command"`
	Prefix  map[string][]Grant `json:"prefix"`
}

func indexGrants(byPrincipal map[string][]Grant) map[string]grantIndex {
	out := make(map[string]grantIndex, len(byPrincipal))
	for who, gs := range byPrincipal {
		idx := grantIndex{Task: map[string][]Grant{}, Command: map[string][]Grant{}, Prefix: map[string][]Grant{}}
		for _, g := range gs {
			switch g.Scope {
			case "session", "task":
				idx.Task[g.Task] = append(idx.Task[g.Task], g)
			case "command":
				seen := map[string]bool{}
				for _, c := range g.Commands {
					k := strings.Join(c.Argv, " ")
					if !seen[k] {
						seen[k] = true
						idx.Command[k] = append(idx.Command[k], g)
					}
				}
			case "prefix":
				if len(g.Prefix) > 0 {
					idx.Prefix[g.Prefix[0]] = append(idx.Prefix[g.Prefix[0]], g)
				}
			}
		}
		out[who] = idx
	}
	return out
}
