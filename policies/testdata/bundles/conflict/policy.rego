package cmdgate

decision := {"action": "allow", "reasons": []} if count(input.commands) >= 0

decision := {"action": "deny", "reasons": []} if count(input.commands) >= 0
