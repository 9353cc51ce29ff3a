package cmdgate.tools.find_test

import data.cmdgate.testlib as t

test_exec_of_shells_and_interpreters if {
	every argv in [
		["find", ".", "-exec", "sh", "-c", "id", ";"], ["find", ".", "-execdir", "/bin/bash", ";"],
		["find", ".", "-ok", "python3", "x", ";"], ["find", ".", "-okdir", "zsh", ";"],
	] {
		"escape.find_exec" in t.rules(t.run([argv]))
	}
}

test_exec_of_ordinary_tools if {
	t.run([["find", ".", "-name", "*.go", "-exec", "gofmt", "-l", "{}", ";"]]).action == "allow"
}

test_delete if {
	d := t.run([["find", ".", "-name", "*.pyc", "-delete"]])
	d.action == "ask"
	"destructive.find_delete" in t.rules(d)
	"write.outside_workspace" in t.rules(t.run([["find", "/", "-delete"]]))
	"write.outside_workspace" in t.rules(t.run([["find", "-L", "/etc", "-delete"]]))
}

test_exec_writers_outside if {
	"write.outside_workspace" in t.rules(t.run([["find", "/etc", "-exec", "rm", "{}", ";"]]))
	t.run([["find", "build", "-exec", "rm", "{}", ";"]]).action == "allow"
}

test_fprint if {
	"write.outside_workspace" in t.rules(t.run([["find", ".", "-fprint", "/tmp/list"]]))
	t.run([["find", ".", "-fprint", "list.txt"]]).action == "allow"
}

test_exec_over_secret_trees if {
	"secrets.read" in t.rules(t.run([["find", "/home", "-name", "id_rsa", "-exec", "cat", "{}", ";"]]))
}
