# Package cmdgate.checks holds every rule of the default bundle: the findings set the
# decision is made from. The rules in this package run for every command of every
# request, so each starts with one cheap test (== on a field or on the command's
# profile, iteration over a usually empty list) that fails fast for an ordinary
# command; the work is done in functions only for the commands that pass it.
#
# Command names: dynamic names, the forbidden list, commands run by a path, and the
# allowlist. Every command of the script is checked, wherever parse found it
# (pipelines, substitutions, wrappers, nested shells, eval, function bodies, trap
# actions).
package cmdgate.checks

import data.cmdgate.allowlist
import data.cmdgate.lib

# name_findings (called from commands.rego): commands run by a profiled bare name
# that is not allowed by itself (git needs a subcommand; sudo is forbidden; sh is not
# listed) meet name_finding; commands run by a path, by a dynamic name or by a name
# without a profile meet every rule of checks/odd.rego. A call of a function the
# script defined (function_call) meets no name rule.
name_findings(c) := {f | f := name_finding(c, allowlist.effective, data.cmdgate.lists.forbidden)} if {
	data.cmdgate.index.unlisted[c.path] == true
	not function_call(c)
} else := odd_findings(c, lib.profile_for(c)) if {
	object.get(data.cmdgate.index.profiles, c.path, false) == false
} else := set()

# name_finding decides, in order:
#   dynamic.command_name       the name is only known at run time ($CMD, $(echo rm))
#   forbidden.command          the forbidden list, whatever the
#                              allowlist says
#   allowlist.path_command     run by a path outside the system directories (./ls,
#                              bin/go, /tmp/x/git): not the tool it is named after
#   forbidden.command          the family of a name (mkfs.ext4, nc.openbsd,
#                              iptables-save, killall5) unless the exact name is allowed
#   allowlist.unknown_command  not on the effective allowlist (by name, by name and
#                              subcommand, or as a versioned name: python3.12)
name_finding(c, eff, forbidden) := lib.finding(lib.dynamic_effect, "dynamic.command_name", msg, c) if {
	c.dynamic_name == true
	msg := sprintf("the command name %q is only known at run time", [c.path])
} else := lib.finding("deny", "forbidden.command", msg, c) if {
	reason := forbidden[c.name]
	not job_control_only(c)
	msg := sprintf("%s: %s", [c.name, reason])
} else := lib.finding(lib.unknown_effect, "allowlist.path_command", msg, c) if {
	contains(c.path, "/")
	not lib.system_path(c.path)
	not workspace_program(c)
	msg := sprintf("%s is run by a path outside the system directories; only the tools installed there are on the allowlist", [c.path])
} else := lib.finding("deny", "forbidden.command", msg, c) if {
	not eff.names[c.name]
	fam := lib.family(c.name)
	fam != c.name
	reason := forbidden[fam]
	msg := sprintf("%s (a form of %s): %s", [c.name, fam, reason])
} else := lib.finding(lib.unknown_effect, "allowlist.unknown_command", msg, c) if {
	count(c.argv) > 0
	not eff.names[c.name]
	not allowlist.allowed_unlisted(c, eff)
	not job_control_only(c)
	not workspace_source(c)
	msg := unknown_message(c, eff)
}

# workspace_program: under the sandboxed profile, a program of the workspace run by its
# path (./gradlew, bin/rails, ./scripts/test.sh) runs the project's code as `make`
# does, inside the sandbox; not one under .git (hooks), and not a path only known at
# run time.
workspace_program(c) if {
	lib.sandboxed
	contains(c.path, "/")
	t := lib.target(c, c.path)
	t.dynamic == false
	t.inside_workspace == true
	not lib.git_internal(t)
}

# ... and a program the command made in what the sandbox makes its own (its private
# /tmp, its home: cc -o /tmp/probe probe.c && /tmp/probe, ~/.cargo/bin/tool), which
# holds nothing but what the agent's commands put there.
workspace_program(c) if {
	lib.sandboxed
	contains(c.path, "/")
	t := lib.target(c, c.path)
	t.dynamic == false
	lib.sandbox_private(t)
}

# workspace_source: under the sandboxed profile, source (.) of a static file of the
# workspace (. .venv/bin/activate) runs the project's code as a workspace program does.
workspace_source(c) if {
	lib.sandboxed
	c.name in {"source", "."}
	count(c.operands) > 0
	t := c.operands[0]
	t.dynamic == false
	t.inside_workspace == true
	not lib.git_internal(t)
}

# function_call reports a call of a function the script defined (parse's
# function_call: bash certainly runs the function there, not a program or builtin).
# The function's body is what runs, and its commands are checked where it is defined,
# so the call meets no name rule: not the allowlist, and not the forbidden list either
# (a function named sudo runs its body, not sudo). Its words and redirects still meet
# the other rules (operands naming secrets, writes outside the workspace, the checks of
# a tool it is named after). Where parse is unsure (a definition inside an if, a loop or
# a subshell, a call before the definition, a name the script may unset), the field is
# false and the call is checked as a program.
function_call(c) if c.function_call == true

# kill of the shell's own jobs only (kill %1, kill -TERM %+) is job control, not the
# forbidden kill; it is a builtin then.
job_control_only(c) if {
	c.name == "kill"
	count(c.operands) > 0
	every o in c.operands {
		startswith(o.text, "%")
	}
}

unknown_message(c, eff) := sprintf("%s is not on the allowlist (allowed: %s)", [concat(" ", array.concat([c.name], allowlist.subcommand_words(c))), concat(", ", sort([concat(" ", [c.name, s]) | some s, _ in eff.subcommands[c.name].entries]))]) if {
	eff.subcommands[c.name]
} else := sprintf("%s is not on the allowlist", [c.name])
