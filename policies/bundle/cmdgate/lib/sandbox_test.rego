# The sandbox's guarantees (input.sandbox) make writes to a private /tmp and reads and
# writes of the sandbox's own home harmless; without them (the process backend, the
# offline CLI, a document without the field) both stay denied, and nothing else of the
# host's opens up under any backend.
package cmdgate.lib.sandbox_test

import data.cmdgate.testlib as t

linux := {"backend": "linux", "isolated": true, "private_tmp": true, "home": "/data/caches/proj-0123/home"}

process := {"backend": "process", "isolated": false, "private_tmp": false, "home": ""}

# private_tmp without isolation (a backend that only gives /tmp): no home rule.
tmp_only := {"backend": "custom", "isolated": false, "private_tmp": true, "home": "/data/home"}

with_sandbox(cmds, sb) := object.union(t.doc(cmds), {"sandbox": sb})

tilde(text) := {"text": text, "path": "", "inside_workspace": false, "dynamic": false, "glob": false, "argi": 1}

tilde_redirect(target) := object.union(t.redirect(">", "x"), {"target": target, "path": "", "inside_workspace": false, "write": true})

tmp_writes := [
	[t.set(t.command(0, ["echo", "x"]), {"redirects": [t.redirect(">", "/tmp/out.txt")]})],
	[t.set(t.command(0, ["make"]), {"redirects": [t.redirect("2>>", "/tmp/build.log")]})],
	[t.command(0, ["cp", "a.txt", "/tmp/"])],
	[t.command(0, ["mkdir", "-p", "/tmp/work/a"])],
	[t.command(0, ["touch", "/dev/shm/lock"])],
	[t.command(0, ["rm", "/tmp/scratch.json"])],
	[t.command(0, ["tee", "/tmp/log.txt"])],
]

test_private_tmp_writes_allowed_in_the_linux_sandbox if {
	every cmds in tmp_writes {
		d := t.decide(with_sandbox(cmds, linux))
		not "write.outside_workspace" in t.rules(d)
	}
	every cmds in tmp_writes {
		d := t.decide(with_sandbox(cmds, tmp_only))
		not "write.outside_workspace" in t.rules(d)
	}
}

test_tmp_writes_denied_without_the_guarantee if {
	every cmds in tmp_writes {
		"write.outside_workspace" in t.rules(t.decide(with_sandbox(cmds, process)))
	}

	# A document without the field (an older caller): as strict.
	every cmds in tmp_writes {
		"write.outside_workspace" in t.rules(t.decide(t.doc(cmds)))
	}
}

home_reads := [
	[t.set(t.command(0, ["ls", "-la", "~"]), {"operands": [tilde("~")]})],
	[t.set(t.command(0, ["cat", "~/.npmrc"]), {"operands": [tilde("~/.npmrc")]})],
	[t.set(t.command(0, ["ls", "~/.cache"]), {"operands": [tilde("~/.cache")]})],
	[t.command(0, ["cat", "/data/caches/proj-0123/home/.gitconfig"])],
	[t.command(0, ["ls", "/data/caches/proj-0123/home"])],
]

test_own_home_reads_allowed_in_an_isolated_sandbox if {
	every cmds in home_reads {
		d := t.decide(with_sandbox(cmds, linux))
		not "secrets.read" in t.rules(d)
		d.action == "allow"
	}
}

test_home_reads_denied_without_isolation if {
	every cmds in array.slice(home_reads, 0, 3) {
		"secrets.read" in t.rules(t.decide(with_sandbox(cmds, process)))
	}
	every cmds in array.slice(home_reads, 0, 3) {
		"secrets.read" in t.rules(t.decide(with_sandbox(cmds, tmp_only)))
	}
}

test_own_home_writes if {
	cmds := [t.set(t.command(0, ["echo", "x"]), {"redirects": [tilde_redirect("~/.note")]})]
	not "write.outside_workspace" in t.rules(t.decide(with_sandbox(cmds, linux)))
	"write.outside_workspace" in t.rules(t.decide(with_sandbox(cmds, process)))
}

# What stays denied in the linux sandbox: the host's homes and secrets, another user's
# home by ~user, $HOME (the script may have changed it), writes to the host's system
# directories, /var/tmp (not private), and paths that only look like /tmp.
test_host_paths_stay_denied_in_the_sandbox if {
	denied := [
		[t.command(0, ["cat", "/root/.ssh/id_rsa"])],
		[t.command(0, ["cat", "/home/alice/.aws/credentials"])],
		[t.command(0, ["cat", "/etc/shadow"])],
		[t.set(t.command(0, ["cat", "~alice/.ssh/id_rsa"]), {"operands": [tilde("~alice/.ssh/id_rsa")]})],
		[t.command(0, ["ls", "$HOME/.ssh"])],
		[t.command(0, ["cp", "x", "/etc/cron.d/"])],
		[t.set(t.command(0, ["echo", "x"]), {"redirects": [t.redirect(">", "/var/tmp/x")]})],
		[t.set(t.command(0, ["echo", "x"]), {"redirects": [t.redirect(">", "/tmpfoo/x")]})],
		[t.set(t.command(0, ["echo", "x"]), {"redirects": [t.redirect(">", "/data/caches/proj-0123/go-build/x")]})],
	]
	every cmds in denied {
		t.decide(with_sandbox(cmds, linux)).action == "deny"
	}
}

# A home that is not an absolute path, or /, grants nothing.
test_bad_home_grants_nothing if {
	cmds := [t.set(t.command(0, ["cat", "~/.npmrc"]), {"operands": [tilde("~/.npmrc")]})]
	every home in ["", "relative/home", "/"] {
		sb := object.union(linux, {"home": home})
		"secrets.read" in t.rules(t.decide(with_sandbox(cmds, sb)))
	}
	etc := [t.command(0, ["cat", "/etc/shadow"])]
	"secrets.read" in t.rules(t.decide(with_sandbox(etc, object.union(linux, {"home": "/"}))))
}
