# Tools that read whole directory trees (grep -r, rg, cp -r, diff -r) run on a
# directory holding secret locations: secrets.read.
package cmdgate.tools

import data.cmdgate.lib

# The checks only matter for a command with an operand outside the workspace (never a
# contained one).
check(k, c) := recursive_secret_read(c, pattern_tool_files(c)) if {
	k == "grep"
	object.get(c, "contained", false) == false
	outside_operand(c)
	grep_recursive(c.argv)
}

# rg, ag and ack are recursive by default (rg's check is in utilities.rego, with its
# other rules).
rg_recursive_findings(c) := recursive_secret_read(c, pattern_tool_files(c)) if {
	object.get(c, "contained", false) == false
	outside_operand(c)
} else := set()

check(k, c) := recursive_secret_read(c, pattern_tool_files(c)) if {
	k == "ag"
	object.get(c, "contained", false) == false
	outside_operand(c)
}

check(k, c) := recursive_secret_read(c, pattern_tool_files(c)) if {
	k == "ack"
	object.get(c, "contained", false) == false
	outside_operand(c)
}

check(k, c) := recursive_secret_read(c, array.slice(ops, 0, count(ops) - 1)) if {
	k == "cp"
	object.get(c, "contained", false) == false
	outside_operand(c)
	cp_recursive(c.argv)
	ops := [o | some o in c.operands]
}

check(k, c) := recursive_secret_read(c, [o | some o in c.operands]) if {
	k == "diff"
	object.get(c, "contained", false) == false
	outside_operand(c)
	diff_recursive(c.argv)
}

grep_recursive(argv) if lib.has_short(argv, "r")

grep_recursive(argv) if lib.has_short(argv, "R")

grep_recursive(argv) if lib.has_long(argv, "--recursive", true)

grep_recursive(argv) if lib.has_long(argv, "--dereference-recursive", true)

cp_recursive(argv) if {
	some letter in ["r", "R", "a"]
	lib.has_short(argv, letter)
}

cp_recursive(argv) if lib.has_long(argv, "--recursive", true)

cp_recursive(argv) if lib.has_long(argv, "--archive", true)

diff_recursive(argv) if lib.has_short(argv, "r")

diff_recursive(argv) if lib.has_long(argv, "--recursive", true)

# pattern_tool_files are the file operands of a grep-like tool: all but the pattern
# (the first operand unless -e/-f gave it).
pattern_tool_files(c) := [o | some o in c.operands] if {
	lib.has_flag(c.argv, ["-e", "--regexp", "-f", "--file"])
} else := [o | some i, o in c.operands; i > 0]

outside_operand(c) if {
	some o in c.operands
	o.inside_workspace == false
}
