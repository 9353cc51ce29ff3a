# Rules for the commands whose profile is special (lib/profiles.rego): tools with
# output options (sort -o, curl --output, go test -coverprofile, ...), formatters that
# rewrite their operands, and programs the policy cannot see: shells and interpreters
# reading their program from a pipe, from stdin, from a substitution or from a
# download; eval and source of run-time text; downloaded files that are then run.
package cmdgate.checks

import data.cmdgate.lib

# (A per-command check, routed by checks/commands.rego.)
findings contains f if {
	some i in input.routed.special
	c := input.commands[i]
	p := data.cmdgate.index.special[c.path]
	regex.match(p.trigger, concat("\n", c.argv))
	some f in special_findings(p.special, c, p)
}

# special_findings dispatches on the profile's special kinds (an indexed lookup).
special_findings(k, c, p) := option_findings(c, p) if k == "options"

special_findings(k, c, p) := in_place_findings(c, p) if k == "in_place"

special_findings(k, c, p) := program_findings(c, p) | download_exec_findings(c) if k == "programs"

special_findings(k, c, p) := in_place_findings(c, p) | option_findings(c, p) if k == "in_place+options"

special_findings(k, c, p) := (option_findings(c, p) | program_findings(c, p)) | download_exec_findings(c) if k == "options+programs"

special_findings(k, c, p) := ((in_place_findings(c, p) | option_findings(c, p)) | program_findings(c, p)) | download_exec_findings(c) if k == "in_place+options+programs"

# write.outside_workspace / write.git_internals: the values of a tool's output options.
# A regular expression over the joined words rules out most commands first.
option_findings(c, p) := {f |
	count(c.flags) > 0
	regex.match(p.writer.option_pattern, concat("\n", c.argv))
	some v in lib.option_values(c.argv, p.writer)
	t := lib.target(c, v)
	f := option_target_finding(c, t)
}

option_target_finding(c, t) := lib.finding("deny", "write.outside_workspace", msg, c) if {
	lib.outside_write(t)
	msg := sprintf("%s writes %s, outside the workspace", [c.name, target_text(t)])
} else := lib.finding("deny", "write.git_internals", msg, c) if {
	lib.git_internal(t)
	msg := sprintf("%s writes %s, inside .git, whose hooks and config run code", [c.name, t.text])
}

# write.outside_workspace: formatters that rewrite their operands in place.
in_place_findings(c, p) := {lib.finding("deny", "write.outside_workspace", msg, c) |
	some o in c.operands
	o.inside_workspace == false
	rewrites(c, p.in_place)
	lib.outside_write(o)
	msg := sprintf("%s rewrites %s in place, outside the workspace", [c.name, o.text])
}

rewrites(c, spec) if {
	object.get(spec, "always", false)
	not lib.has_flag(c.argv, object.get(spec, "unless", []))
}

rewrites(c, spec) if lib.has_flag(c.argv, object.get(spec, "when", []))

program_findings(c, p) := ({f | f := pipe_finding(c, p)} | {f | f := stdin_finding(c, p)}) | {f | f := dynamic_program_finding(c, p)}

# network.download_to_interpreter / escape.pipe_to_shell / escape.pipe_to_interpreter:
# a shell or interpreter reading its program from an earlier pipeline stage
# (curl ... | sh, base64 -d | bash, cat x.py | python3).
pipe_finding(c, p) := f if {
	c.context.stage > 0
	runs_programs(p)
	lib.program_from_stdin(c, p)
	not lib.stdin_redirected_from_file(c)
	f := pipe_reason(c, p)
}

runs_programs(p) if p.shell == true

runs_programs(p) if p.interpreter != ""

pipe_reason(c, p) := lib.finding("deny", "network.download_to_interpreter", msg, c) if {
	some d in input.commands
	d.context.pipeline_id == c.context.pipeline_id
	d.context.stage < c.context.stage
	lib.profile_for(d).download == true
	msg := sprintf("%s runs what %s downloads", [c.name, d.name])
} else := lib.finding("deny", "escape.pipe_to_shell", msg, c) if {
	p.shell == true
	msg := sprintf("%s reads its script from a pipe, which the policy cannot see", [c.name])
} else := lib.finding("deny", "escape.pipe_to_interpreter", msg, c) if {
	msg := sprintf("%s reads its program from a pipe, which the policy cannot see", [c.name])
}

# escape.interpreter_stdin: an interpreter outside a pipeline reading its program from
# stdin (the request's stdin, which the policy never sees). A here-document is fine when
# its text is known (its code is checked by escape.interpreter_code); `< file` runs a
# file like `python3 file` does. Shells fed a here-document are re-parsed by parse.
stdin_finding(c, p) := lib.finding("deny", "escape.interpreter_stdin", msg, c) if {
	p.interpreter != ""
	p.shell == false
	c.context.stage == 0
	lib.program_from_stdin(c, p)
	not lib.stdin_redirected_from_file(c)
	not known_heredoc(c)
	msg := sprintf("%s reads its program from stdin, which the policy cannot see", [c.name])
}

known_heredoc(c) if {
	some r in c.redirects
	r.op in {"<<", "<<-", "<<<"}
	r.dynamic == false
}

# network.download_to_interpreter / dynamic.script: a shell, interpreter, eval or
# source whose program is only known at run time (bash <(curl ...),
# bash -c "$(wget -O- ...)", eval "$(...)", source <(...), python3 -c "$X").
dynamic_program_finding(c, p) := f if {
	dynamic_program(c, p)
	f := dynamic_program_reason(c)
}

dynamic_program_reason(c) := lib.finding("deny", "network.download_to_interpreter", msg, c) if {
	some d in input.commands
	d.context.substitution == true
	lib.profile_for(d).download == true
	msg := sprintf("%s runs a program made at run time while the script downloads with %s", [c.name, d.name])
} else := lib.finding(lib.dynamic_effect, "dynamic.script", msg, c) if {
	msg := sprintf("%s runs a program that is only known at run time", [c.name])
}

dynamic_program(c, _) if {
	c.name == "eval"
	some o in c.operands
	o.dynamic == true
}

dynamic_program(c, _) if {
	c.name in {"source", "."}
	c.operands[0].dynamic == true
}

dynamic_program(c, p) if {
	runs_programs(p)
	c.operands[0].dynamic == true
	not "find" in c.via
	not "xargs" in c.via
}

# network.download_then_execute: a file the script downloads is then run, sourced or
# made executable (curl -o x.sh URL && bash x.sh; wget URL/x.py; python3 x.py).
download_exec_findings(c) := {lib.finding("deny", "network.download_then_execute", msg, c) |
	count(c.operands) > 0
	downloads := downloaded_paths
	count(downloads) > 0
	some o in c.operands
	o.path in downloads
	msg := sprintf("%s runs %s, which the script downloads", [c.name, o.text])
}

downloaded_paths := {t.path |
	some d in input.commands
	p := lib.profile_for(d)
	p.download == true
	some t in download_targets(d, p)
	t.path != ""
}

download_targets(d, p) := ({lib.target(d, r.target) | some r in d.redirects; r.write == true} | {lib.target(d, v) | some v in lib.option_values(d.argv, download_writer(p))}) | {lib.target(d, url_basename(o.text)) |
	# curl -O and wget without -O save under the URL's last path segment.
	some o in d.operands
	contains(o.text, "://")
	url_basename(o.text) != ""
}

download_writer(p) := p.writer if p.writer != false

else := {}

url_basename(u) := b if {
	path := split(split(split(u, "?")[0], "#")[0], "://")[1]
	parts := split(path, "/")
	count(parts) > 1
	b := parts[count(parts) - 1]
}

# write.unknown_targets: a tool that writes its operands, run by xargs, gets them from
# its input, which the policy cannot see: ask. (Called from commands.rego for the
# commands that are not contained: parse marks the commands xargs and find -exec run
# as dynamic.)
unknown_target_findings(c) := {lib.finding("ask", "write.unknown_targets", msg, c) |
	c.dynamic == true
	"xargs" in c.via
	lib.profile_for(c).writes_operands == true
	msg := sprintf("xargs runs %s on names read from its input, which may be outside the workspace", [c.name])
}
