# Package cmdgate.granted matches the live grants (data.cmdgate.grants, which the
# gateway keeps: approvals a person made for more than one request) against the ask
# findings of a request. A grant only ever turns an ask into an allow: deny findings are
# never looked at here, and decision.rego denies whenever one exists.
#
# data.cmdgate.grants is an object keyed by principal name; each value indexes that
# principal's live grants by what a request must hold for them to apply, so that a
# lookup costs the same with ten grants or ten thousand:
#
#   {"task":    {TASK: [grant, ...]},           session and task grants, by task
#    "command": {"ARGV JOINED BY SPACES": [grant, ...]},
#                                               command grants, by each command's argv
#    "prefix":  {ARGV0: [grant, ...]}}          prefix grants, by their first word
#
# and each grant is
#
#   {"id": "01…", "scope": "session" | "task" | "command" | "prefix", "task": "…",
#    "commands": [{"argv": […], "cwd": "…", "env": {…}, "redirects": [{op, fd, target, body}]}],
#    "prefix": […]}
#
# A key only narrows the search: every match is checked in full (argv, cwd, env and
# redirections for a command grant; each prefix word for a prefix grant). A grant
# covers only the principal it was made for, and command and prefix grants only static
# commands (no run-time part: nothing the policy could not see).
package cmdgate.granted

default live := {}

live := data.cmdgate.grants

mine := object.get(live, input.principal.name, {})

# covering(f) is the set of ids of the grants that cover an ask finding f.
covering(f) := (by_task | by_command(f)) | by_prefix(f)

by_task := {g.id | some g in object.get(object.get(mine, "task", {}), input.request.task, [])}

by_command(f) := {g.id |
	c := static_command(f)
	some g in object.get(object.get(mine, "command", {}), concat(" ", c.argv), [])
	some k in g.commands
	k.argv == c.argv
	k.cwd == c.cwd
	k.env == c.env
	k.redirects == redirects(c)
}

by_prefix(f) := {g.id |
	c := static_command(f)
	count(c.argv) > 0
	some g in object.get(object.get(mine, "prefix", {}), c.argv[0], [])
	n := count(g.prefix)
	n > 0
	count(c.argv) >= n
	array.slice(c.argv, 0, n) == g.prefix
}

# static_command is the command of a finding, when it has no run-time part.
static_command(f) := c if {
	c := input.commands[f.command]
	not c.dynamic
}

# redirects is what a command grant compares of a command's redirections.
redirects(c) := [{"op": r.op, "fd": r.fd, "target": r.target, "body": r.body} | some r in c.redirects]
