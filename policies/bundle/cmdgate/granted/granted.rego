# Package cmdgate.granted matches the live grants (data.cmdgate.grants, which the
# gateway keeps: approvals a person made for more than one request) against the ask
# findings of a request. A grant only ever turns an ask into an allow: deny findings are
# never looked at here, and decision.rego denies whenever one exists.
#
# data.cmdgate.grants is an object keyed by principal name; each value is the array of
# that principal's live grants:
#
#   {"id": "01…", "scope": "session" | "task" | "command" | "prefix",
#    "task": "…",                    session and task: the request's task must be it
#    "commands": [{"argv": […], "cwd": "…", "env": {…}, "redirects": [{op, fd, target, body}]}],
#                                    command: a command matching one of these exactly
#    "prefix": […]}                  prefix: a command whose argv starts with these words
#
# A grant covers only the principal it was made for, and command and prefix grants
# only static commands (no run-time part: nothing the policy could not see).
package cmdgate.granted

default live := {}

live := data.cmdgate.grants

mine := object.get(live, input.principal.name, [])

# covering(f) is the set of ids of the grants that cover an ask finding f.
covering(f) := {g.id | some g in mine; covers(g, f)}

covers(g, _) if {
	g.scope in {"session", "task"}
	g.task == input.request.task
}

covers(g, f) if {
	g.scope == "command"
	c := input.commands[f.command]
	not c.dynamic
	some k in g.commands
	k.argv == c.argv
	k.cwd == c.cwd
	k.env == c.env
	k.redirects == redirects(c)
}

covers(g, f) if {
	g.scope == "prefix"
	c := input.commands[f.command]
	not c.dynamic
	n := count(g.prefix)
	n > 0
	count(c.argv) >= n
	array.slice(c.argv, 0, n) == g.prefix
}

# redirects is what a command grant compares of a command's redirections.
redirects(c) := [{"op": r.op, "fd": r.fd, "target": r.target, "body": r.body} | some r in c.redirects]
