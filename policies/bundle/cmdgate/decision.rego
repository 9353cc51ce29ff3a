# Package cmdgate is the entry point of the default bundle: data.cmdgate.decision is the
# decision on one request (contract 2 of docs/architecture.md).
#
# Every rule adds findings {effect, rule, message, command} to the findings set of
# data.cmdgate.checks (which calls the tool rules of data.cmdgate.tools). A deny
# finding denies, else an ask finding asks, else the request is allowed.
package cmdgate

import data.cmdgate.checks
import data.cmdgate.granted
import data.cmdgate.lib

# The rules read the index (data.cmdgate.index, lib/profiles.rego), the routing of the
# request's commands to their checks (input.routed, checks/commands.rego) and the
# request's words (input.words, lib.words) directly: the engine stores the first when
# it loads the bundle and adds the others to every input. Evaluated without them (opa
# eval on the bundle's files, a hand-written input, the bundle's tests), the findings
# are computed with them, every command routed to every kind.
findings := checks.findings if {
	# Read whole, the index is kept in OPA's cache of base documents, which serves
	# every later lookup in it (data.cmdgate.index.checked[c.path], ...); read by
	# lookups only, each lookup would read the store and add a path to that cache.
	is_object(data.cmdgate.index)
	input.routed
	is_string(input.words)
} else := fs if {
	# (The index is replaced only when it is missing: replacing a present one with
	# itself makes the bundle's tests a fifth slower.)
	data.cmdgate.index.profiles
	fs := checks.findings with input.routed as lib.computed_routed with input.words as lib.words
} else := fs if {
	fs := checks.findings with data.cmdgate.index as lib.computed_index
		with input.routed as lib.computed_routed
		with input.words as lib.words
}

# uncovered_ask: an ask finding no live grant covers (granted/granted.rego).
uncovered_ask if {
	some f in findings
	f.effect == "ask"
	count(granted.covering(f)) == 0
}

# by_grant: the request asks, and grants cover every ask: it is allowed, and the
# reasons say which grant covered which command instead of the asks.
by_grant if {
	not denied
	some f in findings
	f.effect == "ask"
	not uncovered_ask
}

denied if {
	some f in findings
	not f.effect in {"ask", "network"}
}

# grant_of is the grant (the least id among those that cover it) of each ask finding.
grant_of[f] := sort(granted.covering(f))[0] if {
	by_grant
	some f in findings
	f.effect == "ask"
}

# used_grants are the ids of the grants a decision by_grant used.
used_grants := sort({id | some id in grant_of})

# action: deny when a finding denies (or has an effect the policy does not know: fail
# closed), else ask when one asks, else allow. Findings with effect "network" are
# not reasons (see network below).
action := "allow" if {
	count(findings) == 0
} else := "deny" if {
	denied
} else := "ask" if {
	uncovered_ask
} else := "allow"

# reasons lists every finding but the network ones, deny ones first, then by command
# and rule.
reasons := [] if count(findings) == 0

else := [{"effect": r[1], "rule": r[3], "message": r[4], "command": r[2]} |
	some r in sort([[effect_order(f.effect), f.effect, f.command, f.rule, f.message] |
		some f in findings
		f.effect != "network"
		not by_grant
	])
] if {
	not by_grant
}

# Allowed by grants: each ask finding becomes an allow reason naming its grant.
else := [{"effect": "allow", "rule": "grant.used", "message": sprintf("%s: allowed by grant %s", [r[2], r[1]]), "command": r[0]} |
	some r in sort([[f.command, grant_of[f], f.message] |
		some f in findings
		f.effect == "ask"
	])
]

effect_order("ask") := 1

effect_order(e) := 0 if e != "ask"

# (Without findings, the common case, or with network findings only, the decision is
# known at once.)
decision := {"action": "allow", "reasons": [], "sandbox": {"network": false}} if {
	count(findings) == 0
} else := {"action": "allow", "reasons": [], "sandbox": {"network": network}} if {
	count({f | some f in findings; f.effect == "network"}) == count(findings)
} else := {
	"action": "allow",
	"reasons": reasons,
	"sandbox": {"network": network},
	"grants": used_grants,
} if {
	by_grant
} else := {
	"action": action,
	"reasons": reasons,
	"sandbox": {"network": network},
}

# network is true when the request may run, a command needs the network (a finding
# with effect "network", checks/commands.rego: a dependency install or download), and
# every other command of the request is one that runs no project code
# (data.cmdgate.lists.network_alongside: cd, echo, ls, cat, mkdir, ...). The grant is
# for the request as a whole, so a request that mixes an install with a build, a test
# or a script (`npm ci && npm test`) runs without network: the install then fails
# offline, and run on its own it gets the network.
default network := false

network if {
	count(findings) > 0
	action != "deny"
	needing := {f.command | some f in findings; f.effect == "network"}
	count(needing) > 0
	every c in input.commands {
		network_alongside(c, needing)
	}
}

network_alongside(c, needing) if c.index in needing

network_alongside(c, _) if {
	not c.dynamic_name
	c.name in data.cmdgate.lists.network_alongside
}
