package cmdgate.checks.input_test

import data.cmdgate.testlib as t

test_parse_error_denies_with_position if {
	d := t.decide(object.union(t.doc([]), {"error": {"message": "reached EOF without closing quote '", "line": 1, "col": 6}}))
	d.action == "deny"
	some r in d.reasons
	r.rule == "input.parse_error"
	r.command == -1
	contains(r.message, "line 1, column 6")
	contains(r.message, "closing quote")
}

test_empty_script_denies if {
	d := t.decide(t.doc([]))
	d.action == "deny"
	t.rules(d) == {"input.empty"}
}

test_missing_commands_denies if {
	d := t.decide({"request": {"workspace": "/w"}})
	d.action == "deny"
	"input.empty" in t.rules(d)
}

test_empty_input_denies if {
	d := t.decide({})
	d.action == "deny"
}

test_no_workspace_denies if {
	base := t.script([["ls"]])
	d := t.decide(object.union(base, {"request": object.union(base.request, {"workspace": ""})}))
	d.action == "deny"
	"input.workspace" in t.rules(d)
}

test_relative_workspace_denies if {
	base := t.script([["ls"]])
	d := t.decide(object.union(base, {"request": object.union(base.request, {"workspace": "proj"})}))
	"input.workspace" in t.rules(d)
}
