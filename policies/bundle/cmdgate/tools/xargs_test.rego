package cmdgate.tools.xargs_test

import data.cmdgate.testlib as t

test_shells_and_interpreters if {
	every argv in [["xargs", "sh", "-c", "id"], ["xargs", "-I{}", "bash", "-c", "{}"], ["xargs", "-n", "1", "python3"], ["xargs", "-0", "/bin/sh"]] {
		"escape.xargs_exec" in t.rules(t.run([argv]))
	}
}

test_ordinary_tools if {
	t.run([["xargs", "grep", "pattern"]]).action == "allow"
	t.run([["xargs", "-n", "1", "echo"]]).action == "allow"
	t.run([["xargs"]]).action == "allow"
}

test_arg_file_secret if {
	every argv in [["xargs", "-a", "/etc/shadow", "echo"], ["xargs", "--arg-file=/root/.ssh/id_rsa"], ["xargs", "-0a", "/etc/shadow", "echo"]] {
		"secrets.read" in t.rules(t.run([argv]))
	}
	t.run([["xargs", "-a", "files.txt", "wc", "-l"]]).action == "allow"
	t.run([["xargs", "grep", "-a", "/etc/shadow"]]).action == "allow"
}
