package cmdgate.tools.recursive_test

import data.cmdgate.testlib as t

test_recursive_reads_of_secret_trees if {
	every argv in [["grep", "-r", "x", "/"], ["grep", "-rn", "x", "/home"], ["grep", "-R", "x", "/etc"], ["grep", "--recursive", "x", "/root"], ["cp", "-r", "/root", "b"], ["cp", "-a", "/home", "b"], ["diff", "-r", "/root", "x"]] {
		"secrets.read" in t.rules(t.run([argv]))
	}
}

test_recursive_reads_elsewhere if {
	t.run([["grep", "-rn", "x", "."]]).action == "allow"
	t.run([["grep", "-r", "x", "/usr/share/doc"]]).action == "allow"
	t.run([["cp", "-r", "/usr/share/doc/x", "docs"]]).action == "allow"
	t.run([["grep", "x", "/etc/hosts"]]).action == "allow"
}
