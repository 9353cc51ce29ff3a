# sed: scripts that run commands (the e command, s///e), write or read files the
# policy cannot check (w, W, r, R, s///w), come from a file (-f), and in-place edits
# (-i: the file operands are written, so write.outside_workspace applies).
package cmdgate.tools

import data.cmdgate.lib

# The common case is ruled out first: a contained sed with only -n/-E/-r/-s/-u/-z
# and a script (its first operand) without the letters of the e, w, W, r and R
# commands and flags, without $ or ~ and naming no secret location.
check(k, c) := set() if {
	k == "sed"
	c.contained == true
	regex.match(`^(-[nEsuzr](\n|$))*$`, concat("\n", c.flags))
	s := c.operands[0].text
	regex.match(`[eEwWrR$~]`, s) == false
	regex.match(data.cmdgate.lists.secrets.text_pattern, s) == false
} else := sed_findings(c) if k == "sed"

sed_findings(c) := (((({lib.finding("deny", "escape.sed_exec", msg, c) |
	some s in sed_scripts(c)
	sed_dangerous(s)
	msg := sprintf("the sed script %q runs commands or reads or writes files", [s])
} | {lib.finding("deny", "escape.sed_script_file", "sed -f runs a script from a file the policy cannot check", c) |
	sed_script_file(c.argv)
}) | {lib.finding("deny", "write.outside_workspace", msg, c) |
	sed_in_place(c.argv)
	some o in sed_files(c)
	lib.outside_write(o)
	msg := sprintf("sed -i rewrites %s, outside the workspace", [o.text])
}) | {lib.finding("deny", "write.git_internals", msg, c) |
	sed_in_place(c.argv)
	some o in sed_files(c)
	lib.git_internal(o)
	msg := sprintf("sed -i rewrites %s, inside .git, whose hooks and config run code", [o.text])
}) | {lib.finding("deny", "write.outside_workspace", "sed -i --follow-symlinks writes where the links point, which the policy cannot see", c) |
	sed_in_place(c.argv)
	lib.has_long(c.argv, "--follow-symlinks", true)
}) | inline_secret_findings(c, sed_scripts(c))

# sed_scripts are the script texts: the values of -e/--expression (as written in argv,
# and in every spelling parse reads: --expr=S, --ex S, -nes), or else the first operand.
sed_scripts(c) := scripts if {
	scripts := array.concat(sed_expressions(c.argv), [o.value | some o in object.get(c, "options", []); o.name == "--expression"])
	count(scripts) > 0
} else := [c.operands[0].text] if {
	count(c.operands) > 0
} else := []

sed_expressions(argv) := [v |
	some i, w in argv
	i > 0
	some v in sed_expression(argv, i, w)
]

sed_expression(argv, i, w) := [argv[i + 1]] if {
	w in {"-e", "--expression"}
	i + 1 < count(argv)
} else := [substring(w, 13, -1)] if {
	startswith(w, "--expression=")
} else := [v] if {
	# -ne 's/x/y/', -nes/x/y/: a cluster of no-value options ending in e.
	regex.match(`^-[nrsuzE]*e`, w)
	not startswith(w, "--")
	j := indexof(w, "e")
	v := sed_value(argv, i, substring(w, j + 1, -1))
} else := []

sed_value(argv, i, rest) := rest if rest != ""

else := argv[i + 1]

sed_script_file(argv) if lib.has_flag(argv, ["-f", "--file"])

sed_script_file(argv) if {
	some i, w in argv
	i > 0
	regex.match(`^-[nrsuzE]*f`, w)
}

# sed_in_place: -i, -i.bak, -ni, --in-place[=SUFFIX] (and its GNU prefixes).
sed_in_place(argv) if {
	end := lib.dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	regex.match(`^-[nrsuzE]*i`, w)
}

sed_in_place(argv) if lib.has_long(argv, "--in-place", true)

# sed_files are the file operands (the operands but the script).
sed_files(c) := {o |
	scripts := sed_scripts(c)
	some o in c.operands
	not o.text in scripts
}

# sed_dangerous: no s command may carry the e or w flag, and after removing the s and
# y commands, regex addresses, comments, a/i/c text and labels, no e, w, W, r or R
# command may remain.
sed_dangerous(s) if regex.match(sed_s_bad, s)

sed_dangerous(s) if regex.match(`[ewWrR]`, sed_rest(s))

sed_rest(s) := r if {
	r1 := regex.replace(s, sed_s_any, " ")
	r2 := regex.replace(r1, sed_y_any, " ")
	r3 := regex.replace(r2, `/(?:\\.|[^/\\\n])*/[IM]*`, " ")
	r4 := regex.replace(r3, `#[^\n]*`, " ")
	r5 := regex.replace(r4, `[aic][^\n]*`, " ")
	r := regex.replace(r5, `(:|\b[btT])[^;}\n]*`, " ")
}

sed_s_any := `s/(?:\\.|[^/\\\n])*/(?:\\.|[^/\\\n])*/[0-9gpiImMeEwW]*|s\|(?:\\.|[^|\\\n])*\|(?:\\.|[^|\\\n])*\|[0-9gpiImMeEwW]*|s#(?:\\.|[^#\\\n])*#(?:\\.|[^#\\\n])*#[0-9gpiImMeEwW]*|s,(?:\\.|[^,\\\n])*,(?:\\.|[^,\\\n])*,[0-9gpiImMeEwW]*|s:(?:\\.|[^:\\\n])*:(?:\\.|[^:\\\n])*:[0-9gpiImMeEwW]*|s@(?:\\.|[^@\\\n])*@(?:\\.|[^@\\\n])*@[0-9gpiImMeEwW]*|s!(?:\\.|[^!\\\n])*!(?:\\.|[^!\\\n])*![0-9gpiImMeEwW]*|s%(?:\\.|[^%\\\n])*%(?:\\.|[^%\\\n])*%[0-9gpiImMeEwW]*|s_(?:\\.|[^_\\\n])*_(?:\\.|[^_\\\n])*_[0-9gpiImMeEwW]*|s\+(?:\\.|[^+\\\n])*\+(?:\\.|[^+\\\n])*\+[0-9gpiImMeEwW]*|s=(?:\\.|[^=\\\n])*=(?:\\.|[^=\\\n])*=[0-9gpiImMeEwW]*|s\~(?:\\.|[^~\\\n])*\~(?:\\.|[^~\\\n])*\~[0-9gpiImMeEwW]*|s\^(?:\\.|[^\^\\\n])*\^(?:\\.|[^\^\\\n])*\^[0-9gpiImMeEwW]*|s;(?:\\.|[^;\\\n])*;(?:\\.|[^;\\\n])*;[0-9gpiImMeEwW]*|s\.(?:\\.|[^.\\\n])*\.(?:\\.|[^.\\\n])*\.[0-9gpiImMeEwW]*|s\-(?:\\.|[^\-\\\n])*\-(?:\\.|[^\-\\\n])*\-[0-9gpiImMeEwW]*`

sed_s_bad := `s/(?:\\.|[^/\\\n])*/(?:\\.|[^/\\\n])*/[0-9gpiImM]*[eEwW]|s\|(?:\\.|[^|\\\n])*\|(?:\\.|[^|\\\n])*\|[0-9gpiImM]*[eEwW]|s#(?:\\.|[^#\\\n])*#(?:\\.|[^#\\\n])*#[0-9gpiImM]*[eEwW]|s,(?:\\.|[^,\\\n])*,(?:\\.|[^,\\\n])*,[0-9gpiImM]*[eEwW]|s:(?:\\.|[^:\\\n])*:(?:\\.|[^:\\\n])*:[0-9gpiImM]*[eEwW]|s@(?:\\.|[^@\\\n])*@(?:\\.|[^@\\\n])*@[0-9gpiImM]*[eEwW]|s!(?:\\.|[^!\\\n])*!(?:\\.|[^!\\\n])*![0-9gpiImM]*[eEwW]|s%(?:\\.|[^%\\\n])*%(?:\\.|[^%\\\n])*%[0-9gpiImM]*[eEwW]|s_(?:\\.|[^_\\\n])*_(?:\\.|[^_\\\n])*_[0-9gpiImM]*[eEwW]|s\+(?:\\.|[^+\\\n])*\+(?:\\.|[^+\\\n])*\+[0-9gpiImM]*[eEwW]|s=(?:\\.|[^=\\\n])*=(?:\\.|[^=\\\n])*=[0-9gpiImM]*[eEwW]|s\~(?:\\.|[^~\\\n])*\~(?:\\.|[^~\\\n])*\~[0-9gpiImM]*[eEwW]|s\^(?:\\.|[^\^\\\n])*\^(?:\\.|[^\^\\\n])*\^[0-9gpiImM]*[eEwW]|s;(?:\\.|[^;\\\n])*;(?:\\.|[^;\\\n])*;[0-9gpiImM]*[eEwW]|s\.(?:\\.|[^.\\\n])*\.(?:\\.|[^.\\\n])*\.[0-9gpiImM]*[eEwW]|s\-(?:\\.|[^\-\\\n])*\-(?:\\.|[^\-\\\n])*\-[0-9gpiImM]*[eEwW]`

sed_y_any := `y/(?:\\.|[^/\\\n])*/(?:\\.|[^/\\\n])*/|y\|(?:\\.|[^|\\\n])*\|(?:\\.|[^|\\\n])*\||y#(?:\\.|[^#\\\n])*#(?:\\.|[^#\\\n])*#|y,(?:\\.|[^,\\\n])*,(?:\\.|[^,\\\n])*,|y:(?:\\.|[^:\\\n])*:(?:\\.|[^:\\\n])*:|y@(?:\\.|[^@\\\n])*@(?:\\.|[^@\\\n])*@`
