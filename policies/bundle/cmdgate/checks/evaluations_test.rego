package cmdgate.checks.evaluations_test

import data.cmdgate.testlib as t

decide(evals) := t.decide(t.with_evaluations([["echo", "x"]], evals))

test_code_in_values if {
	every kind in ["prompt", "arithmetic", "indirect", "nameref", "name"] {
		d := decide([t.evaluation(kind, "${x}", ["x"], ["a[$(id)]"], false)])
		d.action == "deny"
		"escape.evaluated_expansion" in t.rules(d)
	}
	"escape.evaluated_expansion" in t.rules(decide([t.evaluation("arithmetic", "$((x))", ["x"], ["a[`id`]"], false)]))
}

# Prompt expansion decodes escapes first: a backslash may be anything.
test_prompt_escapes if {
	"escape.evaluated_expansion" in t.rules(decide([t.evaluation("prompt", "${x@P}", ["x"], ["\\140id\\140"], false)]))
	decide([t.evaluation("arithmetic", "$((x))", ["x"], ["\\140"], false)]).action == "allow"
}

test_unknown_values if {
	d := decide([t.evaluation("prompt", "${x@P}", ["x"], [], true)])
	d.action == "deny"
	"dynamic.evaluated_value" in t.rules(d)
	every kind in ["arithmetic", "indirect", "nameref", "name"] {
		a := decide([t.evaluation(kind, "$((n))", ["n"], [], true)])
		a.action == "ask"
		"dynamic.evaluated_value" in t.rules(a)
	}
}

test_known_safe if {
	decide([t.evaluation("arithmetic", "$((x + 1))", ["x"], ["3"], false)]).action == "allow"
	decide([t.evaluation("indirect", "${!v}", ["v"], ["HOME", "PATH"], false)]).action == "allow"
	decide([t.evaluation("prompt", "${x@P}", ["x"], ["plain text"], false)]).action == "allow"
}

# ${x@E} decodes without evaluating: no rule.
test_escape_is_not_evaluating if {
	decide([t.evaluation("escape", "${x@E}", ["x"], ["$(id)"], true)]).action == "allow"
}

# The reason names the command that holds the construct.
test_command_index if {
	e := object.union(t.evaluation("prompt", "${x@P}", ["x"], ["`id`"], false), {"command": 0})
	some r in decide([e]).reasons
	r.rule == "escape.evaluated_expansion"
	r.command == 0
}
