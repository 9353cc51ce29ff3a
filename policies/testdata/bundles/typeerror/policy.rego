package cmdgate

decision := {"action": "allow", "reasons": [], "sandbox": {"network": false}}

broken if {
	count(1, 2)
}
