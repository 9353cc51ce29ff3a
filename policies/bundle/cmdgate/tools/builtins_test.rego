package cmdgate.tools.builtins_test

import data.cmdgate.testlib as t

test_trap if {
	"escape.trap" in t.rules(t.run([["trap", "rm x", "EXIT"]]))
	t.run([["trap", "-", "EXIT"]]).action == "allow"
	t.run([["trap", "-l"]]).action == "allow"
	"dynamic.script" in t.rules(t.run([["trap", "$X", "EXIT"]]))
}

test_trap_reparsed_by_parse if {
	inner := t.set(t.command(1, ["echo", "bye"]), {"via": ["trap"]})
	t.decide(t.doc([t.command(0, ["trap", "echo bye", "EXIT"]), inner])).action == "allow"
}

test_hash_shopt_alias_enable if {
	"escape.hash_path" in t.rules(t.run([["hash", "-p", "/tmp/x", "ls"]]))
	t.run([["hash", "-r"]]).action == "allow"
	"escape.alias" in t.rules(t.run([["shopt", "-s", "expand_aliases"]]))
	t.run([["shopt", "-s", "globstar"]]).action == "allow"
	"escape.alias" in t.rules(t.run([["alias", "ls=sudo ls"]]))
	"escape.enable" in t.rules(t.run([["enable", "-f", "x.so", "y"]]))
}

test_env if {
	"escape.env_split" in t.rules(t.run([["env", "-S", "sh -c id"]]))
	"escape.env_split" in t.rules(t.run([["env", "--split-string=x"]]))
	"escape.env_split" in t.rules(t.run([["env", "-iS", "x"]]))
	t.run([["env", "ls", "-S"]]).action == "allow"
	"path.cd_outside_workspace" in t.rules(t.run([["env", "-C", "/etc", "ls"]]))
	"env.dangerous" in t.rules(t.run([["env", "LD_PRELOAD=x", "ls"]]))
	t.run([["env", "FOO=1", "ls"]]).action == "allow"
	t.run([["env"]]).action == "allow"
}

test_mapfile_callback if {
	"escape.mapfile_callback" in t.rules(t.run([["mapfile", "-C", "rm -rf x", "-c", "1", "a"]]))
	"escape.mapfile_callback" in t.rules(t.run([["readarray", "-tC", "id", "a"]]))
	t.run([["mapfile", "-t", "lines"]]).action == "allow"
	t.run([["readarray", "-t", "-d", ",", "a"]]).action == "allow"
}
