# find: -exec/-execdir/-ok/-okdir run a command per file (parse adds it as its own
# command, checked like any other; a shell or interpreter there is denied here),
# -delete deletes, -fprint/-fls write (write.outside_workspace, via the writers list).
package cmdgate.tools

import data.cmdgate.lib

# Every rule here is about -exec/-execdir/-ok/-okdir or -delete: without them, nothing
# (its trigger, see build.rego).
check_triggers["find"] := `(?m)^-(exec|execdir|ok|okdir|delete)$`

check(k, c) := set() if {
	k == "find"
	regex.match(check_triggers.find, concat("\n", c.argv)) == false
} else := find_findings(c) if k == "find"

find_findings(c) := ((({lib.finding("deny", "escape.find_exec", msg, c) |
	some inner in find_exec_commands(c.argv)
	exec_of_program_runner(inner)
	msg := sprintf("find %s runs %s, a shell or interpreter whose program the policy cannot check", [inner.action, inner.name])
} | {lib.finding("deny", "write.outside_workspace", msg, c) |
	"-delete" in c.argv
	some r in find_roots(c)
	lib.outside_write(r)
	msg := sprintf("find -delete deletes under %s, outside the workspace", [r.text])
}) | {lib.finding("ask", "destructive.find_delete", "find -delete deletes every file it matches; a person must approve it", c) |
	"-delete" in c.argv
	every r in find_roots(c) {
		not lib.outside_write(r)
	}
}) | {lib.finding("deny", "write.outside_workspace", msg, c) |
	some inner in find_exec_commands(c.argv)
	spec := lib.lists.writers[inner.name]
	writes_operands(spec)
	some r in find_roots(c)
	lib.outside_write(r)
	msg := sprintf("find %s %s changes files under %s, outside the workspace", [inner.action, inner.name, r.text])
}) | {f |
	some f in recursive_secret_read(c, find_roots(c))
	count(find_exec_commands(c.argv)) > 0
}

writes_operands(spec) if spec.all_operands

writes_operands(spec) if spec.last_operand

find_exec_actions := {"-exec", "-execdir", "-ok", "-okdir"}

# find_exec_commands are the commands of find's -exec/-execdir/-ok/-okdir actions.
find_exec_commands(argv) := {{"action": w, "name": lib.basename(argv[i + 1])} |
	some i, w in argv
	w in find_exec_actions
	i + 1 < count(argv)
}

exec_of_program_runner(inner) if inner.name in lib.lists.shells

exec_of_program_runner(inner) if lib.family(inner.name) in lib.lists.shells

exec_of_program_runner(inner) if lib.lists.interpreter_names[inner.name]

exec_of_program_runner(inner) if lib.lists.interpreter_names[lib.family(inner.name)]

# find_roots are the starting points of a find command (the words before the first
# expression, "." when there are none), as targets.
find_roots(c) := roots if {
	end := find_expression_start(c.argv)
	roots := [lib.target(c, w) |
		some i, w in c.argv
		i > 0
		i < end
		not w in {"-H", "-L", "-P"}
		not startswith(w, "-O")
	]
	count(roots) > 0
} else := [lib.target(c, ".")]

find_expression_start(argv) := min({i |
	some i, w in argv
	i > 0
	find_expression_word(w)
} | {count(argv)})

find_expression_word(w) if {
	startswith(w, "-")
	not w in {"-H", "-L", "-P"}
	not startswith(w, "-O")
}

find_expression_word(w) if w in {"(", "!", ")", ","}
