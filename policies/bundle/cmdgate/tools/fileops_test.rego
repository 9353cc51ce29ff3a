package cmdgate.tools.fileops_test

import data.cmdgate.testlib as t

test_rm_recursive_force_every_spelling if {
	every argv in [
		["rm", "-rf", "b"], ["rm", "-fr", "b"], ["rm", "-r", "-f", "b"], ["rm", "-R", "-f", "b"], ["rm", "-Rf", "b"],
		["rm", "--recursive", "--force", "b"], ["rm", "-R", "--force", "b"], ["rm", "b", "-rf"], ["rm", "--rec", "--f", "b"],
		["rm", "-vrf", "b"],
	] {
		d := t.run([argv])
		d.action == "deny"
		"forbidden.rm_recursive_force" in t.rules(d)
	}
}

test_rm_after_double_dash_is_a_file if {
	t.run([["rm", "--", "-rf"]]).action == "allow"
}

test_rm_recursive_asks if {
	d := t.run([["rm", "-r", "build"]])
	d.action == "ask"
	t.rules(d) == {"destructive.rm_recursive"}
}

test_rm_no_preserve_root if {
	"forbidden.rm_recursive_force" in t.rules(t.run([["rm", "--no-preserve-root", "x"]]))
}

test_rm_single_files if {
	t.run([["rm", "file.txt"]]).action == "allow"
	t.run([["rm", "-f", "build/out.o"]]).action == "allow"
}

test_chmod_modes if {
	"forbidden.chmod_mode" in t.rules(t.run([["chmod", "777", "f"]]))
	"forbidden.chmod_mode" in t.rules(t.run([["chmod", "-R", "o+w", "d"]]))
	"forbidden.chmod_mode" in t.rules(t.run([["chmod", "u+s", "f"]]))
	"forbidden.chmod_mode" in t.rules(t.run([["chmod", "--reference=/etc/shadow", "f"]]))
	t.run([["chmod", "+x", "run.sh"]]).action == "allow"
	t.run([["chmod", "--reference=other.txt", "f"]]).action == "allow"
}

test_umask if {
	"forbidden.chmod_mode" in t.rules(t.run([["umask", "000"]]))
	t.run([["umask", "022"]]).action == "allow"
	t.run([["umask"]]).action == "allow"
}

test_cd if {
	t.run([["cd", "src"]]).action == "allow"
	every argv in [["cd"], ["cd", "-"], ["cd", "/"], ["cd", ".."], ["cd", "~"], ["cd", "$DIR"], ["pushd", "/etc"]] {
		d := t.run([argv])
		d.action == "deny"
		"path.cd_outside_workspace" in t.rules(d)
	}
}
