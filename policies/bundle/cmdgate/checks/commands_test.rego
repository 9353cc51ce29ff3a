package cmdgate.checks.commands_test

import data.cmdgate.testlib as t

# A command with an env assignment; contained (engine-computed) or not.
with_env(contained) := object.union(t.set(t.command(0, ["ls"]), {"env": {"LD_PRELOAD": "/tmp/x.so"}}), {"contained": contained})

test_contained_commands_of_allowed_tools_skip_the_path_rules if {
	# The engine never marks such a command contained; a document that does shows
	# that the rules were skipped.
	t.decide(t.doc([with_env(true)])).action == "allow"
	"env.dangerous" in t.rules(t.decide(t.doc([with_env(false)])))
}

test_without_the_field_every_rule_runs if {
	c := t.set(t.command(0, ["ls"]), {"env": {"LD_PRELOAD": "/tmp/x.so"}})
	"env.dangerous" in t.rules(t.decide(t.doc([c])))
}

test_contained_commands_of_other_names_meet_the_name_rules if {
	sudo := object.union(t.command(0, ["sudo", "ls"]), {"contained": true})
	"forbidden.command" in t.rules(t.decide(t.doc([sudo])))
	path := object.union(t.command(0, ["./ls"]), {"contained": true})
	"allowlist.path_command" in t.rules(t.decide(t.doc([path])))
	push := object.union(t.command(0, ["git", "push"]), {"contained": true})
	"allowlist.unknown_command" in t.rules(t.decide(t.doc([push])))
	status := object.union(t.command(0, ["git", "status"]), {"contained": true})
	t.decide(t.doc([status])).action == "allow"
}

test_contained_commands_of_unlisted_names_skip_only_the_path_rules if {
	# git status is allowed by its subcommand: contained, it skips the env rules too
	status := object.union(t.set(t.command(0, ["git", "status"]), {"env": {"GIT_PAGER": "sh"}}), {"contained": true})
	t.decide(t.doc([status])).action == "allow"
	status2 := object.union(t.set(t.command(0, ["git", "status"]), {"env": {"GIT_PAGER": "sh"}}), {"contained": false})
	"env.dangerous" in t.rules(t.decide(t.doc([status2])))
}

test_network_findings_are_not_reasons if {
	d := t.run([["curl", "-s", "https://example.com"]])
	d.action == "allow"
	d.reasons == []
	d.sandbox.network == true
}

test_network_by_subcommand if {
	t.run([["npm", "install"]]).sandbox.network == true
	t.run([["npm", "test"]]).sandbox.network == false
	t.run([["npm", "--prefix", "sub", "install"]]).sandbox.network == true
	t.run([["npm", "--prefix", "sub", "test"]]).sandbox.network == false
	t.run([["go", "-C", "sub", "mod", "download"]]).sandbox.network == true
	t.run([["go", "test", "./..."]]).sandbox.network == false
	t.run([["python3", "-m", "pip", "install", "x"]]).sandbox.network == true
	t.run([["python3", "-m", "pytest"]]).sandbox.network == false
	t.run([["/usr/bin/curl", "https://example.com"]]).sandbox.network == true
}

test_no_network_when_denied if {
	d := t.run([["curl", "https://example.com"], ["sudo", "ls"]])
	d.action == "deny"
	d.sandbox.network == false
}

test_single_word_commands_are_checked if {
	# argv[1] missing must not skip the rules
	sudo := object.union(t.command(0, ["sudo"]), {"contained": true})
	"forbidden.command" in t.rules(t.decide(t.doc([sudo])))
	git := object.union(t.command(0, ["git"]), {"contained": true})
	"allowlist.unknown_command" in t.rules(t.decide(t.doc([git])))
}

test_option_values_naming_secrets if {
	every argv in [["grep", "--file=/etc/shadow", "x"], ["grep", "-f/root/.ssh/id_rsa", "x"], ["wc", "--files0-from=/etc/shadow"], ["du", "--files0-from=~/.aws/credentials"], ["curl", "--netrc-file=/root/.netrc", "https://x"]] {
		"secrets.read" in t.rules(t.run([argv]))
	}
	t.run([["grep", "--include=*.go", "-rn", "x", "."]]).action == "allow"
	t.run([["grep", "--file=patterns.txt", "x"]]).action == "allow"
	t.run([["grep", "--file=/etc/hostname", "x"]]).action == "allow"
}

# The tools' fast paths (for contained commands) still see what they must.
contained(argv) := t.decide(t.doc([object.union(t.command(0, argv), {"contained": true})]))

test_fast_paths_of_contained_commands if {
	contained(["tar", "-xzf", "a.tgz"]).action == "allow"
	"escape.tar_exec" in t.rules(contained(["tar", "-xf", "a.tar", "--to-command=sh"]))
	"escape.tar_exec" in t.rules(contained(["tar", "-xIsh", "-f", "a.tar"]))
	"escape.tar_exec" in t.rules(contained(["tar", "xPf", "a.tar"]))
	"escape.tar_exec" in t.rules(contained(["tar", "-xf", "host:a.tar"]))
	contained(["sed", "-n", "1,20p", "f"]).action == "allow"
	"escape.sed_exec" in t.rules(contained(["sed", "-n", "1e id", "f"]))
	"escape.sed_exec" in t.rules(contained(["sed", "s/a/b/w out", "f"]))
	"secrets.read" in t.rules(contained(["sed", "s/x/~\\/.ssh\\/id_ed25519/", "f"]))
	contained(["find", ".", "-name", "*.go"]).action == "allow"
	"escape.find_exec" in t.rules(contained(["find", ".", "-exec", "sh", "-c", "id", ";"]))
	contained(["curl", "-sSL", "https://example.com/x"]).action == "allow"
	"network.upload" in t.rules(contained(["curl", "-d", "x", "https://example.com"]))
	"network.metadata" in t.rules(contained(["curl", "http://metadata.google.internal/x"]))
	"network.metadata" in t.rules(contained(["curl", "http://169.254.169.254/"]))
	"network.scheme" in t.rules(contained(["curl", "gopher://example.com/"]))
	contained(["wget", "-q", "https://example.com/f.tgz"]).action == "allow"
	"network.upload" in t.rules(contained(["wget", "--post-data=x", "https://example.com"]))
}
