package cmdgate

decision := {"action": "allow"
