package cmdgate

# An inconsistent policy: allows while listing a deny reason. The engine denies.
decision := {"action": "allow", "reasons": [{"effect": "deny", "rule": "x.y", "message": "m", "command": 0}], "sandbox": {"network": true}}
