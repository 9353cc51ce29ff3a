package cmdgate.lib_test

import data.cmdgate.lib
import data.cmdgate.testlib as t

test_clean if {
	lib.clean("/a/b/../c") == "/a/c"
	lib.clean("/a/./b//c/") == "/a/b/c"
	lib.clean("/../..") == "/"
	lib.clean("/a/b/../../..") == "/"
	lib.clean("/workspace/proj/src/../../x") == "/workspace/x"
	lib.clean("/") == "/"
}

test_under if {
	lib.under("/w/p", "/w/p")
	lib.under("/w/p/x", "/w/p")
	not lib.under("/w/px", "/w/p")
	lib.under("/etc", "/")
}

test_inside_needs_absolute_workspace if {
	lib.inside("/workspace/proj/x") with input as t.script([["ls"]])
	not lib.inside("/x") with input as {"request": {"workspace": ""}}
}

test_tool_key_and_family if {
	lib.tool_key("python3") == "python"
	lib.tool_key("python3.12") == "python"
	lib.tool_key("gawk") == "awk"
	lib.tool_key("mkfs.ext4") == "mkfs"
	lib.tool_key("ls") == "ls"
	lib.family("nc.openbsd") == "nc"
	lib.family("iptables-save") == "iptables"
	lib.family("killall5") == "killall"
}

test_option_values_every_spelling if {
	spec := {"short": ["o"], "long": ["--output"], "abbrev": true}
	every argv in [
		["sort", "-o", "/x", "f"], ["sort", "-o/x", "f"], ["sort", "-uo", "/x", "f"], ["sort", "-uo/x", "f"],
		["sort", "--output=/x", "f"], ["sort", "--output", "/x", "f"], ["sort", "--out", "/x", "f"], ["sort", "f", "-o", "/x"],
	] {
		lib.option_values(argv, spec) == {"/x"}
	}
	lib.option_values(["sort", "--", "-o", "/x"], spec) == set()
}

test_option_values_single_dash_long if {
	spec := {"single": ["-o", "-coverprofile"]}
	lib.option_values(["go", "test", "-coverprofile=c.out"], spec) == {"c.out"}
	lib.option_values(["go", "test", "--coverprofile", "c.out"], spec) == {"c.out"}
	lib.option_values(["go", "build", "-o", "bin/x"], spec) == {"bin/x"}
	lib.option_values(["go", "test", "-run", "TestX"], spec) == set()
}

test_option_values_no_abbreviation_without_abbrev if {
	lib.option_values(["curl", "--out", "/x"], {"long": ["--output"]}) == set()
}

test_has_flag_short_long if {
	lib.has_short(["rm", "-rf", "x"], "r")
	lib.has_short(["rm", "x", "-fR"], "R")
	not lib.has_short(["rm", "--", "-rf"], "r")
	lib.has_long(["rm", "--recursive"], "--recursive", true)
	lib.has_long(["rm", "--rec"], "--recursive", true)
	not lib.has_long(["rm", "--rec"], "--recursive", false)
	lib.has_flag(["git", "--output=x"], ["--output"])
}

test_positional if {
	lib.positional(["git", "-C", "dir", "status", "--short"], ["-C"]) == ["status"]
	lib.first_positional(["go", "test", "./..."], []) == "test"
	lib.first_positional(["go", "-C", "dir", "mod", "download"], ["-C"]) == "mod"
}

test_target_of_option_value if {
	c := t.command(0, ["sort", "-o", "/etc/passwd", "x"])
	doc := t.doc([c])
	lib.target(c, "/etc/passwd").inside_workspace == false with input as doc
	lib.target(c, "out.txt").inside_workspace == true with input as doc
	lib.target(c, "out.txt").path == "/workspace/proj/out.txt" with input as doc
	lib.target(c, "../x").inside_workspace == false with input as doc
	lib.target(c, "$HOME/x").dynamic == true with input as doc
	lib.target(c, "~/x").inside_workspace == false with input as doc
}

test_outside_write_and_sinks if {
	lib.outside_write({"text": "/tmp/x", "path": "/tmp/x", "inside_workspace": false, "dynamic": false})
	not lib.outside_write({"text": "/dev/null", "path": "/dev/null", "inside_workspace": false, "dynamic": false})
	not lib.outside_write({"text": "/dev/fd/3", "path": "/dev/fd/3", "inside_workspace": false, "dynamic": false})
	lib.outside_write({"text": "$X", "path": "", "inside_workspace": false, "dynamic": true})
}

test_git_internal if {
	lib.git_internal({"path": "/w/.git/config", "inside_workspace": true})
	lib.git_internal({"path": "/w/sub/.git", "inside_workspace": true})
	not lib.git_internal({"path": "/w/.gitignore", "inside_workspace": true})
}

test_dangerous_env if {
	lib.dangerous_env("LD_PRELOAD", "x.so")
	lib.dangerous_env("dyld_insert_libraries", "x")
	lib.dangerous_env("GIT_CONFIG_KEY_0", "core.pager")
	not lib.dangerous_env("GOOS", "linux")
}

test_dangerous_env_judged_by_value if {
	not lib.dangerous_env("GOFLAGS", "-mod=mod")
	not lib.dangerous_env("GOFLAGS", "-mod=vendor -trimpath -tags=integration")
	lib.dangerous_env("GOFLAGS", "-toolexec=/tmp/x")
	lib.dangerous_env("GOFLAGS", "-mod=mod --exec /tmp/run")
	lib.dangerous_env("goflags", "-ldflags=-extld=/tmp/evil")
	lib.dangerous_env("GOFLAGS", "-overlay=/tmp/o.json")
	lib.dangerous_env("GOFLAGS", "$X")
	not lib.dangerous_env("CC", "clang")
	not lib.dangerous_env("CC", "gcc-12")
	lib.dangerous_env("CC", "/tmp/evil")
	lib.dangerous_env("CC", "./cc")
	lib.dangerous_env("CC", "sh -c id")
	not lib.dangerous_env("CXX", "g++")
	lib.dangerous_env("LD", "ld; id")
}

test_finding if {
	lib.finding("deny", "r", "m", {"index": 3}) == {"effect": "deny", "rule": "r", "message": "m", "command": 3}
	lib.request_finding("ask", "r", "m").command == -1
}

test_effects_fail_closed if {
	lib.unknown_effect == "deny" with data.cmdgate.config.unknown_command as "whatever"
	lib.unknown_effect == "ask" with data.cmdgate.config.unknown_command as "ask"
	lib.dynamic_effect == "deny" with data.cmdgate.config.dynamic_command as ""
}
