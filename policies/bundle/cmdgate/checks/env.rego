# Environment assignments that change what an allowed command runs (LD_PRELOAD, PATH,
# PAGER, GIT_SSH_COMMAND, BASH_ENV, ...), on a command (FOO=x cmd) or as standalone
# assignments (PATH=./bin; ls). The NAME=VALUE operands of env, export, declare, local,
# readonly and typeset are checked by their tool rules (tools/assign.rego).
package cmdgate.checks

import data.cmdgate.lib

# env.dangerous: a prefix assignment on a command (also those a wrapper makes).
findings contains lib.finding("deny", "env.dangerous", msg, c) if {
	some i in lib.to_check
	c := input.commands[i]
	some name, value in c.env
	lib.dangerous_env(name, value)
	msg := sprintf("setting %s for %s can make it run other code; it is not allowed", [name, c.name])
}

# env.dangerous: standalone assignments, loop variables and ${A:=b} defaults.
findings contains lib.request_finding("deny", "env.dangerous", msg) if {
	some a in input.assignments
	lib.dangerous_env(a.name, assigned_value(a))
	msg := sprintf("assigning %s can make later commands run other code; it is not allowed", [a.name])
}

# assigned_value is the value of an assignment, "$" (run-time) when it is dynamic.
assigned_value(a) := "$" if a.dynamic == true

else := a.value

# escape.arithmetic_substitution: bash evaluates a[$(cmd)] inside arithmetic, so a
# static value holding $( or ` runs code when a builtin later evaluates the variable as
# a number (let, declare -i, test -eq, [[ ]], $(( ))).
findings contains lib.request_finding("deny", "escape.arithmetic_substitution", msg) if {
	some a in input.assignments
	a.dynamic == false
	lib.substitution_text(a.value)
	msg := sprintf("the value of %s holds a command substitution that arithmetic evaluation would run", [a.name])
}

# network.dev_tcp: a variable holding a /dev/tcp or /dev/udp path, for a later
# `cat < $f` (the redirect itself is dynamic then).
findings contains lib.request_finding("deny", "network.dev_tcp", msg) if {
	some a in input.assignments
	lib.dev_net("", a.value)
	msg := sprintf("%s names bash's /dev/tcp or /dev/udp, which open network connections", [a.name])
}

findings contains lib.finding("deny", "network.dev_tcp", msg, c) if {
	some i in lib.to_check
	c := input.commands[i]
	some name, value in c.env
	lib.dev_net("", value)
	msg := sprintf("%s names bash's /dev/tcp or /dev/udp, which open network connections", [name])
}
