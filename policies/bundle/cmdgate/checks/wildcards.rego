# Wildcard injection: the shell expands an unquoted glob to the names of files, and a
# file named like an option (`touch -- -rf` then `rm *`; `--checkpoint-action=exec=sh`
# for tar, `--reference=x` for chmod, `-exec` for find) becomes an option of the
# command. For the tools whose options do harm (data.cmdgate.lists.glob_options), a glob
# that can expand to a word starting with "-" and stands where the tool reads options
# (before "--") is denied: `./*` and `-- *` are the safe spellings.
package cmdgate.checks

import data.cmdgate.lib

# escape.wildcard_injection (deny). Only commands with a glob (parse's glob) are looked
# at.
findings contains f if {
	some i in input.routed.wildcard
	c := input.commands[i]
	c.glob == true
	spec := lib.profile_for(c).wildcard
	spec != false
	some f in wildcard_findings(c, spec)
}

wildcard_findings(c, spec) := {lib.finding("deny", "escape.wildcard_injection", msg, c) |
	wildcard_subcommand(c, spec)
	end := wildcard_end(c, spec)
	some o in c.operands
	o.argi < end
	option_glob(o)
	msg := sprintf("%s %s: the shell expands %s to file names, and a file named like an option becomes an option of %s (%s); write ./%s or put -- before it%s", [c.name, o.text, o.text, c.name, spec.options, o.text, pattern_hint(c, spec)])
} | {lib.finding("deny", "escape.wildcard_injection", msg, c) |
	wildcard_subcommand(c, spec)
	end := wildcard_end(c, spec)
	some i, w in c.argv
	i > 0
	i < end
	startswith(w, "-")
	regex.match(`[*?\[]`, split(w, "=")[0])
	msg := sprintf("%s %s: the shell expands the glob in the option %s to the names of files that look like other options of %s (%s); quote it", [c.name, w, w, c.name, spec.options])
}

pattern_hint(c, spec) := sprintf(" (quote it if it is a pattern for %s itself)", [c.name]) if {
	spec.patterns == true
} else := ""

# wildcard_end is the index in argv where the tool stops reading options: the first
# "--", or for tools that take options only before their first operand (awk, xargs)
# that operand when it comes first.
wildcard_end(c, spec) := min([lib.dashdash(c.argv), first_plain_operand(c, spec.until_operand)]) if {
	spec.until_operand
} else := lib.dashdash(c.argv)

# first_plain_operand is the argv index of the first operand that is not an option's
# value (values: the options taking the next word) and cannot expand to an option.
first_plain_operand(c, values) := min(plain) if {
	plain := [o.argi |
		some o in c.operands
		not c.argv[o.argi - 1] in values
		not option_glob(o)
	]
	count(plain) > 0
} else := count(c.argv)

wildcard_subcommand(_, spec) if not spec.subcommands

wildcard_subcommand(c, spec) if {
	lib.positional(c.argv, data.cmdgate.lists.git.global_value_options)[0] in spec.subcommands
}

# The words denied: glob operands whose expansion may start with "-" (option_glob), and
# option words with a glob in their name (`-rf*`, `--forc?`; not `--exclude=*.o`, whose
# expansion keeps the option).
#
# option_glob reports a glob operand whose expansion may start with "-": it starts with
# * or ?, an extended glob, or a bracket expression that may match "-" (negated, with
# punctuation or a range through it; `[a-z]` and `[0-9A-F_.]` cannot).
option_glob(o) if {
	o.glob == true
	regex.match(`^([*?]|[@!+]\()`, o.text)
}

option_glob(o) if {
	o.glob == true
	startswith(o.text, "[")
	not regex.match(`^\[([A-Za-z0-9]-[A-Za-z0-9]|[A-Za-z0-9_.])+\]`, o.text)
}
