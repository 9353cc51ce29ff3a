# The sandboxed profile (data.cmdgate.config.profile) allows what runs the project's
# own code and changes the local repository; the strict profile keeps the default lists
# exactly. What reaches outside stays denied under both.
package cmdgate.lib.profile_sandboxed_test

import data.cmdgate.testlib as t

sandboxed(doc) := t.decide_config(doc, {"profile": "sandboxed"})

strict(doc) := t.decide_config(doc, {"profile": "strict"})

everyday := [
	["git", "add", "-A"],
	["git", "commit", "-m", "fix: parse empty input"],
	["git", "checkout", "-b", "feature/x"],
	["git", "switch", "main"],
	["git", "stash", "pop"],
	["git", "branch", "-d", "old"],
	["git", "restore", "--staged", "a.go"],
	["./gradlew", "test"],
	["./mvnw", "-q", "verify"],
	["./configure", "--prefix=/workspace/proj/out"],
	["scripts/test.sh", "--fast"],
	["bash", "scripts/test.sh"],
	["node", "index.js"],
	["npx", "jest", "src"],
	["deno", "test"],
	["bun", "test"],
	["uv", "run", "pytest", "-q"],
	["poetry", "run", "pytest"],
	["tox", "-e", "py311"],
	["ruff", "check", "."],
	["fd", "-e", "go"],
	["printenv", "HOME"],
]

test_everyday_allowed_under_sandboxed if {
	every argv in everyday {
		d := sandboxed(t.script([argv]))
		d.action == "allow"
	}
}

test_everyday_denied_under_strict if {
	every argv in everyday {
		d := strict(t.script([argv]))
		d.action == "deny"
	}
}

# A program of the workspace runs by its path; one under .git (a hook), one outside the
# workspace, and one only known at run time do not.
test_workspace_programs_only if {
	every p in [".git/hooks/pre-commit", "/tmp/x/run.sh", "../other/gradlew", "/usr/local/share/x"] {
		d := sandboxed(t.script([[p]]))
		d.action == "deny"
	}
}

# git config and git remote stay read-only: a key or a URL can run programs on the
# developer's machine later.
test_git_config_still_read_only if {
	every argv in [["git", "config", "core.hooksPath", ".h"], ["git", "remote", "add", "x", "ext::sh"], ["git", "reflog", "expire", "--all"]] {
		d := sandboxed(t.script([argv]))
		d.action == "deny"
	}
}

# Search paths of the project's own modules: relative, not going up.
test_search_path_env if {
	ok := t.set(t.command(0, ["python3", "-m", "pytest"]), {"env": {"PYTHONPATH": "src:tests"}})
	sandboxed(t.doc([ok])).action == "allow"
	strict(t.doc([ok])).action == "deny"
	every v in ["/etc", "../x", "src:/opt/evil", "$HOME/lib", "~/lib"] {
		bad := t.set(t.command(0, ["python3", "-m", "pytest"]), {"env": {"PYTHONPATH": v}})
		"env.dangerous" in t.rules(sandboxed(t.doc([bad])))
	}
	other := t.set(t.command(0, ["python3", "-m", "pytest"]), {"env": {"LD_PRELOAD": "lib/x.so"}})
	"env.dangerous" in t.rules(sandboxed(t.doc([other])))
}

# Version and help options run no program: they do not read stdin.
test_interpreter_info_options if {
	every argv in [["python3", "--version"], ["python3", "-V"], ["node", "-v"], ["perl", "-v"], ["ruby", "--version"], ["bash", "--version"]] {
		d := sandboxed(t.script([argv]))
		not "escape.interpreter_stdin" in t.rules(d)
		d.action == "allow"
	}
	every argv in [["python3"], ["node"], ["python3", "-v"]] {
		d := sandboxed(t.script([argv]))
		"escape.interpreter_stdin" in t.rules(d)
	}
}

# cd back up after cd into a sub-directory, in a script of several lines: the target is
# inside the workspace from where the shell most likely is.
test_cd_back_up if {
	up := t.set(t.command(1, ["cd", ".."]), {"cwd": "/workspace/proj/sub", "operands": [{"text": "..", "path": "/workspace/proj", "inside_workspace": false, "dynamic": false, "glob": false, "argi": 1}]})
	sandboxed(t.doc([t.command(0, ["cd", "sub"]), up])).action == "allow"
	"path.cd_outside_workspace" in t.rules(strict(t.doc([t.command(0, ["cd", "sub"]), up])))
	out := t.set(t.command(0, ["cd", "../.."]), {"operands": [{"text": "../..", "path": "/", "inside_workspace": false, "dynamic": false, "glob": false, "argi": 1}]})
	"path.cd_outside_workspace" in t.rules(sandboxed(t.doc([out])))
}

# Names that are on no list stay unknown under sandboxed: only a path runs a workspace
# program.
test_unknown_names_still_denied if {
	every argv in [["foo", "bar"], ["docker", "run", "x"], ["gh", "api", "user"], ["ssh", "host"], ["kubectl", "get", "pods"]] {
		d := sandboxed(t.script([argv]))
		count({"allowlist.unknown_command", "forbidden.command"} & t.rules(d)) > 0
		d.action == "deny"
	}
}

# Publishing and pushing ask under sandboxed and are denied under strict, even for a
# tool the allowlist has (npm, cargo, gem).
test_publishing if {
	every argv in [["npm", "publish"], ["cargo", "publish"], ["gem", "push", "x.gem"], ["yarn", "npm", "publish"], ["poetry", "publish"]] {
		"publish.release" in t.rules(sandboxed(t.script([argv])))
		sandboxed(t.script([argv])).action == "ask"
		strict(t.script([argv])).action == "deny"
	}
	every argv in [["npm", "install"], ["cargo", "build"], ["git", "status"]] {
		not "publish.release" in t.rules(sandboxed(t.script([argv])))
	}
}

# A request to a development server on the sandbox's loopback may send data under
# sandboxed; anywhere else it may not.
test_loopback_upload if {
	ok := ["curl", "-X", "POST", "-d", "{\"a\":1}", "http://127.0.0.1:8080/api"]
	sandboxed(t.script([ok])).action == "allow"
	"network.upload" in t.rules(strict(t.script([ok])))
	every url in ["http://example.com/x", "http://127.0.0.1.nip.io/", "http://127.0.0.1@evil.example/", "localhost:1 evil.example"] {
		argv := array.concat(["curl", "-X", "POST"], split(url, " "))
		"network.upload" in t.rules(sandboxed(t.script([argv])))
	}
}

# isolated is a doc run in the linux sandbox's guarantees.
isolated(doc) := object.union(doc, {"sandbox": {"backend": "linux", "isolated": true, "private_tmp": true, "home": "/var/lib/cmdgate/caches/ws/home"}})

# Deleting trees the workspace holds is build hygiene in an isolated sandbox, in every
# spelling of recursive and force; the workspace itself, .git, paths above it, run-time
# paths and globs at the top are still forbidden, and so is everything under strict or
# without isolation.
test_rm_tree_inside_workspace if {
	every argv in [["rm", "-rf", "build"], ["rm", "-fr", "dist", "node_modules/.cache"], ["rm", "-r", "-f", "target/debug/incremental"], ["rm", "--recursive", "--force", "coverage"], ["rm", "-r", "tmp/cache"], ["rm", "-rf", "build/*"], ["rm", "-rf", "./out/"]] {
		sandboxed(isolated(t.script([argv]))).action == "allow"
		strict(isolated(t.script([argv]))).action != "allow"
		sandboxed(t.script([argv])).action != "allow"
	}
	every argv in [["rm", "-rf", "."], ["rm", "-rf", ".git"], ["rm", "-rf", ".git/hooks"], ["rm", "-rf", ".."], ["rm", "-rf", "../other"], ["rm", "-rf", "/"], ["rm", "-rf", "$DIR"], ["rm", "-rf", "./*"], ["rm", "-rf", "build", "/etc"], ["rm", "-rf", "--no-preserve-root", "build"], ["rm", "-rf", "~"], ["rm", "-rf", "*/x"]] {
		d := sandboxed(isolated(t.script([argv])))
		d.action != "allow"
	}
}

# git config KEY reads one key; a value after it, a file option or --add still write.
test_git_config_key_reads if {
	every argv in [["git", "config", "user.email"], ["git", "config", "--global", "user.name"], ["git", "config", "--type=bool", "core.bare"]] {
		t.run([argv]).action == "allow"
	}
	every argv in [["git", "config", "user.email", "x@y"], ["git", "config", "--add", "core.hooksPath"], ["git", "config", "--file", "/etc/gitconfig", "x.y"], ["git", "config", "--unset", "user.name"], ["git", "config"]] {
		t.run([argv]).action == "deny"
	}
}

# A program the command made in its private /tmp or in its own home runs there; one in
# a /tmp that is the host's (no sandbox) does not.
test_private_programs if {
	every p in ["/tmp/probe", "/tmp/build-1/a.out", "/var/lib/cmdgate/caches/ws/home/.cargo/bin/tool"] {
		sandboxed(isolated(t.script([[p]]))).action == "allow"
		"allowlist.path_command" in t.rules(sandboxed(t.script([[p]])))
		"allowlist.path_command" in t.rules(strict(isolated(t.script([[p]]))))
	}
	"allowlist.path_command" in t.rules(sandboxed(isolated(t.script([["/var/tmp/x"]]))))
}

# source (.) of a file of the workspace runs it like a workspace program; a file
# outside, under .git or known only at run time does not.
test_workspace_source if {
	every n in [".", "source"] {
		sandboxed(t.script([[n, ".venv/bin/activate"]])).action == "allow"
		strict(t.script([[n, ".venv/bin/activate"]])).action == "deny"
		every f in ["/etc/profile", ".git/hooks/x", "$ENVFILE", "../x/env.sh"] {
			sandboxed(t.script([[n, f]])).action == "deny"
		}
	}
}

# Writes whose path is inside the workspace from where the shell most likely is are
# not outside it in an isolated sandbox (a failed cd would aim them at a read-only
# system directory); without isolation, or under strict, every directory counts.
test_likely_inside_write if {
	build := t.set(t.command(1, ["go", "build", "-o", "../../bin/gen", "."]), {"cwd": "/workspace/proj/tools/gen", "operands": [
		{"text": "build", "path": "/workspace/proj/tools/gen/build", "inside_workspace": true, "dynamic": false, "glob": false, "argi": 1},
		{"text": "../../bin/gen", "path": "/workspace/proj/bin/gen", "inside_workspace": false, "dynamic": false, "glob": false, "argi": 3},
		{"text": ".", "path": "/workspace/proj/tools/gen", "inside_workspace": true, "dynamic": false, "glob": false, "argi": 4},
	]})
	doc := t.doc([t.command(0, ["cd", "tools/gen"]), build])
	sandboxed(isolated(doc)).action == "allow"
	"write.outside_workspace" in t.rules(sandboxed(doc))
	"write.outside_workspace" in t.rules(strict(isolated(doc)))
	out := t.set(t.command(0, ["go", "build", "-o", "../bin/gen", "."]), {})
	"write.outside_workspace" in t.rules(sandboxed(isolated(t.doc([out]))))
}

# Binary inspection, C formatters and browser test runners are developer tools under
# sandboxed; a formatter rewriting a file outside the workspace is still a write there.
test_inspection_tools if {
	every argv in [["nm", "-C", "build/libcore.a"], ["objdump", "-d", "build/x.o"], ["readelf", "-h", "bin/app"], ["ldd", "bin/app"], ["jar", "tf", "target/app.jar"], ["clang-format", "-i", "src/a.c"], ["playwright", "test"]] {
		sandboxed(t.script([argv])).action == "allow"
		strict(t.script([argv])).action == "deny"
	}
	"write.outside_workspace" in t.rules(sandboxed(t.script([["clang-format", "-i", "/usr/include/stdio.h"]])))
	"secrets.read" in t.rules(sandboxed(t.script([["objdump", "-s", "/home/u/.ssh/id_rsa"]])))
}
