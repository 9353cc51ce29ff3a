package cmdgate.tools.tar_test

import data.cmdgate.testlib as t

test_exec_options if {
	every argv in [
		["tar", "-cf", "/dev/null", "x", "--checkpoint=1", "--checkpoint-action=exec=sh"],
		["tar", "-xf", "a.tar", "--to-command=sh -c id"], ["tar", "-I", "sh -c id", "-cf", "o.tar", "s"],
		["tar", "--use-compress-program=sh", "-xf", "a.tar"], ["tar", "--checkpoint-a=exec=sh", "-cf", "x.tar", "."],
		["tar", "-xPf", "a.tar"], ["tar", "--absolute-names", "-xf", "a.tar"], ["tar", "-xf", "host:a.tar"],
		["tar", "cfI", "o.tar", "sh", "s"],
	] {
		"escape.tar_exec" in t.rules(t.run([argv]))
	}
}

test_extraction_targets if {
	"write.outside_workspace" in t.rules(t.run([["tar", "-xf", "a.tar", "-C", "/"]]))
	"write.outside_workspace" in t.rules(t.run([["tar", "-xzf", "a.tgz", "--directory=/etc"]]))
	"write.outside_workspace" in t.rules(t.run([["tar", "xzfC", "a.tgz", "/usr/local"]]))
	t.run([["tar", "-xf", "a.tar", "-C", "vendor"]]).action == "allow"
	t.run([["tar", "-czf", "out.tgz", "-C", "/usr/share/doc", "x"]]).action == "allow"
	"secrets.read" in t.rules(t.run([["tar", "-czf", "out.tgz", "-C", "/root", ".ssh"]]))
}

test_created_archives if {
	"write.outside_workspace" in t.rules(t.run([["tar", "-czf", "/tmp/x.tgz", "src"]]))
	"write.outside_workspace" in t.rules(t.run([["tar", "czf", "/tmp/x.tgz", "src"]]))
	t.run([["tar", "-czf", "out.tgz", "src/"]]).action == "allow"
	t.run([["tar", "-cf", "-", "src"]]).action == "allow"
}

test_reads if {
	"secrets.read" in t.rules(t.run([["tar", "-czf", "x.tgz", "/home"]]))
	"write.outside_workspace" in t.rules(t.run([["tar", "--remove-files", "-cf", "x.tar", "/tmp/y"]]))
	t.run([["tar", "tzf", "a.tgz"]]).action == "allow"
}
