package cmdgate

decision := {"action": "maybe", "reasons": []}
