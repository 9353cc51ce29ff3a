package cmdgate.tools.shared_test

import data.cmdgate.testlib as t
import data.cmdgate.tools

root(p) := {"text": p, "path": p, "inside_workspace": false, "dynamic": false}

test_recursive_secret_read_one_finding_per_root if {
	c := t.command(0, ["grep", "-r", "x", "/"])
	fs := tools.recursive_secret_read(c, [root("/"), root("/usr/share")])
	count(fs) == 1
	some f in fs
	f.rule == "secrets.read"
	contains(f.message, "secret locations")
}

test_recursive_secret_read_ignores_dynamic_and_inside if {
	c := t.command(0, ["grep", "-r", "x"])
	tools.recursive_secret_read(c, [{"text": "$D", "path": "", "inside_workspace": false, "dynamic": true}]) == set()
	tools.recursive_secret_read(c, [{"text": "src", "path": "/workspace/proj/src", "inside_workspace": true, "dynamic": false}]) == set()
}

test_secret_roots if {
	"/root" in tools.secret_roots
	"/home" in tools.secret_roots
	"/etc/shadow" in tools.secret_roots
}
