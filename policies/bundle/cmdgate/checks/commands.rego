# The per-command rules: each kind of check (below) is a rule over the commands routed
# to it, input.routed.KIND: the indices of the commands whose tool can meet it, by
# their path and whether they are contained (the engine looks each command up once in
# the routing table, lib.computed_routes, and adds the result to the input; an input
# without it has every command routed to every kind). Each keeps its own conditions. A
# kind no command is routed to costs one evaluation, and a command of an allowed tool
# without any check of its own none; a command run by a path, with a run-time or
# unknown name, or without "contained" meets every kind (lib.check_kinds). A new kind
# is a name in lib.check_kinds, its route_has rule and its rule here. The kinds:
#
#   names (below): every command but the contained commands of tools allowed by their
#      bare name meets the name, environment, operand, redirect and program file rules
#      (names.rego, odd.rego, env.rego, operands.rego, redirects.rego, code.rego).
#      `contained` (added by the engine, see policies.Contained) says the command has
#      no environment assignments, no run-time words and names only static paths
#      inside the workspace and outside .git: for an allowed tool those rules could
#      find nothing, and a contained command of another name only meets the name
#      rules. A document without the field (hand-written, raw JSON) has every command
#      checked.
#   network (below): commands that may need the network add a "network" finding.
#   checked (tools.rego): commands of tools with check() rules meet them.
#   special (profiles.rego): commands whose profile is special (output options,
#      in-place rewrites, programs the policy cannot see) meet those rules.
#   exec_options, exec_options_path, dynamic_options, git_config (options.rego),
#   publishing (publish.rego), search (search.rego), wildcard (wildcards.rego).
package cmdgate.checks

import data.cmdgate.lib

findings contains f if {
	some i in input.routed.names
	c := input.commands[i]
	not data.cmdgate.index.allowed[c.path] == c.contained
	not allowed_by_subcommand(c)
	some f in command_findings(c)
}

# allowed_by_subcommand: a contained command allowed by its first word (git status).
# (A function, so that a missing argv[1] makes it false rather than the whole rule
# undefined.)
allowed_by_subcommand(c) if data.cmdgate.index.allowed_subcommands[c.path][c.argv[1]] == c.contained

command_findings(c) := name_findings(c) if {
	c.contained == true
} else := ((((name_findings(c) | env_findings(c)) | (operand_findings(c) | redirect_findings(c))) | unknown_target_findings(c)) | option_path_findings(c)) | code_findings(c)

# secrets.read: an option whose value names a secret location (--file=/etc/shadow,
# -f/root/x, --netrc-file=~/.netrc). (A value given as the next word is an operand,
# checked by operands.rego.)
option_path_findings(c) := {lib.finding("deny", "secrets.read", msg, c) |
	some i, w in c.argv
	i > 0
	v := option_path(w)
	lib.secret(lib.target(c, v))
	msg := sprintf("%s %s names a secret location", [c.name, w])
}

# option_path is the value of an option word that looks like a path: after "=" in a
# long option, or after the letter of a short one (-f/etc/x).
option_path(w) := v if {
	startswith(w, "--")
	v := substring(w, indexof(w, "=") + 1, -1)
	contains(w, "=")
	path_like(v)
} else := v if {
	regex.match(`^-[A-Za-z0-9]`, w)
	v := substring(w, 2, -1)
	path_like(v)
}

path_like(v) if regex.match(`^(/|~|\.\.|\$)`, v)

# network: a command that needs the network (data.cmdgate.lists.network, through the
# commands' profiles: true, or the first positional words that need it; python's
# "-m pip" means python -m pip install) adds a finding with effect "network". It is
# not a reason: the decision's sandbox.network is true when the request is not denied
# and has one. (Commands run by a path or a versioned name get theirs from odd.rego.)
# Only the commands of tools that may need the network (data.cmdgate.index.network)
# are routed here.
findings contains network_finding(c) if {
	some i in input.routed.network
	c := input.commands[i]
	n := data.cmdgate.index.network[c.path]
	network_need(c, n)
}

# network_need: the subcommand needs it, or the first positional word after options,
# or the tool's profile says so otherwise (curl: always; python -m pip).
network_need(c, n) if n.words[c.argv[1]]

network_need(c, n) if {
	startswith(c.argv[1], "-")
	n.words[lib.positional(c.argv, n.values)[0]]
}

network_need(c, n) if {
	p := n.profile
	lib.needs_network(c, p, p.network)
}

network_finding(c) := lib.finding("network", "sandbox.network", sprintf("%s needs the network", [c.name]), c)

# network_findings: the network finding of a command from its profile (odd.rego).
network_findings(c, p) := {lib.finding("network", "sandbox.network", msg, c) |
	p.network != false
	lib.needs_network(c, p, p.network)
	msg := sprintf("%s needs the network", [c.name])
}
