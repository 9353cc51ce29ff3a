package cmdgate.tools.utilities_test

import data.cmdgate.testlib as t

test_utilities_are_allowed if {
	every argv in [
		["cut", "-d:", "-f1", "data.csv"], ["tr", "a-z", "A-Z"], ["basename", "src/x.go"],
		["dirname", "/workspace/proj/src/x.go"], ["realpath", "."], ["readlink", "-f", "link"],
		["sleep", "1"], ["seq", "1", "10"], ["uname", "-a"], ["whoami"], ["nproc"],
		["du", "-sh", "."], ["df", "-h"], ["sha256sum", "go.sum"], ["md5sum", "a"],
		["nl", "f"], ["tac", "f"], ["rev", "f"], ["paste", "a", "b"], ["comm", "-12", "a", "b"],
		["cmp", "a", "b"], ["column", "-t", "f"], ["fold", "-w", "80", "f"], ["fmt", "f"],
		["strings", "bin/app"], ["od", "-c", "f"], ["base64", "-d", "f.b64"],
		["expand", "f"], ["unexpand", "f"], ["cksum", "f"], ["sha1sum", "f"], ["sha512sum", "f"],
	] {
		t.run([argv]).action == "allow"
	}
}

test_date if {
	every argv in [
		["date"], ["date", "+%Y-%m-%d"], ["date", "-u", "+%s"], ["date", "-d", "2 days ago"],
		["date", "--date", "yesterday", "+%F"], ["date", "-ud", "@0"], ["date", "-r", "go.mod"],
		["date", "--iso-8601=seconds"], ["date", "-Iseconds"], ["date", "-R"],
	] {
		t.run([argv]).action == "allow"
	}
	every argv in [
		["date", "-s", "2020-01-01"], ["date", "--set=2020-01-01"], ["date", "--set", "x"],
		["date", "--se", "x"], ["date", "-us", "x"], ["date", "010112002024"], ["date", "-u", "0101120024.30"],
	] {
		d := t.run([argv])
		d.action == "deny"
		"forbidden.set_clock" in t.rules(d)
	}
}

test_rg if {
	t.run([["rg", "-n", "TODO", "src/"]]).action == "allow"
	t.run([["rg", "--pre-glob", "*.gz", "x"]]).action == "allow"
	t.run([["rg", "-z", "pattern"]]).action == "allow"
	t.run([["rg", "--no-pre", "x"]]).action == "allow"
	t.run([["rg", "--", "--pre", "file"]]).action == "allow"
	every argv in [["rg", "--pre", "sh", "x"], ["rg", "--pre=./conv", "x"], ["rg", "x", "--hostname-bin=/tmp/h"]] {
		"escape.rg_preprocessor" in t.rules(t.run([argv]))
	}
}

test_rg_config_path_is_dangerous if {
	d := t.decide(t.doc([t.set(t.command(0, ["rg", "x"]), {"env": {"RIPGREP_CONFIG_PATH": "/tmp/rc"}})]))
	"env.dangerous" in t.rules(d)
}

test_sort_compress_program if {
	"escape.sort_compress_program" in t.rules(t.run([["sort", "--compress-program=sh", "big.txt"]]))
	"escape.sort_compress_program" in t.rules(t.run([["sort", "--compress", "gzip", "big.txt"]]))
	t.run([["sort", "-u", "-k2", "big.txt"]]).action == "allow"
}

test_mkdir_mode if {
	"forbidden.chmod_mode" in t.rules(t.run([["mkdir", "-m", "777", "shared"]]))
	"forbidden.chmod_mode" in t.rules(t.run([["mkdir", "--mode=a+w", "shared"]]))
	"forbidden.chmod_mode" in t.rules(t.run([["mkdir", "-pm1777", "tmp"]]))
	t.run([["mkdir", "-m", "755", "-p", "bin"]]).action == "allow"
}
