# Interpreters (python, node, perl, ruby, php, lua): inline programs (-c, -e, -r),
# here-document programs and program files the script itself wrote from a
# here-document that spawn processes, open sockets, reach the network, evaluate
# strings or write files outside the workspace; python -m modules that serve or open
# shells; perl/ruby -i edits.
package cmdgate.tools

import data.cmdgate.lib

check(k, c) := interpreter_findings(c, "python") if k == "python"

check(k, c) := interpreter_findings(c, "node") if k == "node"

check(k, c) := interpreter_findings(c, "perl") if k == "perl"

check(k, c) := interpreter_findings(c, "ruby") if k == "ruby"

check(k, c) := interpreter_findings(c, "php") if k == "php"

check(k, c) := interpreter_findings(c, "lua") if k == "lua"

interpreter_findings(c, fam) := ((code_findings(c, spec, program_words(c, spec)) | module_findings(c, fam)) | in_place_findings(c, spec)) | assembled_findings(c, spec) if {
	spec := lib.lists.interpreters[fam]
}

# program_words are the texts that may be program text: every word of an inline
# program command line (the program is one of them), and here-document bodies when
# the program comes from stdin.
program_words(c, spec) := array.slice(c.argv, 1, count(c.argv)) if {
	lib.interpreter_program(c, spec) == "inline"
} else := lib.heredoc_bodies(c) if {
	lib.interpreter_program(c, spec) == "stdin"
} else := written_program(c, spec)

# written_program: a program file the same script wrote before running it, from a
# here-document (cat > x.py <<'EOF' ... EOF; python3 x.py) or with echo or printf
# (printf 'import os\n...' > x.py && python3 x.py): its text is checked like an inline
# program. (What other writers put there is checked by assembled_findings.)
written_program(c, spec) := array.concat(
	[body |
		file := program_file(c, spec)
		some d in input.commands
		d.index < c.index
		some body in lib.heredoc_bodies(d)
		writes_file(d, file)
	],
	[strings.replace_n({"\\n": "\n", "\\t": "\t"}, concat(" ", [o.text | some o in d.operands])) |
		file := program_file(c, spec)
		some d in input.commands
		d.index < c.index
		d.name in {"echo", "printf"}
		writes_file(d, file)
	],
)

# program_file is the path of the program file an interpreter runs.
program_file(c, spec) := file if {
	ws := lib.positional(c.argv, {v | some v in spec.values})
	file := lib.target(c, ws[0]).path
	file != ""
}

# escape.assembled_program: the program file was written earlier in the same request
# with text the policy cannot read: echo or printf of run-time text, a decoder's or a
# download's output (base64 -d > x.py, curl -o x.py). A program assembled and run in
# one request is no safer than the inline form, whose run-time text is denied too.
assembled_findings(c, spec) := {lib.finding("deny", "escape.assembled_program", msg, c) |
	lib.interpreter_program(c, spec) == "file"
	file := program_file(c, spec)
	some d in input.commands
	d.index < c.index
	opaque_writer(d, file)
	msg := sprintf("%s runs %s, which %s wrote in this request with text the policy cannot read", [c.name, file, d.name])
}

opaque_writer(d, file) if {
	d.name in {"echo", "printf"}
	writes_file(d, file)
	some o in d.operands
	o.dynamic == true
}

opaque_writer(d, file) if {
	d.name in lib.lists.opaque_writers
	writes_file(d, file)
}

opaque_writer(d, file) if {
	lib.profile_for(d).download == true
	some o in d.operands
	o.path == file
}

writes_file(d, file) if {
	some r in d.redirects
	r.write == true
	r.path == file
}

writes_file(d, file) if {
	d.name == "tee"
	some o in d.operands
	o.path == file
}

code_findings(c, spec, words) := {lib.finding("deny", "escape.interpreter_code", msg, c) |
	some w in words
	regex.match(spec.patterns, w)
	msg := sprintf("the %s program %q runs processes, opens sockets or evaluates strings", [c.name, truncate(w)])
} | (inline_secret_findings(c, words) | code_write_findings(c, spec, words))

# code_write_findings: a program that writes, removes or renames files (spec.writes)
# and names a path outside the workspace in a string literal ('/etc/x', "~/.bashrc",
# '../x'): write.outside_workspace. Paths built at run time are not seen.
code_write_findings(c, spec, words) := {lib.finding("deny", "write.outside_workspace", msg, c) |
	some w in words
	regex.match(spec.writes, w)
	some m in regex.find_all_string_submatch_n(`['"\x60]((/|~|\.\./)[^'"\x60]*)['"\x60]`, w, -1)
	t := lib.target(c, m[1])
	lib.outside_write(t)
	msg := sprintf("the %s program writes files and names %s, outside the workspace", [c.name, m[1]])
}

truncate(w) := concat("", [substring(w, 0, 120), "..."]) if count(w) > 120

else := w

module_findings(c, "python") := {lib.finding("deny", "escape.interpreter_module", msg, c) |
	some m in python_modules(c.argv)
	m in lib.lists.python_denied_modules
	msg := sprintf("python -m %s serves on the network or opens a shell", [m])
}

module_findings(c, fam) := set() if fam != "python"

python_modules(argv) := {m |
	some i, w in argv
	i > 0
	w == "-m"
	m := argv[i + 1]
} | {m |
	some i, w in argv
	i > 0
	regex.match(`^-[A-Za-z]*m.+$`, w)
	not startswith(w, "--")
	m := substring(w, indexof(w, "m") + 1, -1)
}

in_place_findings(c, spec) := {lib.finding("deny", "write.outside_workspace", msg, c) |
	object.get(spec, "in_place", false)
	some i, w in c.argv
	i > 0
	regex.match(`^-[A-Za-z0-9]*i`, w)
	some o in c.operands
	lib.outside_write(o)
	msg := sprintf("%s -i edits %s in place, outside the workspace", [c.name, o.text])
}
