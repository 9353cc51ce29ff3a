package cmdgate_test

import data.cmdgate.testlib as t

test_allow_plain_command if {
	d := t.decide(t.script([["ls", "-la"]]))
	d.action == "allow"
	d.reasons == []
	d.sandbox.network == false
}

test_deny_wins_over_ask if {
	# rm -r asks, sudo denies
	d := t.decide(t.script([["rm", "-r", "build"], ["sudo", "ls"]]))
	d.action == "deny"
	t.rules(d) == {"destructive.rm_recursive", "forbidden.command"}
}

test_ask_wins_over_allow if {
	d := t.decide(t.script([["ls"], ["rm", "-r", "build"]]))
	d.action == "ask"
	t.rules(d) == {"destructive.rm_recursive"}
}

test_reasons_deny_first_then_by_command if {
	d := t.decide(t.script([["rm", "-r", "a"], ["sudo", "ls"], ["su"]]))
	[r.rule | some r in d.reasons] == ["forbidden.command", "forbidden.command", "destructive.rm_recursive"]
	[r.command | some r in d.reasons] == [1, 2, 0]
	[r.effect | some r in d.reasons] == ["deny", "deny", "ask"]
}

test_reason_fields if {
	d := t.decide(t.script([["sudo", "ls"]]))
	some r in d.reasons
	object.keys(r) == {"effect", "rule", "message", "command"}
	r.command == 0
	contains(r.message, "sudo")
}

test_unknown_effect_is_deny if {
	data.cmdgate.action == "deny" with data.cmdgate.checks.findings as {{"effect": "surprise", "rule": "x", "message": "m", "command": 0}}
}

test_network_for_curl if {
	d := t.decide(t.script([["curl", "-s", "https://example.com"]]))
	d.action == "allow"
	d.sandbox.network == true
}

test_network_for_installs_only if {
	t.run([["npm", "install"]]).sandbox.network == true
	t.run([["npm", "test"]]).sandbox.network == false
	t.run([["go", "mod", "download"]]).sandbox.network == true
	t.run([["go", "test", "./..."]]).sandbox.network == false
	t.run([["python3", "-m", "pip", "install", "-r", "requirements.txt"]]).sandbox.network == true
	t.run([["pip", "install", "-r", "requirements.txt"]]).sandbox.network == true
}

test_no_network_when_denied if {
	d := t.decide(t.script([["curl", "https://example.com"], ["sudo", "ls"]]))
	d.action == "deny"
	d.sandbox.network == false
}
