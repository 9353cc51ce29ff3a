package cmdgate

decision := {"action": "allow", "reasons": []} if input.never == true
