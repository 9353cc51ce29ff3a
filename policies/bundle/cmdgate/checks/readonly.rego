# The read-only language (request.profile "readonly": POST /v1/execute, the MCP execute
# tool). Its stages are evaluated in memory by the gateway, never run as programs, and
# the rules see them as the commands they mimic (`cat PATH | grep -n X`), so every other
# rule (secrets read outside the workspace, say) applies to what is read. Behind the
# language's own parser, a second line: a read-only request whose commands are not the
# language's stages, that reaches any shell feature, or that names no real path, is
# denied.
package cmdgate.checks

import data.cmdgate.lib

readonly_stages := {"cat", "nl", "head", "tail", "wc", "sort", "grep", "sed"}

# readonly.shape: a command that is not a stage of the language.
findings contains lib.request_finding("deny", "readonly.shape", msg) if {
	input.request.profile == "readonly"
	some c in input.commands
	not c.name in readonly_stages
	msg := sprintf("%s is not a stage of the read-only language", [c.name])
}

# readonly.shape: a shell feature (substitution, redirection, background, ...).
findings contains lib.request_finding("deny", "readonly.shape", msg) if {
	input.request.profile == "readonly"
	some feature, on in input.features
	on == true
	msg := sprintf("the read-only language has no %s", [feature])
}

findings contains lib.request_finding("deny", "readonly.shape", msg) if {
	input.request.profile == "readonly"
	some c in input.commands
	count(c.redirects) > 0
	msg := sprintf("%s redirects: the read-only language writes nothing", [c.name])
}

# readonly.file: no real path of the file read (the gateway resolves it before deciding).
findings contains lib.request_finding("deny", "readonly.file", "the read-only request names no file's real path") if {
	input.request.profile == "readonly"
	not readonly_path
}

readonly_path if {
	p := input.readonly.path
	is_string(p)
	startswith(p, "/")
}
