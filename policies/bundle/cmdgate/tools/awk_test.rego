package cmdgate.tools.awk_test

import data.cmdgate.testlib as t

test_programs_that_run_or_write if {
	every prog in [
		"BEGIN {system(\"id\")}", "{ print | \"sh\" }", "BEGIN { \"id\" | getline x }", "{ print > \"/etc/x\" }",
		"BEGIN { printf \"x\" >> \"f\" }", "BEGIN { print |& \"cat\" }", "@load \"x\"",
	] {
		"escape.awk_exec" in t.rules(t.run([["awk", prog]]))
	}
}

test_program_files if {
	"escape.awk_program_file" in t.rules(t.run([["awk", "-f", "x.awk", "data"]]))
	"escape.awk_program_file" in t.rules(t.run([["gawk", "-fx.awk", "data"]]))
	"escape.awk_program_file" in t.rules(t.run([["gawk", "--load", "x.so", "1"]]))
}

test_ordinary_programs if {
	every prog in ["{print $1}", "$3 > 100 {print $1}", "{print $1 \" | \" $2}", "{sum += $2} END {print sum}", "{if ($1 > 2) print}"] {
		t.run([["awk", prog, "data"]]).action == "allow"
	}
}

test_secret_text_in_programs if {
	"secrets.read" in t.rules(t.run([["awk", "{print}", "/etc/os-release", "-v", "x=1"], ["awk", "BEGIN{while((getline l < \"/etc/shadow\")>0) print l}"]]))
}

test_awk_inet if {
	"network.awk_inet" in t.rules(t.run([["awk", `BEGIN { s = "/inet/tcp/0/10.0.0.1/4444"; s |& getline; print }`]]))
	"network.awk_inet" in t.rules(t.run([["gawk", `BEGIN { while ((getline line < "/inet4/tcp/0/example.com/80") > 0) print line }`]]))
	t.run([["awk", `{ print "/inet is a word" }`, "f.txt"]]).action == "allow"
}
