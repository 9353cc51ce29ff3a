package cmdgate.tools.options_test

import data.cmdgate.testlib as t

# A value every condition of exec_options counts (`when` patterns match it, `unless`
# ones do not).
exec_value := "ProxyCommand=sh -c id"

# Every option of data.cmdgate.lists.exec_options, as parse names it, meets its rule.
test_every_exec_option if {
	every k, spec in data.cmdgate.lists.exec_options {
		every name, _ in spec.options {
			spec.rule in t.rules(t.decide(t.doc([t.with_options(0, [k, "x"], [t.option(name, exec_value, 1)])])))
		}
	}
}

test_every_subcommand_option if {
	every k, spec in data.cmdgate.lists.exec_options {
		every sub, opts in object.get(spec, "subcommands", {}) {
			every name, _ in opts {
				spec.rule in t.rules(t.decide(t.doc([t.with_options(0, [k, sub, "x"], [t.option(name, exec_value, 2)])])))
			}
		}
	}
}

# Written any way (the argv here is one of many spellings; parse gives them all the
# same entry).
test_spellings if {
	every c in [
		t.with_options(0, ["tar", "-Igzip-prog", "-cf", "a.tgz", "."], [t.option("--use-compress-program", "gzip-prog", 1)]),
		t.with_options(0, ["/usr/bin/tar", "--use-compress-prog=sh", "-cf", "x", "."], [t.option("--use-compress-program", "sh", 1)]),
		t.with_options(0, ["zip", "-qTTsh", "-T", "z.zip", "f"], [t.option("--unzip-command", "sh", 1)]),
		t.with_options(0, ["sort", "--com=sh", "f"], [t.option("--compress-program", "sh", 1)]),
		t.with_options(0, ["make", "--ev=$(shell id)"], [t.option("--eval", "$(shell id)", 1)]),
		t.with_options(0, ["wget", "--exec=use_askpass=sh", "http://x.example/"], [t.option("--execute", "use_askpass=sh", 1)]),
		t.with_options(0, ["git", "clone", "--upload-pa=sh", "r"], [t.option("--upload-pack", "sh", 2)]),
		t.with_options(0, ["git", "rebase", "-xsh", "main"], [t.option("--exec", "sh", 2)]),
		t.with_options(0, ["git", "grep", "--open=sh", "x"], [t.option("--open-files-in-pager", "sh", 2)]),
	] {
		t.decide(t.doc([c])).action == "deny"
	}
}

# Values that run nothing, options of another subcommand, and ones before the
# subcommand of the tool's own.
test_conditions if {
	not "escape.ssh_command" in t.rules(t.decide(t.doc([t.with_options(0, ["ssh", "-oUser=x", "h"], [t.option("-o", "User=x", 1)])])))
	not "escape.wget_execute" in t.rules(t.decide(t.doc([t.with_options(0, ["wget", "-e", "robots=off", "http://x.example/"], [t.option("--execute", "robots=off", 1)])])))
	not "escape.git_exec" in t.rules(t.decide(t.doc([t.with_options(0, ["git", "--exec-path"], [t.option("--exec-path", "", 1)])])))
	not "escape.git_exec" in t.rules(t.decide(t.doc([t.with_options(0, ["git", "log", "--extcmd", "x"], [t.option("--extcmd", "x", 2)])])))
	not "escape.git_exec" in t.rules(t.decide(t.doc([t.with_options(0, ["git", "-u", "x", "status"], [t.option("--upload-pack", "x", 1)])])))
	t.decide(t.doc([t.with_options(0, ["tar", "-czf", "a.tgz", "src"], [t.option("--create", "", 1), t.option("--gzip", "", 1), t.option("--file", "a.tgz", 1)])])).action == "allow"
}

test_dynamic_option if {
	c := t.with_options(0, ["tar", "-$X", "x"], [{"name": "-$X", "value": "", "argi": 1, "dynamic": true}])
	"dynamic.exec_option" in t.rules(t.decide(t.doc([c])))
	d := t.with_options(0, ["ssh", "-o", "$O", "h"], [{"name": "-o", "value": "$O", "argi": 1, "dynamic": true}])
	"escape.ssh_command" in t.rules(t.decide(t.doc([d])))
}

# git: -c before the subcommand, and git clone -c/--config (set before clone fetches).
test_git_settings if {
	"escape.git_config" in t.rules(t.decide(t.doc([t.with_options(0, ["git", "-ccore.pager=sh", "log"], [t.option("-c", "core.pager=sh", 1)])])))
	"escape.git_config" in t.rules(t.decide(t.doc([t.with_options(0, ["git", "clone", "--conf=core.sshCommand=sh", "r"], [t.option("--config", "core.sshCommand=sh", 2)])])))
	not "escape.git_config" in t.rules(t.decide(t.doc([t.with_options(0, ["git", "clone", "-c", "color.ui=never", "r"], [t.option("--config", "color.ui=never", 2)])])))
}

# sed's scripts are also the values of --expression in every spelling.
test_sed_expression if {
	"escape.sed_exec" in t.rules(t.decide(t.doc([t.with_options(0, ["sed", "--expr=1e", "f"], [t.option("--expression", "1e", 1)])])))
}
