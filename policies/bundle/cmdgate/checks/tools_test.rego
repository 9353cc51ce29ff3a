package cmdgate.checks.tools_test

import data.cmdgate.testlib as t

# The tool rules run for the commands of tools that have them, by tool key (aliases
# included), and only for those.
test_dispatch_by_alias if {
	"escape.awk_exec" in t.rules(t.run([["gawk", "BEGIN{system(\"id\")}"]]))
	"escape.sed_exec" in t.rules(t.run([["gsed", "e id", "f"]]))
}

test_no_dispatch_for_tools_without_rules if {
	t.run([["wc", "-l", "x"]]).action == "allow"
}
