# Package cmdgate is the entry point of the default bundle: data.cmdgate.decision is the
# decision on one request (DESIGN.md contract 2).
#
# Every rule adds findings {effect, rule, message, command} to the findings set of
# data.cmdgate.checks (which calls the tool rules of data.cmdgate.tools). A deny
# finding denies, else an ask finding asks, else the request is allowed.
package cmdgate

import data.cmdgate.checks
import data.cmdgate.lib

findings := checks.findings

action := "deny" if {
	some f in findings
	f.effect != "allow"
	f.effect != "ask"
} else := "ask" if {
	some f in findings
	f.effect == "ask"
} else := "allow"

# reasons lists every finding, deny ones first, then by command and rule.
reasons := [] if count(findings) == 0

else := [{"effect": r[1], "rule": r[3], "message": r[4], "command": r[2]} |
	some r in sort([[effect_order(f.effect), f.effect, f.command, f.rule, f.message] | some f in findings])
]

effect_order("ask") := 1

effect_order(e) := 0 if e != "ask"

decision := {
	"action": action,
	"reasons": reasons,
	"sandbox": {"network": network},
}

# network is true when the request may run and a command needs the network
# (data.cmdgate.lists.network, through the commands' profiles: true, or the first
# positional words that need it; python's "-m pip" means python -m pip install).
default network := false

network if {
	needing := lib.index.network
	action != "deny"
	some c in input.commands
	p := needing[c.path]
	needs_network(c, p, p.network)
}

network if {
	# commands run by a path or a versioned name (/usr/bin/curl, python3.12 -m pip)
	action != "deny"
	profiles := lib.index.profiles
	some c in input.commands
	object.get(profiles, c.path, false) == false
	p := lib.profile_for(c)
	p.network != false
	needs_network(c, p, p.network)
}

needs_network(_, _, true)

needs_network(c, p, subs) if {
	is_array(subs)
	lib.first_positional(c.argv, object.get(data.cmdgate.lists.subcommand_value_options, p.key, [])) in subs
}

needs_network(c, _, "-m pip") if {
	some j, w in c.argv
	w == "-m"
	c.argv[j + 1] in {"pip", "pip3", "ensurepip"}
	c.argv[j + 2] in {"install", "download", "wheel"}
}
