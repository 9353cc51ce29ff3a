package cmdgate.checks.odd_test

import data.cmdgate.testlib as t

test_system_path_gets_the_tool_rules if {
	d := t.run([["/usr/bin/git", "-c", "core.pager=sh", "log"]])
	d.action == "deny"
	"escape.git_config" in t.rules(d)
}

test_versioned_interpreter_gets_the_interpreter_rules if {
	d := t.run([["python3.12", "-c", "import os; os.system('id')"]])
	d.action == "deny"
	"escape.interpreter_code" in t.rules(d)
}

test_path_invoked_program_is_unknown if {
	d := t.run([["./git", "status"]])
	d.action == "deny"
	"allowlist.path_command" in t.rules(d)
}

test_unknown_name if {
	t.rules(t.run([["frobnicate"]])) == {"allowlist.unknown_command"}
}
