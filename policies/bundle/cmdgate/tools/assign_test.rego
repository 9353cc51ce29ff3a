package cmdgate.tools.assign_test

import data.cmdgate.testlib as t

test_dangerous_exports if {
	every argv in [["export", "PATH=./bin"], ["declare", "-x", "LD_PRELOAD=x"], ["local", "IFS=x"], ["readonly", "BASH_ENV=x"], ["typeset", "PAGER=x"], ["export", "PATH+=:x"]] {
		"env.dangerous" in t.rules(t.run([argv]))
	}
	t.run([["export", "FOO=bar"]]).action == "allow"
}

test_arithmetic_substitution if {
	"escape.arithmetic_substitution" in t.rules(t.run([["let", "x=a[$(id)]"]]))
	"escape.arithmetic_substitution" in t.rules(t.run([["declare", "-i", "x=a[`id`]"]]))

	# test 'a[$(id)]' -eq 1: a static (quoted) operand
	static := {"text": "a[$(id)]", "path": "/workspace/proj/a[$(id)]", "inside_workspace": true, "dynamic": false, "glob": false, "argi": 1}
	c := t.set(t.command(0, ["test", "a[$(id)]", "-eq", "1"]), {"dynamic": false, "operands": [static, t.operand("1", 3)]})
	"escape.arithmetic_substitution" in t.rules(t.decide(t.doc([c])))
	t.run([["let", "x=1+2"]]).action == "allow"
}
