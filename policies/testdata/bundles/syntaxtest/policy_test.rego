package cmdgate_test

test_broken if {
	count(1,
}
