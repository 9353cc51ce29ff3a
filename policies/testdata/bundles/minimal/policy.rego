package cmdgate

# A minimal bundle: allows what has no "sudo", asks for the rest.
decision := {"action": action, "reasons": reasons, "sandbox": {"network": false}}

action := "ask" if count(reasons) > 0
else := "allow"

reasons := [{"rule": "minimal.sudo", "message": "sudo asks", "command": c.index} |
	some c in input.commands
	c.name == "sudo"
]
