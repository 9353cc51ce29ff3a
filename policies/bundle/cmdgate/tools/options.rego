# Options that run another program (data.cmdgate.lists.exec_options), in every spelling
# parse reads: commands[].options names each option canonically, with its value, the
# way the tool's own parser reads the words (tar -Iprog, -cI prog, cIf prog a.tar,
# --use-compress-prog=prog, --use-compress-program prog, /usr/bin/tar ...), so a rule
# written for the canonical name meets them all. checks/options.rego calls
# exec_option_findings for the commands that have such an option; the tools' own
# check() rules on argv stay beside it (a document without options, hand-written, meets
# those).
package cmdgate.tools

import data.cmdgate.lib

# exec_option_findings: the findings of the exec-capable options of tool k in c. An
# option word whose letters are only known at run time (-$X) may be any of them:
# dynamic.exec_option.
exec_option_findings(k, c) := {lib.finding("deny", spec.rule, exec_option_message(c, o, sub), c) |
	spec := lib.lists.exec_options[k]
	sub_i := exec_option_subcommand(k, c)
	some o in c.options
	sub := exec_option_scope(c, o, sub_i)
	some cond in exec_option_conds(spec, sub, o.name)
	exec_option_value(cond, o)
} | {lib.finding(lib.dynamic_effect, "dynamic.exec_option", msg, c) |
	lib.lists.exec_options[k]
	some o in c.options
	o.dynamic == true
	lib.dynamic_text(o.name)
	msg := sprintf("%s %s is an option known only at run time, which may be one that runs another program", [c.name, o.name])
}

# exec_option_subcommand is the index in argv of the subcommand of a tool that has
# subcommands (git), count(argv) for the others.
exec_option_subcommand("git", c) := git_subcommand_index(c.argv)

exec_option_subcommand(k, c) := count(c.argv) if k != "git"

# exec_option_scope is the subcommand an option follows ("" for the tool's own options).
exec_option_scope(c, o, sub_i) := c.argv[sub_i] if {
	o.argi > sub_i
} else := ""

# exec_option_conds are the conditions of an option named name: as one of the tool's
# options anywhere, and as one of the subcommand's.
exec_option_conds(spec, sub, name) := array.concat(
	[cond | cond := spec.options[name]],
	[cond | sub != ""; cond := spec.subcommands[sub][name]],
)

# exec_option_value: an option counts when its condition's `when` matches the value (an
# option whose value is only known at run time always counts), and `unless` does not.
exec_option_value(cond, _) if {
	not cond.when
	not cond.unless
}

exec_option_value(cond, o) if {
	cond.when
	o.dynamic == true
}

exec_option_value(cond, o) if {
	cond.when
	o.dynamic == false
	regex.match(cond.when, o.value)
}

exec_option_value(cond, o) if {
	cond.unless
	o.dynamic == true
}

exec_option_value(cond, o) if {
	cond.unless
	o.dynamic == false
	not regex.match(cond.unless, o.value)
}

exec_option_message(c, o, "") := sprintf("%s %s (written %s) runs another program or code the policy cannot check", [c.name, o.name, c.argv[o.argi]])

exec_option_message(c, o, sub) := sprintf("%s %s %s (written %s) runs another program or code the policy cannot check", [c.name, sub, o.name, c.argv[o.argi]]) if sub != ""

# git_setting_findings: the configuration settings git is given as options: -c before
# the subcommand (also attached: -ccore.pager=x), and git clone's -c/--config, which
# sets the new repository's configuration before it fetches (core.sshCommand runs
# then); only keys on the safe list pass (escape.git_config).
git_setting_findings(c) := {lib.finding("deny", "escape.git_config", msg, c) |
	sub_i := git_subcommand_index(c.argv)
	some o in c.options
	git_option_setting(c, o, sub_i)
	not git_safe_setting(o.value)
	msg := sprintf("git %s %s may make git run a program; only display settings are allowed", [git_option_place(o, sub_i), o.value])
}

git_option_setting(_, o, sub_i) if {
	o.name == "-c"
	o.argi < sub_i
}

git_option_setting(c, o, sub_i) if {
	o.name == "--config"
	o.argi > sub_i
	c.argv[sub_i] == "clone"
}

git_option_place(o, sub_i) := "-c" if o.argi < sub_i

else := "clone --config"
