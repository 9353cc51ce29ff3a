# Builtins that change how later commands run: trap (runs a command later), hash -p
# (maps a name to any file), shopt -s expand_aliases and alias definitions, enable -f
# (loads a builtin from a shared object), mapfile/readarray -C (runs a callback), env
# -S/--split-string and env -C.
package cmdgate.tools

import data.cmdgate.lib

check(k, c) := {lib.finding("deny", "escape.trap", msg, c) |
	count(c.operands) > 1
	action := c.operands[0]
	not action.dynamic
	not action.text in {"", "-"}
	not regex.match(`^(-?[0-9]+|(SIG)?[A-Z]+[0-9+-]*)$`, action.text)
	not trap_reparsed
	msg := sprintf("trap %q runs a command later; it is not allowed", [action.text])
} | {lib.finding(lib.dynamic_effect, "dynamic.script", "trap runs a command that is only known at run time", c) |
	count(c.operands) > 0
	c.operands[0].dynamic
} if k == "trap"

# trap_reparsed: parse found the trap's command (via trap) and it is checked like any
# other command.
trap_reparsed if {
	some c in input.commands
	"trap" in c.via
}

check(k, c) := {lib.finding("deny", "escape.hash_path", "hash -p makes a command name run another file", c) |
	lib.has_short(c.argv, "p")
} if k == "hash"

check(k, c) := {lib.finding("deny", "escape.alias", "shopt -s expand_aliases lets aliases replace checked command names", c) |
	some o in c.operands
	o.text == "expand_aliases"
	lib.has_short(c.argv, "s")
} if k == "shopt"

check(k, c) := {lib.finding("deny", "escape.alias", "alias definitions replace checked command names", c) |
	some o in c.operands
	contains(o.text, "=")
} if k == "alias"

check(k, c) := {lib.finding("deny", "escape.enable", "enable -f loads a builtin from a shared object", c) |
	lib.has_short(c.argv, "f")
} if k == "enable"

# mapfile/readarray -C CALLBACK evaluates CALLBACK as shell code every few lines read.
check(k, c) := mapfile_findings(c) if k == "mapfile"

check(k, c) := mapfile_findings(c) if k == "readarray"

mapfile_findings(c) := {lib.finding("deny", "escape.mapfile_callback", msg, c) |
	lib.has_short(c.argv, "C")
	msg := sprintf("%s -C runs its callback as shell code, which the policy cannot check", [c.name])
}

check(k, c) := (assign_findings(c) | {lib.finding("deny", "escape.env_split", msg, c) |
	some w in env_own_words(c.argv)
	env_split_word(w)
	msg := sprintf("env %s splits a string into a command the policy cannot check", [w])
}) | {lib.finding("deny", "path.cd_outside_workspace", msg, c) |
	some v in lib.option_values(array.concat([c.argv[0]], env_own_words(c.argv)), {"short": ["C"], "long": ["--chdir"]})
	t := lib.target(c, v)
	not t.inside_workspace
	msg := sprintf("env -C %s runs the command outside the workspace", [v])
} if k == "env"

env_split_word(w) if startswith(w, "--split-string")

env_split_word(w) if startswith(w, "--s")

env_split_word(w) if regex.match(`^-[0iv]*S`, w)

# env_own_words are env's own options and assignments: the words before the command it
# runs (an option's separate value included).
env_own_words(argv) := array.slice(argv, 1, end) if {
	starts := [i |
		some i, w in argv
		i > 0
		not startswith(w, "-")
		not contains(w, "=")
		not argv[i - 1] in {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}
	]
	end := min(array.concat(starts, [count(argv)]))
}
