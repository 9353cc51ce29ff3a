package cmdgate.checks.operands_test

import data.cmdgate.testlib as t

test_secret_reads if {
	every argv in [
		["cat", "/etc/shadow"], ["cat", "/root/.bashrc"], ["cat", "/home/alice/notes"],
		["cat", "~/.ssh/id_rsa"], ["cat", "$HOME/.aws/credentials"], ["cat", "/proc/1/environ"],
		["cat", "/run/secrets/token"], ["cat", "/opt/x/server.pem"], ["cat", "/srv/app/.env"],
		["head", "/etc/ssh/ssh_host_rsa_key"], ["cat", "/var/lib/x/.docker/config.json"],
		["ls", "/etc/sudoers.d"], ["cat", "/r??t/.ssh/x"], ["cat", "/etc/sha*"], ["cat", "/home/*/.netrc"],
	] {
		d := t.run([argv])
		d.action == "deny"
		"secrets.read" in t.rules(d)
	}
}

test_ordinary_reads_outside_workspace if {
	every argv in [["cat", "/etc/os-release"], ["ls", "/home"], ["cat", "/usr/share/dict/words"], ["cat", "/etc/*-release"], ["head", "/proc/cpuinfo"]] {
		t.run([argv]).action == "allow"
	}
}

test_nothing_is_secret_inside_workspace if {
	t.run([["cat", "config/server.key"]]).action == "allow"
	t.run([["cat", ".env"]]).action == "allow"
	t.run([["cat", "keys/id_rsa"]]).action == "allow"
}

test_pattern_operand_is_not_a_file if {
	t.run([["grep", "-rn", "/etc/shadow", "."]]).action == "allow"
	d := t.run([["grep", "-f", "/etc/shadow", "x"]])
	"secrets.read" in t.rules(d)
}

test_non_path_tools if {
	t.run([["echo", "/etc/shadow"]]).action == "allow"
	t.run([["printf", "%s", "~/.ssh"]]).action == "allow"
}

test_written_operands_outside if {
	every argv in [
		["cp", "a", "/etc/x"], ["mv", "/etc/passwd", "x"], ["touch", "/tmp/x"], ["mkdir", "-p", "/opt/x"],
		["rm", "/etc/hosts"], ["tee", "/etc/x"], ["ln", "-s", "/etc/passwd", "link"], ["chmod", "+x", "/usr/local/bin/x"],
		["uniq", "a.txt", "/etc/hosts"], ["truncate", "-s", "0", "/var/log/x"], ["install", "tool", "/usr/local/bin/"],
	] {
		d := t.run([argv])
		d.action == "deny"
		"write.outside_workspace" in t.rules(d)
	}
}

test_reads_by_writers_are_not_writes if {
	t.run([["cp", "/etc/os-release", "copy.txt"]]).action == "allow"
	t.run([["uniq", "/etc/os-release", "out.txt"]]).action == "allow"
	t.run([["chmod", "644", "file"]]).action == "allow"
}

test_written_operand_into_git if {
	d := t.run([["cp", "hook", ".git/hooks/pre-commit"]])
	"write.git_internals" in t.rules(d)
	t.run([["cp", ".gitignore", "backup/.gitignore"]]).action == "allow"
}

test_placeholders_of_find_and_xargs if {
	inner := t.set(t.command(1, ["rm", "{}"]), {"via": ["find"], "dynamic": true, "operands": [{"text": "{}", "path": "", "inside_workspace": false, "dynamic": true, "glob": false, "argi": 1}]})
	d := t.decide(t.doc([t.command(0, ["find", ".", "-name", "*.o", "-exec", "rm", "{}", ";"]), inner]))
	d.action == "allow"
}
