# Environment assignments that change what an allowed command runs (LD_PRELOAD, PATH,
# PAGER, GIT_SSH_COMMAND, BASH_ENV, ...), on a command (FOO=x cmd) or as standalone
# assignments (PATH=./bin; ls). The NAME=VALUE operands of env, export, declare, local,
# readonly and typeset are checked by their tool rules (tools/assign.rego).
package cmdgate.checks

import data.cmdgate.lib

# env_findings: the prefix assignments of a command (also those a wrapper makes), called
# from commands.rego for the commands that have any.
#   env.dangerous     a variable that can make the command run other code
#   network.dev_tcp   a value naming bash's /dev/tcp or /dev/udp
env_findings(c) := {lib.finding("deny", "env.dangerous", msg, c) |
	some name, value in c.env
	lib.dangerous_env(name, value)
	msg := sprintf("setting %s for %s can make it run other code; it is not allowed", [name, c.name])
} | {lib.finding("deny", "network.dev_tcp", msg, c) |
	some name, value in c.env
	lib.dev_net("", value, true)
	msg := sprintf("%s names bash's /dev/tcp or /dev/udp, which open network connections", [name])
}

# assignment_findings: standalone assignments, loop variables and ${A:=b} defaults
# (input.assignments; called from input.rego):
#   env.dangerous                   assigning a dangerous variable
#   escape.arithmetic_substitution  bash evaluates a[$(cmd)] inside arithmetic, so a
#                                   static value holding $( or ` runs code when a builtin
#                                   later evaluates the variable as a number (let,
#                                   declare -i, test -eq, [[ ]], $(( )))
#   network.dev_tcp                 a value naming /dev/tcp or /dev/udp, for a later
#                                   `cat < $f` (the redirect itself is dynamic then)
assignment_findings(a) := ({lib.request_finding("deny", "env.dangerous", msg) |
	lib.dangerous_env(a.name, assigned_value(a))
	msg := sprintf("assigning %s can make later commands run other code; it is not allowed", [a.name])
} | {lib.request_finding("deny", "escape.arithmetic_substitution", msg) |
	a.dynamic == false
	lib.substitution_text(a.value)
	msg := sprintf("the value of %s holds a command substitution that arithmetic evaluation would run", [a.name])
}) | {lib.request_finding("deny", "network.dev_tcp", msg) |
	lib.dev_net("", a.value, true)
	msg := sprintf("%s names bash's /dev/tcp or /dev/udp, which open network connections", [a.name])
}

# assigned_value is the value of an assignment, "$" (run-time) when it is dynamic.
assigned_value(a) := "$" if a.dynamic == true

else := a.value
