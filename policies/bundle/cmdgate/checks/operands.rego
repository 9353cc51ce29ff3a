# Operands outside the workspace: secret locations read by any command (home
# directories, keys, cloud and package-manager credentials, /etc/shadow,
# /proc/*/environ; a dynamic operand is matched on its text, $HOME/.ssh/id_rsa, a glob
# on what it can match), and files a tool writes outside the workspace (the writers
# list: cp's last operand, every operand of mv, rm, touch, mkdir, tee, ...). Inside the
# workspace nothing is a secret, and writes are fine except into .git/.
package cmdgate.checks

import data.cmdgate.lib

# operand_findings: called from commands.rego for the commands that are not contained.
operand_findings(c) := {f |
	some j, o in c.operands
	o.inside_workspace == false
	some f in outside_operand_findings(c, lib.profile_for(c), j, o)
} | {f |
	some j, o in c.operands
	contains(o.path, "/.git")
	f := git_internal_finding(c, lib.profile_for(c), j, o)
}

outside_operand_findings(c, p, j, o) := {lib.finding("deny", "secrets.read", msg, c) |
	p.non_path == false
	not pattern_operand(c, p, j)
	lib.secret(o)
	msg := sprintf("%s reads %s, a secret location outside the workspace", [c.name, o.text])
} | {lib.finding("deny", "write.outside_workspace", msg, c) |
	p.writes_operands == true
	written_operand(c, p.writer, j, o)
	lib.outside_write(o)
	not placeholder(c, o)
	msg := sprintf("%s writes %s, outside the workspace", [c.name, target_text(o)])
}

# write.git_internals: a tool writing its operands into .git/.
git_internal_finding(c, p, j, o) := lib.finding("deny", "write.git_internals", msg, c) if {
	p.writes_operands == true
	written_operand(c, p.writer, j, o)
	lib.git_internal(o)
	msg := sprintf("%s writes %s, inside .git, whose hooks and config run code", [c.name, o.text])
}

# pattern_operand reports the first operand of grep, sed, awk, jq, ...: a pattern or a
# program, not a file, unless an option gives the pattern from a file.
pattern_operand(c, p, 0) if {
	p.pattern != false
	not lib.has_flag(c.argv, p.pattern)
}

# written_operand reports the operands a writers spec writes.
written_operand(_, spec, _, _) if spec.all_operands == true

written_operand(c, spec, j, _) if {
	spec.last_operand == true
	j == count(c.operands) - 1
	j > 0
}

written_operand(_, spec, 1, _) if spec.second_operand == true

# chmod: every operand but the mode (which may look like an option: chmod -w f).
written_operand(c, spec, _, o) if {
	spec.mode_operand == true
	o.text != lib.chmod_mode(c)
}

target_text(t) := t.text if t.text != ""

else := t.path

# placeholder reports a run-time operand of a command run by find -exec or xargs: the
# name of a found file or an input word. find's own rule checks where it searches;
# xargs writes ask (checks/profiles.rego).
placeholder(c, t) if {
	t.dynamic == true
	some w in c.via
	w in {"find", "xargs"}
}
