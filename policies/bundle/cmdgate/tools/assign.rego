# Builtins that assign variables or evaluate arithmetic: their NAME=VALUE operands may
# set a dangerous variable (env.dangerous), and a static operand holding $( or ` runs
# a command when bash evaluates it as arithmetic (escape.arithmetic_substitution:
# let 'x=a[$(id)]', test "$v" -eq 1 with v='a[$(id)]').
package cmdgate.tools

import data.cmdgate.lib

check(k, c) := assign_findings(c) | arithmetic_findings(c) if k == "export"

check(k, c) := assign_findings(c) | arithmetic_findings(c) if k == "declare"

check(k, c) := assign_findings(c) | arithmetic_findings(c) if k == "typeset"

check(k, c) := assign_findings(c) | arithmetic_findings(c) if k == "local"

check(k, c) := assign_findings(c) | arithmetic_findings(c) if k == "readonly"

# let's operands are arithmetic expressions (parse keeps their source text): a
# substitution in them runs whatever it holds.
check(k, c) := {lib.finding("deny", "escape.arithmetic_substitution", msg, c) |
	some o in c.operands
	lib.substitution_text(o.text)
	msg := sprintf("let evaluates %q as arithmetic, which runs the command substitution in it", [o.text])
} if k == "let"

check(k, c) := arithmetic_findings(c) if k == "test"

check(k, c) := arithmetic_findings(c) if k == "printf"

check(k, c) := arithmetic_findings(c) if k == "read"

check(k, c) := arithmetic_findings(c) if k == "shift"

check(k, c) := arithmetic_findings(c) if k == "return"

check(k, c) := arithmetic_findings(c) if k == "exit"

check(k, c) := arithmetic_findings(c) if k == "ulimit"

check(k, c) := arithmetic_findings(c) if k == "wait"

assign_findings(c) := {lib.finding("deny", "env.dangerous", msg, c) |
	some o in c.operands
	name := assigned_name(o.text)
	lib.dangerous_env(name, assigned_operand_value(o))
	msg := sprintf("%s %s can make later commands run other code; it is not allowed", [c.name, name])
}

assigned_name(text) := n if {
	contains(text, "=")
	n := trim_suffix(split(text, "=")[0], "+")
	regex.match(`^[A-Za-z_][A-Za-z0-9_%]*$`, n)
}

# assigned_operand_value is the value of a NAME=VALUE operand, "$" (run-time) when the
# operand is dynamic.
assigned_operand_value(o) := "$" if o.dynamic == true

else := substring(o.text, indexof(o.text, "=") + 1, -1)

arithmetic_findings(c) := {lib.finding("deny", "escape.arithmetic_substitution", msg, c) |
	some o in c.operands
	not o.dynamic
	lib.substitution_text(o.text)
	msg := sprintf("%s may evaluate %q as arithmetic, which runs the command substitution in it", [c.name, o.text])
}
