package cmdgate.lib

# Shells and interpreters: where they take their program from (an option, a file, or
# stdin). p is the command's profile (profile_for).

# shell_value_options take a separate value before a shell's script operand.
shell_value_options := {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}

stdin_names := {"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}

# shell_program is where a shell takes its script: "inline" (-c), "info" (--version,
# --help: no script at all), "stdin" (-s, no script operand, or a script operand that is
# stdin) or "file".
shell_program(c) := "inline" if {
	has_short(c.argv, "c")
} else := "info" if {
	count(shell_operands(c)) == 0
	has_flag(c.argv, object.get(lists, "shell_info", []))
} else := "stdin" if {
	has_short(c.argv, "s")
} else := "stdin" if {
	count(shell_operands(c)) == 0
} else := "stdin" if {
	shell_operands(c)[0] in stdin_names
} else := "file"

shell_operands(c) := array.slice(ws, 1, count(ws)) if {
	family(c.name) == "busybox"
	ws := positional(c.argv, shell_value_options)
	count(ws) > 0
} else := positional(c.argv, shell_value_options)

# interpreter_program is the same for interpreters: "inline" (-c, -e, -m, -r, ...),
# "info" (the spec's info options without a program operand: python3 --version,
# node -v), "stdin" or "file".
interpreter_program(c, spec) := "inline" if {
	program_option(c.argv, spec.program)
} else := "info" if {
	ws := positional(c.argv, {v | some v in spec.values})
	count(ws) == 0
	has_flag(c.argv, object.get(spec, "info", []))
} else := "stdin" if {
	ws := positional(c.argv, {v | some v in spec.values})
	count(ws) == 0
} else := "stdin" if {
	ws := positional(c.argv, {v | some v in spec.values})
	ws[0] in stdin_names
} else := "file"

program_option(argv, options) if has_flag(argv, options)

program_option(argv, options) if {
	some o in options
	count(o) == 2
	has_short(argv, substring(o, 1, 1))
}

# program_from_stdin reports a shell or interpreter that reads its program from stdin.
program_from_stdin(c, p) if {
	p.shell == true
	shell_program(c) == "stdin"
}

program_from_stdin(c, p) if {
	p.shell == false
	spec := lists.interpreters[p.interpreter]
	interpreter_program(c, spec) == "stdin"
}

# heredoc_bodies are the here-document and here-string texts fed to c's stdin.
heredoc_bodies(c) := [r.body | some r in c.redirects; r.op in {"<<", "<<-", "<<<"}]

# stdin_redirected_from_file reports `< file` on c (not `< /dev/stdin`).
stdin_redirected_from_file(c) if {
	some r in c.redirects
	r.op == "<"
	r.fd == 0
	not r.target in stdin_names
}
