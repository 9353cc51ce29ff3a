# secrets.search: searching the file system outside the workspace for credentials by
# name (find / -name 'id_rsa*', find /home -name .env, fd -H '\.pem$' /, locate
# id_ed25519). An agent has no everyday reason to look for keys, tokens or credential
# files outside its project; the content searches (grep -r password /etc) are
# secrets.read already.
package cmdgate.checks

import data.cmdgate.lib
import data.cmdgate.tools

# (A per-command check, routed by checks/commands.rego.)
findings contains f if {
	some i in input.routed.search
	c := input.commands[i]
	c.name in lib.search_tools
	some f in search_findings(c)
}

search_findings(c) := {lib.finding("deny", "secrets.search", msg, c) |
	some r in search_roots(c)
	outside_search(r)
	some p in name_patterns(c)
	regex.match(lib.lists.secrets.search_pattern, lower(p))
	msg := sprintf("%s looks for %s under %s: searching outside the workspace for credentials is not allowed", [c.name, p, r.text])
}

# search_roots: find's starting points; fd's paths after its pattern (the working
# directory without); the whole file system for locate, whose database covers it.
search_roots(c) := tools.find_roots(c) if c.name in {"find", "bfs"}

else := [lib.target(c, "/")] if c.name in {"locate", "mlocate", "plocate"}

else := roots if {
	ops := [o | some o in c.operands]
	count(ops) > 1
	roots := array.slice(ops, 1, count(ops))
} else := [lib.target(c, ".")]

outside_search(r) if r.dynamic == true

outside_search(r) if {
	r.dynamic == false
	r.inside_workspace == false
	not lib.sandbox_private(r)
}

# name_patterns are what the search matches names against: find's -name, -iname,
# -path, -ipath, -wholename, -regex and -iregex values; fd's and locate's operands
# (fd's first, locate's all).
name_patterns(c) := [c.argv[i + 1] |
	c.name in {"find", "bfs"}
	some i, w in c.argv
	w in {"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-lname", "-ilname"}
	i + 1 < count(c.argv)
] if c.name in {"find", "bfs"}

else := [c.operands[0].text] if {
	c.name in {"fd", "fdfind"}
	count(c.operands) > 0
} else := [o.text | some o in c.operands]
