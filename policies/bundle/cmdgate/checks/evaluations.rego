# Expansions that evaluate a value as code (input.evaluations, parse/evaluate.go):
# ${x@P} decodes the prompt escapes of x's value (\140 is a backquote) and then runs its
# command substitutions; arithmetic ($(( )), (( )), let, [[ -eq ]], array subscripts,
# integer variables) evaluates the values of the variables it reads, and an array
# subscript in them runs `$(cmd)` (x='a[$(id)]'; echo $((x))); ${!x}, namerefs and the
# names given to read, printf -v, test -v and declare evaluate subscripts too. bash then
# runs commands no other rule saw.
#
#   escape.evaluated_expansion  deny: what is evaluated is known and holds code: a
#                               value holding $ or ` (for prompt expansion also a
#                               backslash, whose escapes decode to anything), assigned
#                               anywhere in the request, or such quoted text in the
#                               construct itself
#   dynamic.evaluated_value     what is evaluated is only known at run time (the
#                               environment, read from a file or pipe, a command's
#                               output, a positional parameter): deny for prompt
#                               expansion, which nothing in an agent's work needs; ask
#                               for the others ($(( $(nproc) + 1 )), [[ $count -gt 0 ]]
#                               after count=$(grep -c ...) are everyday code, and a
#                               person can tell)
#
# ${x@E} (escape decoding) runs nothing: it is in input.evaluations (kind "escape") and
# meets no rule here; what it decodes reaches a command only as a run-time word, which
# the other rules treat as unknown.
package cmdgate.checks

import data.cmdgate.lib

findings contains f if {
	some e in input.evaluations
	e.kind != "escape"
	some f in evaluation_findings(e)
}

evaluation_findings(e) := {lib.finding("deny", "escape.evaluated_expansion", msg, {"index": e.command}) |
	some v in e.values
	regex.match(evaluated_code_pattern(e.kind), v)
	msg := sprintf("%s %s evaluates %q, which runs code (%s)", [e.text, evaluation_verb(e.kind), v, evaluation_how(e.kind)])
} | {lib.finding(evaluated_unknown_effect(e.kind), "dynamic.evaluated_value", msg, {"index": e.command}) |
	e.dynamic == true
	msg := sprintf("%s %s a value known only at run time (%s), which may hold code (%s)", [e.text, evaluation_verb(e.kind), evaluation_names(e), evaluation_how(e.kind)])
}

# evaluated_code_pattern: text that runs code when evaluated. Prompt expansion decodes
# backslash escapes first (\140, \044), then expands $ and backquotes; the others
# expand what a subscript holds.
evaluated_code_pattern("prompt") := "[$`\\\\]"

evaluated_code_pattern(kind) := "[$`]" if kind != "prompt"

evaluated_unknown_effect("prompt") := "deny"

evaluated_unknown_effect(kind) := "ask" if kind != "prompt"

evaluation_verb("prompt") := "prompt-expands"

evaluation_verb("arithmetic") := "evaluates as arithmetic"

evaluation_verb("indirect") := "uses as a variable name"

evaluation_verb("nameref") := "makes a reference to"

evaluation_verb("name") := "takes as a variable name"

evaluation_how("prompt") := "bash decodes the escapes of a prompt expansion, then runs its command substitutions"

evaluation_how(kind) := "bash runs the command substitutions in an array subscript it evaluates: a[$(cmd)]" if kind != "prompt"

evaluation_names(e) := concat(", ", e.names) if count(e.names) > 0

else := "a command's output or a parameter"
