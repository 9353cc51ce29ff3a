# Code loaded from outside the workspace: interpreters, shells and build tools run the
# program files, build files, plugins and configurations they are given
# (data.cmdgate.lists.code_files). The agent cannot write outside the workspace, so such
# a file there is someone else's code, which the policy cannot read: python3 /tmp/x.py,
# go run /tmp/x.go, make -f /tmp/evil.mk, eslint --rulesdir /tmp/rules, pytest
# --rootdir=/. A contained command names nothing outside the workspace, so only the
# others get here (commands.rego).
package cmdgate.checks

import data.cmdgate.lib

# code_findings: code.outside_workspace (deny) for every program file of the command
# that is outside the workspace, known only at run time, or under ~; for `python -m
# MODULE ARGS` also those of the module's own command line (python -m pytest /tmp/t,
# python -m pip install /tmp/pkg).
code_findings(c) := {f |
	p := lib.profile_for(c)
	p.code != false
	some f in tool_code_findings(c, c, p, p.code)
} | {f |
	lib.profile_for(c).key == "python"
	m := python_module_command(c)
	p := lib.profile_for(m)
	p.code != false
	some f in tool_code_findings(c, m, p, p.code)
}

# tool_code_findings are the findings about command c for the program files of m (c
# itself, or the command line of a module c runs).
tool_code_findings(c, m, p, spec) := {lib.finding("deny", "code.outside_workspace", msg, c) |
	not lib.has_flag(m.argv, object.get(spec, "unless", []))
	some t in code_files(m, p, spec)
	code_outside(t)
	msg := code_message(m, t)
}

code_message(m, t) := sprintf("%s runs or loads %s, known only at run time: only program files in the workspace may be run", [m.name, target_text(t)]) if {
	t.dynamic == true
} else := sprintf("%s runs or loads %s, outside the workspace: code there is not the agent's and the policy cannot read it; only program files in the workspace may be run", [m.name, target_text(t)])

code_outside(t) if t.dynamic == true

code_outside(t) if {
	t.dynamic == false
	t.inside_workspace == false
	not lib.sink(t.path)
}

# python_module_command is the command line of the module `python -m MODULE ARGS` runs:
# MODULE and the words after it, its operands renumbered.
python_module_command(c) := object.union(c, {
	"name": c.argv[i + 1],
	"path": c.argv[i + 1],
	"argv": array.slice(c.argv, i + 1, count(c.argv)),
	"operands": [object.union(o, {"argi": (o.argi - i) - 1}) | some o in c.operands; o.argi > i + 1],
}) if {
	i := min([j | some j, w in c.argv; j > 0; w == "-m"])
	count(c.argv) > i + 1
}

# code_files are the program files of c: its options' values and its program operands.
code_files(c, p, spec) := {lib.target(c, v) | some v in lib.option_values(c.argv, spec)} | {t |
	some t in program_operands(c, p, spec, operand_mode(c, p, object.get(spec, "operands", "")))
}

# operand_mode is the spec's operands mode ("" for none), through the subcommand map
# when it is one.
operand_mode(_, _, mode) := mode if is_string(mode)

operand_mode(c, p, modes) := object.get(modes, sub, "") if {
	is_object(modes)
	sub := lib.first_positional(c.argv, object.get(lib.lists.subcommand_value_options, p.key, []))
} else := "" if is_object(modes)

# program_operands are the operands that are programs, per mode. (script and first
# leave a run-time program to dynamic.script.)
program_operands(c, p, _, "script") := [t |
	t := script_operand(c, p)
	t.dynamic == false
]

program_operands(c, _, _, "first") := [o |
	some o in c.operands
	o.argi == min([x.argi | some x in c.operands])
	o.dynamic == false
]

program_operands(c, p, spec, "paths") := [o |
	start := subcommand_index(c, p, spec)
	end := operands_end(c, spec)
	some o in c.operands
	o.argi > start
	o.argi < end
	o.dynamic == false
	regex.match(`^(/|~|\.)`, o.text)
]

# go run: its leading .go files, else its package (the first operand after run).
program_operands(c, p, spec, "go_run") := gofiles if {
	start := subcommand_index(c, p, spec)
	ops := [o | some o in c.operands; o.argi > start; o.argi < operands_end(c, spec)]
	count(ops) > 0
	gofiles := [o | some i, o in ops; every x in array.slice(ops, 0, i + 1) {
		endswith(x.text, ".go")
	}]
	count(gofiles) > 0
} else := [o] if {
	start := subcommand_index(c, p, spec)
	ops := [o | some o in c.operands; o.argi > start; o.argi < operands_end(c, spec)]
	o := ops[0]
} else := []

program_operands(_, _, _, "") := []

# script_operand is the program file of a shell or interpreter (not when -c, -e, -m or
# stdin give the program).
script_operand(c, p) := lib.target(c, ws[0]) if {
	p.shell == true
	lib.shell_program(c) == "file"
	ws := lib.shell_operands(c)
} else := lib.target(c, ws[0]) if {
	p.shell == false
	spec := lib.lists.interpreters[p.interpreter]
	lib.interpreter_program(c, spec) == "file"
	ws := lib.positional(c.argv, {v | some v in spec.values})
}

# subcommand_index is the argv index of the subcommand word when the operands mode
# depends on it (0 otherwise): only the operands after it are programs.
subcommand_index(c, p, spec) := i if {
	is_object(spec.operands)
	sub := lib.first_positional(c.argv, object.get(lib.lists.subcommand_value_options, p.key, []))
	i := min([j | some j, w in c.argv; j > 0; w == sub])
} else := 0

# operands_end is where the operands stop being the tool's: "--" or an end word
# (go test -args).
operands_end(c, spec) := min(array.concat([lib.dashdash(c.argv)], [i | some i, w in c.argv; w in object.get(spec, "end", [])]))
