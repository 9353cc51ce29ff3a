# The request as a whole: a script that did not parse, nothing to run, no workspace;
# and its standalone assignments (env.rego).
package cmdgate.checks

import data.cmdgate.lib

findings contains f if {
	request_plain == false
	some f in request_findings
}

request_findings := {f | f := input_finding} | {f |
	some a in input.assignments
	some f in assignment_findings(a)
}

# request_plain: the common case, checked first (one body instead of the rules): a
# parsed script with commands, an absolute workspace and no standalone assignments.
default request_plain := false

request_plain if {
	input.error == null
	input.commands[0] # a list with a command
	startswith(input.request.workspace, "/")
	input.assignments == []
}

# input.parse_error: the script did not parse (syntax error, too deep, NUL byte, too
#                    large, invalid UTF-8): parse's message and position.
# input.empty:       no command at all (an empty or comment-only script).
# input.workspace:   without an absolute workspace nothing can be known to be inside it.
input_finding := lib.request_finding("deny", "input.parse_error", msg) if {
	e := input.error
	is_object(e)
	msg := sprintf("line %v, column %v: %v", [e.line, e.col, e.message])
} else := lib.request_finding("deny", "input.empty", "the input has no commands list") if {
	# A rule of its own keeps the negation defined when input.commands is undefined.
	not commands_listed
} else := lib.request_finding("deny", "input.empty", "the script has no command to run") if {
	count(input.commands) == 0
} else := lib.request_finding("deny", "input.workspace", "the request has no absolute workspace") if {
	not absolute_workspace
}

# The checks name the fields they read, never the whole input or input.request: the
# engine's decision cache relies on no rule reading input.request.id.
commands_listed if is_array(input.commands)

absolute_workspace if startswith(input.request.workspace, "/")
