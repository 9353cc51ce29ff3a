# Package cmdgate.testlib builds policy inputs for the bundle's tests: commands shaped
# like parse's (contract 1 of docs/architecture.md), with the workspace and cwd /workspace/proj.
package cmdgate.testlib

import data.cmdgate.allowlist
import data.cmdgate.lib

ws := "/workspace/proj"

# command is the command argv at index i: words starting with "-" are flags, the
# others operands resolved against the workspace (a word with "$" is dynamic).
command(i, argv) := {
	"index": i,
	"name": lib.basename(argv[0]),
	"path": argv[0],
	"argv": argv,
	"flags": [w | some j, w in argv; j > 0; startswith(w, "-")],
	"operands": [operand(w, j) | some j, w in argv; j > 0; not startswith(w, "-")],
	"redirects": [],
	"env": {},
	"dynamic": count([w | some w in argv; contains(w, "$")]) > 0,
	"dynamic_name": contains(argv[0], "$"),
	"glob": false,
	"via": [],
	"context": context,
	"pos": {"line": 1, "col": 1},
	"cwd": ws,
}

context := {
	"pipeline": false, "subshell": false, "substitution": false, "background": false,
	"condition": false, "function": false, "pipeline_id": -1, "stage": 0,
}

operand(text, j) := {"text": text, "path": "", "inside_workspace": false, "dynamic": true, "glob": false, "argi": j} if {
	contains(text, "$")
} else := {"text": text, "path": "", "inside_workspace": false, "dynamic": false, "glob": false, "argi": j} if {
	startswith(text, "~")
} else := {"text": text, "path": p, "inside_workspace": inside(p), "dynamic": false, "glob": regex.match(`[*?\[]`, text), "argi": j} if {
	p := resolve(text)
}

inside(p) if lib.under(p, ws)

else := false

resolve(text) := lib.clean(text) if startswith(text, "/")

else := lib.clean(concat("/", [ws, text]))

# redirect is a redirection of op to target (a file unless it is a descriptor).
redirect(op, target) := {"op": op, "fd": fd(op), "target": target, "path": "", "inside_workspace": false, "write": false, "dynamic": false, "body": ""} if {
	regex.match(`^([0-9]+|-)$`, target)
} else := {"op": op, "fd": fd(op), "target": target, "path": p, "inside_workspace": inside(p), "write": op != "<", "dynamic": contains(target, "$"), "body": ""} if {
	p := resolve(target)
}

fd(op) := 0 if startswith(op, "<")

else := 1

heredoc(body) := {"op": "<<", "fd": 0, "target": "EOF", "path": "", "inside_workspace": false, "write": false, "dynamic": false, "body": body}

# option is an entry of a command's options, as parse normalises them: the canonical
# name, the value and the index in argv of the word holding it.
option(name, value, argi) := {"name": name, "value": value, "argi": argi, "dynamic": false}

# with_options is the command of argv with options (and the other fields of command).
with_options(i, argv, opts) := object.union(command(i, argv), {"options": opts})

# evaluation is an entry of input.evaluations outside any command.
evaluation(kind, text, names, values, dynamic) := {
	"kind": kind, "text": text, "names": names, "values": values, "dynamic": dynamic,
	"command": -1, "via": [], "context": context, "pos": {"line": 1, "col": 1},
}

# with_evaluations is a script of argvs with evaluations.
with_evaluations(argvs, evals) := object.union(script(argvs), {"evaluations": evals})

# set sets fields of a command (redirects, env, via, context, ...).
set(c, fields) := object.union(c, fields)

# doc is an input with the commands (re-indexed in order).
doc(cmds) := {
	"principal": {"name": "test", "role": "agent"},
	"request": {"id": "t", "source": "script", "shell_mode": "default", "profile": "", "raw": "", "cwd": ws, "workspace": ws, "task": ""},
	"commands": [object.union(c, {"index": i}) | some i, c in cmds],
	"assignments": [],
	"evaluations": [],
	"features": {},
	"error": null,
}

# script is an input with one command per argv.
script(argvs) := doc([command(i, a) | some i, a in argvs])

# pipeline is an input whose commands form one pipeline.
pipeline(argvs) := doc([set(command(i, a), {"context": object.union(context, {"pipeline": true, "pipeline_id": 0, "stage": i})}) | some i, a in argvs])

# rules are the rule names of a decision's reasons.
rules(d) := {r.rule | some r in d.reasons}

# decide is the decision on an input doc, with the allowlist and the index computed
# once per test, or taken from the store when the engine precomputed them (as
# `cmdgate policy test` does), instead of once per decision.
decide(doc) := d if {
	d := data.cmdgate.decision with input as doc
		with data.cmdgate.effective as effective
		with data.cmdgate.index as index
}

effective := allowlist.effective

index := lib.index

# decide_config is the decision under a configuration: overrides are merged into the
# configuration, and the allowlist and the index are computed for it.
decide_config(doc, overrides) := d if {
	cfg := object.union(data.cmdgate.config, overrides)
	eff := allowlist.computed with data.cmdgate.config as cfg
	idx := lib.computed_index with data.cmdgate.config as cfg with data.cmdgate.effective as eff
	d := data.cmdgate.decision with input as doc
		with data.cmdgate.config as cfg
		with data.cmdgate.effective as eff
		with data.cmdgate.index as idx
}

# run is decide on a script of argvs.
run(argvs) := decide(script(argvs))
