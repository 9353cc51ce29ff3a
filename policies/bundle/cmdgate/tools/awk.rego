# awk (gawk, mawk, nawk): programs that run commands (system(), print | "cmd",
# "cmd" | getline, |&), write files (print > "file"), load extensions (@load) or come
# from a file the policy cannot read (-f, -E, -i, -l), or open network connections
# (gawk's /inet/tcp/... special files).
package cmdgate.tools

import data.cmdgate.lib

check(k, c) := awk_findings(c) if k == "awk"

awk_findings(c) := ({lib.finding("deny", "escape.awk_exec", msg, c) |
	some i, w in c.argv
	i > 0

	# String literals cannot run anything: "a | b" in print is text.
	regex.match(awk_exec_pattern, regex.replace(w, `"(\\.|[^"\\])*"`, `""`))
	msg := sprintf("the awk program %q runs commands or writes files", [w])
} | {lib.finding("deny", "escape.awk_program_file", msg, c) |
	some o in awk_file_options
	awk_option(c.argv, o)
	msg := sprintf("awk %s runs a program or extension from a file the policy cannot check", [o])
}) | ({lib.finding("deny", "network.awk_inet", msg, c) |
	some i, w in c.argv
	i > 0
	regex.match(`/inet[46]?/(tcp|udp)/`, w)
	msg := sprintf("the awk program %q opens a network connection (gawk's /inet special files)", [w])
} | inline_secret_findings(c, array.slice(c.argv, 1, count(c.argv))))

awk_exec_pattern := `\bsystem\s*\(|\|\s*getline|\|&|\bprintf?\b[^;}]*[>|]|@load|@include`

awk_file_options := ["-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"]

awk_option(argv, o) if lib.has_flag(argv, [o])

awk_option(argv, o) if {
	count(o) == 2
	some i, w in argv
	i > 0
	startswith(w, o)
	not startswith(w, "--")
}

# inline_secret_findings: program text that names a secret location.
inline_secret_findings(c, words) := {lib.finding("deny", "secrets.read", msg, c) |
	some w in words
	regex.match(lib.lists.secrets.text_pattern, w)
	msg := sprintf("the %s program %q reads a secret location", [c.name, w])
}
