package cmdgate

decision := {"action": "allow", "reasons": [], "sandbox": {"network": false}}
