package cmdgate.granted_test

import data.cmdgate.testlib as t

ws := "/workspace/proj"

# rm -r asks (destructive.rm_recursive); sudo denies.
asking := t.script([["rm", "-r", "build"]])

command_grant(id, argv) := {"id": id, "scope": "command", "task": "", "prefix": [], "commands": [{"argv": argv, "cwd": ws, "env": {}, "redirects": []}]}

# decide_with decides doc with grants given by principal as plain lists, indexed as the
# engine indexes them.
decide_with(doc, grants) := d if {
	indexed := {who: index(gs) | some who, gs in grants}
	d := t.decide(doc) with data.cmdgate.grants as indexed
}

index(gs) := {
	"task": {task: [g | some g in gs; g.scope in {"session", "task"}; g.task == task] |
		some x in gs
		x.scope in {"session", "task"}
		task := x.task
	},
	"command": {key: [g | some g in gs; g.scope == "command"; some k in g.commands; concat(" ", k.argv) == key] |
		some x in gs
		x.scope == "command"
		some kx in x.commands
		key := concat(" ", kx.argv)
	},
	"prefix": {w: [g | some g in gs; g.scope == "prefix"; g.prefix[0] == w] |
		some x in gs
		x.scope == "prefix"
		w := x.prefix[0]
	},
}

test_no_grant_asks if {
	decide_with(asking, {}).action == "ask"
}

test_command_grant_allows_the_same_command if {
	d := decide_with(asking, {"test": [command_grant("G1", ["rm", "-r", "build"])]})
	d.action == "allow"
	d.grants == ["G1"]
	[r.rule | some r in d.reasons] == ["grant.used"]
	[r.effect | some r in d.reasons] == ["allow"]
	contains(d.reasons[0].message, "G1")
}

test_command_grant_needs_the_same_argv_cwd_and_principal if {
	g := [command_grant("G1", ["rm", "-r", "build"])]
	decide_with(t.script([["rm", "-r", "dist"]]), {"test": g}).action == "ask"
	decide_with(t.script([["rm", "-r", "build", "extra"]]), {"test": g}).action == "ask"
	decide_with(t.doc([t.set(t.command(0, ["rm", "-r", "build"]), {"cwd": "/workspace/proj/sub"})]), {"test": g}).action == "ask"
	decide_with(asking, {"someone-else": g}).action == "ask"
	decide_with(t.doc([t.set(t.command(0, ["rm", "-r", "build"]), {"env": {"X": "1"}})]), {"test": g}).action == "ask"
	decide_with(t.doc([t.set(t.command(0, ["rm", "-r", "build"]), {"redirects": [t.redirect(">", "log.txt")]})]), {"test": g}).action == "ask"
}

test_dynamic_commands_are_never_covered if {
	g := [{"id": "P", "scope": "prefix", "task": "", "commands": [], "prefix": ["rm", "-r"]}]
	decide_with(t.script([["rm", "-r", "$DIR"]]), {"test": g}).action != "allow"
}

test_prefix_grant_matches_argv_words if {
	g := {"test": [{"id": "P", "scope": "prefix", "task": "", "commands": [], "prefix": ["rm", "-r"]}]}
	decide_with(t.script([["rm", "-r", "build"]]), g).action == "allow"
	decide_with(t.script([["rm", "-r", "dist"], ["rm", "-r", "out"]]), g).action == "allow"

	# a word that merely starts like the prefix is another word
	decide_with(t.script([["rm", "-rf", "build"]]), g).action != "allow"
}

test_session_grant_covers_its_task_only if {
	g := {"test": [{"id": "S", "scope": "session", "task": "t1", "commands": [], "prefix": []}]}
	in_task := json.patch(asking, [{"op": "replace", "path": "/request/task", "value": "t1"}])
	other_task := json.patch(asking, [{"op": "replace", "path": "/request/task", "value": "t2"}])
	decide_with(in_task, g).action == "allow"
	decide_with(other_task, g).action == "ask"
}

# A grant never turns a deny into anything else.
test_deny_wins_over_every_grant if {
	doc := json.patch(t.script([["rm", "-r", "build"], ["sudo", "ls"]]), [{"op": "replace", "path": "/request/task", "value": "t1"}])
	g := {"test": [
		{"id": "S", "scope": "session", "task": "t1", "commands": [], "prefix": []},
		{"id": "P", "scope": "prefix", "task": "", "commands": [], "prefix": ["sudo"]},
		command_grant("C", ["sudo", "ls"]),
	]}
	d := decide_with(doc, g)
	d.action == "deny"
	not d.grants
}

# In a script, a grant covers the commands it names: another command that asks still
# asks, and the request asks about all of them (no grant is used by it).
test_grant_covers_only_its_commands if {
	g := {"test": [command_grant("G1", ["rm", "-r", "build"])]}
	d := decide_with(t.script([["rm", "-r", "build"], ["rm", "-r", "dist"]]), g)
	d.action == "ask"
	[r.command | some r in d.reasons] == [0, 1]
	not d.grants
}
