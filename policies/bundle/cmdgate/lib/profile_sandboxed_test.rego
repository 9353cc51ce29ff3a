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
