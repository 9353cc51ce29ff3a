# xargs runs a command on words read from its input (parse adds the command as its own
# entry, checked like any other). A shell or interpreter there runs a program made of
# that input: denied. Its -a FILE is read like an operand (xargs is a non-path tool:
# its operands are the command).
package cmdgate.tools

import data.cmdgate.lib

check(k, c) := {lib.finding("deny", "escape.xargs_exec", msg, c) |
	name := xargs_command(c.argv)
	exec_of_program_runner({"name": name})
	msg := sprintf("xargs runs %s, a shell or interpreter, on its input", [name])
} | {lib.finding("deny", "secrets.read", msg, c) |
	some v in lib.option_values(xargs_own_words(c.argv), {"short": ["a"], "long": ["--arg-file"], "abbrev": true})
	lib.secret(lib.target(c, v))
	msg := sprintf("xargs -a %s reads a secret location outside the workspace", [v])
} if k == "xargs"

# xargs_own_words are xargs's own words: argv up to the command it runs.
xargs_own_words(argv) := array.slice(argv, 0, i) if {
	i := min({j |
		some j, w in argv
		j > 0
		not startswith(w, "-")
		not xargs_takes_value(argv[j - 1])
	})
} else := argv

# xargs_takes_value reports an option word whose value is the next word (-a, -0a,
# --arg-file).
xargs_takes_value(w) if w in xargs_value_options

xargs_takes_value(w) if regex.match(`^-[^-]*[adEILnPs]$`, w)

xargs_value_options := {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}

# xargs_command is the name of the command xargs runs ("" when it runs echo).
xargs_command(argv) := lib.basename(ws[0]) if {
	ws := lib.positional(argv, xargs_value_options)
	count(ws) > 0
} else := ""
