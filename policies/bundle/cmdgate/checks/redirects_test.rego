package cmdgate.checks.redirects_test

import data.cmdgate.testlib as t

decide_redirect(op, target) := t.decide(t.doc([t.set(t.command(0, ["echo", "x"]), {"redirects": [t.redirect(op, target)]})]))

test_write_inside_workspace if {
	decide_redirect(">", "out.txt").action == "allow"
	decide_redirect(">>", "logs/build.log").action == "allow"
	decide_redirect("&>", "all.log").action == "allow"
}

test_write_outside_workspace if {
	every target in ["/etc/cron.d/x", "/tmp/x", "../outside", "/workspace/other/x"] {
		d := decide_redirect(">", target)
		d.action == "deny"
		"write.outside_workspace" in t.rules(d)
	}
}

test_write_dynamic_or_tilde_target if {
	r := object.union(t.redirect(">", "x"), {"target": "$OUT", "path": "", "inside_workspace": false, "dynamic": true, "write": true})
	d := t.decide(t.doc([t.set(t.command(0, ["echo"]), {"redirects": [r]})]))
	"write.outside_workspace" in t.rules(d)
	r2 := object.union(t.redirect(">", "x"), {"target": "~/.bashrc", "path": "", "inside_workspace": false, "write": true})
	d2 := t.decide(t.doc([t.set(t.command(0, ["echo"]), {"redirects": [r2]})]))
	"write.outside_workspace" in t.rules(d2)
}

test_sinks if {
	every target in ["/dev/null", "/dev/stderr", "/dev/stdout", "/dev/tty", "/dev/fd/2"] {
		decide_redirect(">", target).action == "allow"
	}
}

test_descriptor_duplication if {
	decide_redirect(">&", "1").action == "allow"
	decide_redirect(">&", "2").action == "allow"
	decide_redirect("<&", "0").action == "allow"
	decide_redirect(">&", "-").action == "allow"
}

test_write_into_git if {
	d := decide_redirect(">>", ".git/config")
	d.action == "deny"
	"write.git_internals" in t.rules(d)
	decide_redirect(">", ".gitignore").action == "allow"
}

test_read_secret if {
	d := decide_redirect("<", "/etc/shadow")
	d.action == "deny"
	"secrets.read" in t.rules(d)
	decide_redirect("<", "/etc/os-release").action == "allow"
	decide_redirect("<", "input.txt").action == "allow"
}

test_dev_tcp if {
	every op in ["<", ">", ">>", "<>"] {
		d := decide_redirect(op, "/dev/tcp/10.0.0.1/4444")
		d.action == "deny"
		"network.dev_tcp" in t.rules(d)
	}
	"network.dev_tcp" in t.rules(decide_redirect("<", "/dev/udp/10.0.0.1/53"))
	r := object.union(t.redirect("<", "x"), {"target": "/dev/tcp/$HOST/80", "path": "", "inside_workspace": false, "dynamic": true})
	"network.dev_tcp" in t.rules(t.decide(t.doc([t.set(t.command(0, ["cat"]), {"redirects": [r]})])))
}
