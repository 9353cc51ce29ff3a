package cmdgate.checks.env_test

import data.cmdgate.testlib as t

test_dangerous_prefix_assignment if {
	every name in ["LD_PRELOAD", "PATH", "BASH_ENV", "GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "NODE_OPTIONS", "PYTHONPATH", "ld_preload", "npm_config_script_shell", "CGO_LDFLAGS"] {
		d := t.decide(t.doc([t.set(t.command(0, ["ls"]), {"env": {name: "x"}})]))
		d.action == "deny"
		"env.dangerous" in t.rules(d)
	}
}

test_code_locations if {
	every env in [{"GOWORK": "/tmp/go.work"}, {"GOPATH": "/tmp/gopath"}, {"GOMODCACHE": "../cache"}, {"GRADLE_USER_HOME": "/tmp/g"}, {"PYTEST_ADDOPTS": "--rootdir=/"}, {"GEM_PATH": "/tmp/gems"}, {"GOWORK": "$W"}] {
		"env.dangerous" in t.rules(t.decide(t.doc([t.set(t.command(0, ["go", "test", "./..."]), {"env": env})])))
	}
	every env in [{"GOWORK": "off"}, {"GOWORK": "go.work"}, {"GOPATH": ".gopath"}] {
		t.decide(t.doc([t.set(t.command(0, ["go", "test", "./..."]), {"env": env})])).action == "allow"
	}
}

test_harmless_prefix_assignment if {
	every name in ["FOO", "GOOS", "CGO_ENABLED", "DEBUG", "CI"] {
		d := t.decide(t.doc([t.set(t.command(0, ["go", "build", "./..."]), {"env": {name: "1"}})]))
		d.action == "allow"
	}
}

test_standalone_assignment if {
	base := t.script([["ls"]])
	d := t.decide(object.union(base, {"assignments": [{"name": "PATH", "value": "./bin", "dynamic": false, "append": false, "via": [], "context": t.context, "pos": {"line": 1, "col": 1}}]}))
	d.action == "deny"
	some r in d.reasons
	r.rule == "env.dangerous"
	r.command == -1
}

test_arithmetic_substitution_in_assignment if {
	base := t.script([["test", "$v", "-eq", "1"]])
	d := t.decide(object.union(base, {"assignments": [{"name": "v", "value": "a[$(id)]", "dynamic": false, "append": false, "via": [], "context": t.context, "pos": {"line": 1, "col": 1}}]}))
	"escape.arithmetic_substitution" in t.rules(d)
}

test_dynamic_assignment_value_is_not_arithmetic_text if {
	base := t.script([["ls"]])
	d := t.decide(object.union(base, {"assignments": [{"name": "v", "value": "$(pwd)", "dynamic": true, "append": false, "via": [], "context": t.context, "pos": {"line": 1, "col": 1}}]}))
	d.action == "allow"
}

test_dev_tcp_in_values if {
	base := t.doc([t.command(0, ["cat"])])
	d := t.decide(object.union(base, {"assignments": [{"name": "f", "value": "/dev/tcp/10.0.0.1/80", "dynamic": false, "append": false, "via": [], "context": t.context, "pos": {"line": 1, "col": 1}}]}))
	"network.dev_tcp" in t.rules(d)
	d2 := t.decide(t.doc([t.set(t.command(0, ["cat"]), {"env": {"F": "/dev/udp/1.2.3.4/53"}})]))
	"network.dev_tcp" in t.rules(d2)
}
