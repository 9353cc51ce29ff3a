# xargs runs a command on words read from its input (parse adds the command as its own
# entry, checked like any other). A shell or interpreter there runs a program made of
# that input: denied.
package cmdgate.tools

import data.cmdgate.lib

check(k, c) := {lib.finding("deny", "escape.xargs_exec", msg, c) |
	name := xargs_command(c.argv)
	exec_of_program_runner({"name": name})
	msg := sprintf("xargs runs %s, a shell or interpreter, on its input", [name])
} if k == "xargs"

xargs_value_options := {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}

# xargs_command is the name of the command xargs runs ("" when it runs echo).
xargs_command(argv) := lib.basename(ws[0]) if {
	ws := lib.positional(argv, xargs_value_options)
	count(ws) > 0
} else := ""
