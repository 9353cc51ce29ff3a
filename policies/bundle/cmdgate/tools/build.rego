# Build and package tools: options that run other programs (go -toolexec/-exec/
# -vettool, -ldflags=-extld=..., cargo --config, make --eval, mvn exec:), global installs and tool
# configuration written outside the workspace, and the subcommands that run another
# command (bundle exec, conda run, npm exec, ...), whose command is checked by name.
package cmdgate.tools

import data.cmdgate.allowlist
import data.cmdgate.lib

# check_triggers: per tool key, a regular expression over a command's words joined by
# newlines that every command its check() rules can find something in matches, tested
# first by its check(); the engine routes a command of the tool to the checks only when
# its words match (lib.route_trigger). go's rules out most go commands.
check_triggers["go"] := `(?m)^(--?(toolexec|exec|vettool)\b|env$)|-ext(ld|ar)\b`

check(k, c) := set() if {
	k == "go"
	regex.match(check_triggers.go, concat("\n", c.argv)) == false
} else := go_findings(c) if k == "go"

go_findings(c) := ({lib.finding("deny", "escape.go_exec", msg, c) |
	some i, w in c.argv
	i > 0
	startswith(w, "-")
	name := split(trim_left(w, "-"), "=")[0]
	name in {"toolexec", "exec", "vettool"}
	msg := sprintf("go -%s runs another program for the build", [name])
} | {lib.finding("deny", "escape.go_exec", msg, c) |
	some i, w in c.argv
	i > 0
	regex.match(`-ext(ld|ar)\b`, w)
	msg := sprintf("go %s names an external linker or archiver program to run", [w])
}) | {lib.finding("deny", "write.tool_config", "go env -w/-u changes the Go configuration outside the workspace", c) |
	"env" in c.argv
	lib.positional(c.argv, ["-C"])[0] == "env"
	some w in c.argv
	w in {"-w", "-u"}
}

check(k, c) := cargo_findings(c) if k == "cargo"

cargo_findings(c) := {lib.finding("deny", "escape.cargo_config", "cargo --config can set a runner or linker that runs any program", c) |
	some i, w in c.argv
	i > 0
	split(w, "=")[0] == "--config"
}

check(k, c) := make_findings(c) if k == "make"

make_findings(c) := {lib.finding("deny", "escape.make_eval", "make --eval/-E evaluates makefile text given on the command line", c) |
	some i, w in c.argv
	i > 0
	make_eval_word(w)
} | {f |
	some o in c.operands
	contains(o.text, "=")
	f := make_variable_finding(c, o, make_assignment(o.text))
}

# make_assignment splits a command-line variable NAME[:|::|+|?|!]=VALUE.
make_assignment(text) := {"name": m[1], "op": m[2], "value": m[3]} if {
	m := regex.find_all_string_submatch_n(`^([^=\s:+?!]+)\s*(::?|\+|\?|!)?=((?s).*)$`, text, 1)[0]
}

# make_variable_finding: escape.make_variable for the variables that change how make
# runs recipes (lists.make_variables), `!=` (make runs the value in a shell) and values
# that look like a command; env.dangerous for the environment variables make passes
# on (PATH, LD_PRELOAD, CC=/tmp/x, ...).
make_variable_finding(c, o, a) := lib.finding("deny", "escape.make_variable", msg, c) if {
	a.name in lib.lists.make_variables
	msg := sprintf("make %s= changes how make runs recipes; it is not allowed", [a.name])
} else := lib.finding("deny", "escape.make_variable", msg, c) if {
	a.op == "!"
	msg := sprintf("make %s!= runs its value in a shell", [a.name])
} else := lib.finding("deny", "env.dangerous", msg, c) if {
	lib.dangerous_env(a.name, make_value(o, a))
	msg := sprintf("make %s= can make the recipes run other code; it is not allowed", [a.name])
} else := lib.finding("deny", "escape.make_variable", msg, c) if {
	command_like(a.value)
	msg := sprintf("make %s=%s looks like a command the recipes would run", [a.name, a.value])
}

make_value(o, a) := "$" if o.dynamic == true

else := a.value

# command_like reports a value holding shell syntax, make's $(shell)/$(eval), a $$(...)
# that reaches the recipe's shell, or a shell or interpreter with arguments.
command_like(v) if regex.match(`[;&|<>\x60]|\$[({](shell|eval)\b|\$\$[({]|^\s*(\S*/)?(sh|bash|zsh|dash|ksh|mksh|fish|busybox|env|eval|exec|python[0-9.]*|perl|ruby|node|php|lua)\s`, v)

make_eval_word(w) if split(w, "=")[0] == "--eval"

make_eval_word(w) if regex.match(`^-[A-Za-z]*E`, w)

check(k, c) := mvn_findings(c) if k == "mvn"

mvn_findings(c) := {lib.finding("deny", "escape.maven_exec", msg, c) |
	some o in c.operands
	regex.match(`^(exec|antrun|org\.codehaus\.mojo:exec-maven-plugin|org\.apache\.maven\.plugins:maven-antrun-plugin)(:|$)`, o.text)
	msg := sprintf("mvn %s runs programs", [o.text])
}

check(k, c) := package_manager_findings(c) | wrapped_findings(c) if k == "npm"

check(k, c) := package_manager_findings(c) | wrapped_findings(c) if k == "pnpm"

check(k, c) := package_manager_findings(c) | wrapped_findings(c) if k == "yarn"

check(k, c) := package_manager_findings(c) | wrapped_findings(c) if k == "composer"

package_manager_findings(c) := ({lib.finding("deny", "write.outside_workspace", msg, c) |
	global_install(c)
	msg := sprintf("%s global installs write outside the workspace", [c.name])
} | {lib.finding("deny", "write.tool_config", msg, c) |
	pos := lib.positional(c.argv, {v | some v in object.get(lib.lists.subcommand_value_options, c.name, [])})
	count(pos) > 1
	pos[0] == "config"
	pos[1] in {"set", "delete", "edit", "rm", "unset"}
	msg := sprintf("%s config %s changes the configuration outside the workspace", [c.name, pos[1]])
}) | {lib.finding("deny", "escape.npm_script_shell", "--script-shell runs package scripts with another program", c) |
	some i, w in c.argv
	i > 0
	startswith(w, "--script-shell")
}

global_install(c) if lib.has_flag(c.argv, ["-g", "--global", "--location=global"])

global_install(c) if {
	lib.positional(c.argv, set())[0] == "global"
}

check(k, c) := pip_findings(c) if k == "pip"

pip_findings(c) := ({lib.finding("deny", "write.outside_workspace", "pip install --user writes into the home directory", c) |
	lib.has_flag(c.argv, ["--user"])
} | {lib.finding("deny", "write.tool_config", msg, c) |
	pos := lib.positional(c.argv, set())
	count(pos) > 1
	pos[0] == "config"
	pos[1] in {"set", "unset", "edit"}
	msg := sprintf("pip config %s changes the configuration outside the workspace", [pos[1]])
}) | {lib.finding("deny", "write.outside_workspace", msg, c) |
	# pip3 is an alias of pip; the writers list is keyed by the exact name.
	c.name != "pip"
	some v in lib.option_values(c.argv, lib.lists.writers.pip)
	t := lib.target(c, v)
	lib.outside_write(t)
	msg := sprintf("%s writes %s, outside the workspace", [c.name, v])
}

check(k, c) := wrapped_findings(c) if k == "bundle"

check(k, c) := wrapped_findings(c) if k == "conda"

check(k, c) := wrapped_findings(c) if k == "mamba"

check(k, c) := wrapped_findings(c) if k == "dotnet"

# wrapped_findings: `bundle exec CMD`, `conda run CMD`, `npm exec CMD`, ... run CMD,
# which parse does not unwrap: its name is checked against the forbidden list, the
# shells and the allowlist here.
wrapped_findings(c) := {f |
	inner := wrapped_command(c)
	some f in wrapped_name_findings(c, inner)
}

wrapped_command(c) := lib.basename(rest[0]) if {
	subs := lib.lists.exec_subcommands[c.name]
	values := {v | some v in object.get(lib.lists.subcommand_value_options, c.name, [])}
	pos := lib.positional(c.argv, values)
	count(pos) > 0
	pos[0] in subs
	i := [j | some j, w in c.argv; j > 0; w == pos[0]][0]
	rest := [w |
		some j, w in c.argv
		j > i
		not startswith(w, "-")
		not c.argv[j - 1] in values
		not c.argv[j - 1] in {"-n", "--name", "-p", "--prefix", "--package", "-c", "--call"}
	]
	count(rest) > 0
}

wrapped_name_findings(c, inner) := ({lib.finding("deny", "forbidden.command", msg, c) |
	reason := object.get(lib.lists.forbidden, inner, object.get(lib.lists.forbidden, lib.family(inner), ""))
	reason != ""
	msg := sprintf("%s runs %s: %s", [c.name, inner, reason])
} | {lib.finding("deny", "escape.wrapped_shell", msg, c) |
	exec_of_program_runner({"name": inner})
	msg := sprintf("%s runs %s, a shell or interpreter the policy cannot check through it", [c.name, inner])
}) | {lib.finding(lib.unknown_effect, "allowlist.unknown_command", msg, c) |
	eff := allowlist.effective
	not eff.names[inner]
	not lib.lists.forbidden[inner]
	not exec_of_program_runner({"name": inner})
	msg := sprintf("%s runs %s, which is not on the allowlist", [c.name, inner])
}

# cmake -E COMMAND: env, chdir and time run a command the policy cannot see; the file
# commands (rm, copy, rename, make_directory, create_symlink, tar, ...) write their
# operands, which must stay inside the workspace; rm -r -f is the forbidden rm -rf.
check(k, c) := cmake_findings(c, i) if {
	k == "cmake"
	i := [j | some j, w in c.argv; w == "-E"][0]
} else := set() if k == "cmake"

cmake_findings(c, i) := ({lib.finding("deny", "escape.cmake_command", msg, c) |
	c.argv[i + 1] in {"env", "chdir", "time"}
	msg := sprintf("cmake -E %s runs a command the policy cannot check", [c.argv[i + 1]])
} | {lib.finding("deny", "write.outside_workspace", msg, c) |
	not c.argv[i + 1] in {"echo", "echo_append", "cat", "compare_files", "md5sum", "sha1sum", "sha256sum", "sha512sum", "capabilities", "environment", "true", "false", "sleep"}
	some o in c.operands
	o.argi > i + 1
	lib.outside_write(o)
	msg := sprintf("cmake -E %s %s writes outside the workspace", [c.argv[i + 1], o.text])
}) | {f |
	c.argv[i + 1] in {"rm", "remove_directory"}
	words := array.concat(["rm"], array.slice(c.argv, i + 2, count(c.argv)))
	some f in cmake_rm_findings(c, c.argv[i + 1], words)
}

cmake_rm_findings(c, "remove_directory", _) := {lib.finding("ask", "destructive.rm_recursive", "cmake -E remove_directory deletes whole directory trees; a person must approve it", c)}

cmake_rm_findings(c, "rm", words) := rm_findings(object.union(c, {"argv": words}))
