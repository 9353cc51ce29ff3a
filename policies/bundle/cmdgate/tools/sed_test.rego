package cmdgate.tools.sed_test

import data.cmdgate.testlib as t

test_scripts_that_run_or_touch_files if {
	every script in ["1e id", "e id", "s/x/id/e", "s/.*/id/ep", "w /tmp/x", "s/a/b/w /tmp/out", "1r /etc/passwd", "R x", "$!N;s|a|b|e", "s#x#y#gw f"] {
		"escape.sed_exec" in t.rules(t.run([["sed", script, "f"]]))
	}
}

test_ordinary_scripts if {
	every script in [
		"s/a/b/g", "1,20p", "/^func /p", "s/#.*//", "/^#/d", ":a;N;$!ba;s/\\n/ /g", "$!N;s/\\n/ /",
		"y/abc/xyz/", "1i\\header", "s|/usr/local|/opt|g", "10q", "s/\\t/ /g", "/start/,/end/d",
	] {
		t.run([["sed", script, "f"]]).action == "allow"
	}
}

test_expressions_and_script_files if {
	"escape.sed_exec" in t.rules(t.run([["sed", "-e", "s/a/b/", "-e", "e id", "f"]]))
	"escape.sed_exec" in t.rules(t.run([["sed", "-ne", "1e id", "f"]]))
	"escape.sed_exec" in t.rules(t.run([["sed", "--expression=e id", "f"]]))
	"escape.sed_script_file" in t.rules(t.run([["sed", "-f", "x.sed", "f"]]))
	t.run([["sed", "-n", "-e", "1p", "f"]]).action == "allow"
}

test_in_place if {
	"write.outside_workspace" in t.rules(t.run([["sed", "-i", "s/a/b/", "/etc/hosts"]]))
	"write.outside_workspace" in t.rules(t.run([["sed", "-ie", "s/a/b/", "/etc/hosts"]]))
	"write.outside_workspace" in t.rules(t.run([["sed", "--in-place=.bak", "s/a/b/", "/etc/hosts"]]))
	"write.outside_workspace" in t.rules(t.run([["sed", "-i", "--follow-symlinks", "s/a/b/", "f"]]))
	"write.git_internals" in t.rules(t.run([["sed", "-i", "s/a/b/", ".git/config"]]))
	t.run([["sed", "-i", "s/a/b/", "src/main.go"]]).action == "allow"
	t.run([["sed", "-i", "-e", "/etc/d", "src/main.go"]]).action == "allow"
	t.run([["sed", "s/a/b/", "/etc/hosts"]]).action == "allow"
}
