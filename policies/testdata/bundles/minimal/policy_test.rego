package cmdgate_test

test_sudo_asks if {
	data.cmdgate.decision.action == "ask" with input as {"commands": [{"index": 0, "name": "sudo"}]}
}

test_ls_allowed if {
	data.cmdgate.decision.action == "allow" with input as {"commands": [{"index": 0, "name": "ls"}]}
}

test_fails_on_purpose if {
	data.cmdgate.decision.action == "deny" with input as {"commands": []}
}
