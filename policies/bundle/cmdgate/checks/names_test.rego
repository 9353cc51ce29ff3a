package cmdgate.checks.names_test

import data.cmdgate.testlib as t

test_forbidden_list if {
	every name in ["sudo", "su", "doas", "pkexec", "chown", "chgrp", "mount", "umount", "iptables", "ip6tables", "nft", "systemctl", "service", "kill", "killall", "pkill", "reboot", "shutdown", "halt", "poweroff", "init", "dd", "mkfs", "fdisk", "parted", "sfdisk", "nc", "netcat", "ncat", "socat", "nmap", "ssh", "scp", "rsync", "sftp", "telnet"] {
		d := t.run([[name, "x"]])
		d.action == "deny"
		"forbidden.command" in t.rules(d)
	}
}

test_forbidden_family if {
	every name in ["mkfs.ext4", "nc.openbsd", "iptables-save", "ip6tables-restore", "killall5", "ssh-keygen", "mount.nfs"] {
		"forbidden.command" in t.rules(t.run([[name]]))
	}
}

test_forbidden_by_system_path if {
	d := t.run([["/usr/bin/sudo", "ls"]])
	"forbidden.command" in t.rules(d)
}

test_forbidden_not_overridden_by_additional if {
	d := t.decide_config(t.script([["sudo", "ls"]]), {"allowed_commands": {"additional": ["sudo"]}})
	d.action == "deny"
	"forbidden.command" in t.rules(d)
}

test_family_allowed_by_exact_name if {
	d := t.decide_config(t.script([["ssh-keygen", "-l", "-f", "key.pub"]]), {"allowed_commands": {"additional": ["ssh-keygen"]}})
	d.action == "allow"
}

test_kill_of_own_jobs if {
	t.run([["kill", "%1"]]).action == "allow"
	t.run([["kill", "-TERM", "%+"]]).action == "allow"
	"forbidden.command" in t.rules(t.run([["kill", "0"]]))
	"forbidden.command" in t.rules(t.run([["kill", "%1", "1234"]]))
}

test_unknown_command_denied_by_default if {
	d := t.run([["npx", "x"]])
	d.action == "deny"
	t.rules(d) == {"allowlist.unknown_command"}
}

test_unknown_command_asks_when_configured if {
	d := t.decide_config(t.script([["npx", "x"]]), {"unknown_command": "ask"})
	d.action == "ask"
}

test_path_command if {
	every path in ["./ls", "bin/go", "/tmp/x/git", "./gradlew", "./scripts/x.sh"] {
		d := t.run([[path]])
		d.action == "deny"
		"allowlist.path_command" in t.rules(d)
	}
}

test_path_command_asks_when_configured if {
	d := t.decide_config(t.script([["./gradlew", "build"]]), {"unknown_command": "ask"})
	d.action == "ask"
}

test_system_path_is_the_tool if {
	t.run([["/usr/bin/ls", "-la"]]).action == "allow"
	t.run([["/usr/local/go/bin/go", "test", "./..."]]).action == "allow"
}

test_dynamic_name if {
	d := t.run([["$CMD", "-rf", "/"]])
	d.action == "deny"
	"dynamic.command_name" in t.rules(d)
}

test_dynamic_name_asks_when_configured if {
	d := t.decide_config(t.script([["$CMD"]]), {"dynamic_command": "ask"})
	d.action == "ask"
}

test_subcommand_entries if {
	t.run([["git", "status"]]).action == "allow"
	t.run([["git", "-C", "src", "log", "--oneline"]]).action == "allow"
	d := t.run([["git", "push"]])
	d.action == "deny"
	some r in d.reasons
	r.rule == "allowlist.unknown_command"
	contains(r.message, "git status")
}

test_versioned_interpreter if {
	t.run([["python3.12", "script.py"]]).action == "allow"
}

test_redirect_only_statement_has_no_name_finding if {
	c := t.set(t.command(0, ["x"]), {"name": "", "path": "", "argv": [], "operands": [], "redirects": [t.redirect(">", "out.txt")]})
	d := t.decide(t.doc([c]))
	d.action == "allow"
}

test_function_calls if {
	call := object.union(t.command(1, ["run", "./pkg/..."]), {"function_call": true})
	body := object.union(t.command(0, ["go", "test", "./pkg/..."]), {"context": object.union(t.context, {"function": true})})
	t.decide(t.doc([body, call])).action == "allow"

	# not marked (or marked false): a program
	t.rules(t.run([["run", "./pkg/..."]])) == {"allowlist.unknown_command"}
	t.rules(t.decide(t.doc([object.union(t.command(0, ["run"]), {"function_call": false})]))) == {"allowlist.unknown_command"}
}

test_function_named_like_a_forbidden_or_listed_command if {
	# bash runs the function's body, which is checked where it is defined
	every argv in [["sudo", "id"], ["ssh", "host"], ["mkfs.ext4", "x"], ["git", "push"], ["python3.12", "x.py"]] {
		t.decide(t.doc([object.union(t.command(0, argv), {"function_call": true})])).action == "allow"
	}
}

test_function_call_words_are_checked if {
	secret := object.union(t.command(0, ["run", "/etc/shadow"]), {"function_call": true})
	"secrets.read" in t.rules(t.decide(t.doc([secret])))
	write := object.union(t.command(0, ["run"]), {"function_call": true, "redirects": [t.redirect(">", "/etc/x")]})
	"write.outside_workspace" in t.rules(t.decide(t.doc([write])))

	# a function named like a tool keeps that tool's checks on its own words
	rm := object.union(t.command(0, ["rm", "-rf", "build"]), {"function_call": true})
	"forbidden.rm_recursive_force" in t.rules(t.decide(t.doc([rm])))
}
