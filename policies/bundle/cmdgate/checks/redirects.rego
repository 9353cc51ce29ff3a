# Redirects: bash's /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT pseudo-files, which open
# a network connection on any redirect (<, >, <>, exec 3<>); writes outside the workspace (a dynamic or ~ target counts as outside;
# sinks such as /dev/null and /dev/stderr are fine; descriptor duplications such as
# 2>&1 write no file), writes into .git/ (its config and hooks run code), and `<` reads
# of secret locations.
package cmdgate.checks

import data.cmdgate.lib

# redirect_findings: called from commands.rego for the commands that are not
# contained.
redirect_findings(c) := {f |
	some r in c.redirects
	f := redirect_finding(c, r)
}

# network.dev_tcp, write.outside_workspace, write.git_internals, secrets.read
redirect_finding(c, r) := lib.finding("deny", "network.dev_tcp", msg, c) if {
	lib.dev_net(r.path, r.target, r.dynamic)
	msg := sprintf("%s %s opens a network connection (bash's /dev/tcp and /dev/udp); it is forbidden", [r.op, r.target])
} else := lib.finding("deny", "write.outside_workspace", msg, c) if {
	r.write == true
	lib.outside_write(r)
	msg := sprintf("%s %s writes outside the workspace", [r.op, r.target])
} else := lib.finding("deny", "write.git_internals", msg, c) if {
	r.write == true
	lib.git_internal(r)
	msg := sprintf("%s %s writes into .git, whose hooks and config run code", [r.op, r.target])
} else := lib.finding("deny", "secrets.read", msg, c) if {
	r.op in {"<", "<>"}
	r.inside_workspace == false
	lib.secret({"text": r.target, "path": r.path, "dynamic": r.dynamic})
	msg := sprintf("%s reads %s, a secret location outside the workspace", [c.name, r.target])
}
