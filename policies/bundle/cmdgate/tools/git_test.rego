package cmdgate.tools.git_test

import data.cmdgate.testlib as t

test_config_settings_that_run_programs if {
	every setting in [
		"core.pager=sh", "core.sshCommand=sh", "core.fsmonitor=sh", "alias.x=!sh", "diff.external=sh",
		"core.hooksPath=/tmp", "credential.helper=!sh", "protocol.ext.allow=always", "core.editor=sh",
		"diff.x.textconv=sh", "pager.log=sh", "safe.directory=*", "include.path=/tmp/x",
	] {
		"escape.git_config" in t.rules(t.run([["git", "-c", setting, "log"]]))
	}
}

test_safe_settings if {
	every setting in ["color.ui=always", "core.quotePath=false", "log.date=iso", "user.name=x", "advice.detachedHead=false"] {
		t.run([["git", "-c", setting, "log"]]).action == "allow"
	}
}

test_config_env if {
	"escape.git_config" in t.rules(t.run([["git", "--config-env=core.pager=P", "log"]]))
}

test_dir_options if {
	"escape.git_dir" in t.rules(t.run([["git", "--git-dir=/tmp/x", "status"]]))
	"escape.git_dir" in t.rules(t.run([["git", "--work-tree=/", "status"]]))
	"escape.git_dir" in t.rules(t.run([["git", "-C", "/tmp/x", "status"]]))
	t.run([["git", "-C", "src", "status"]]).action == "allow"
}

test_exec_options if {
	every argv in [
		["git", "--exec-path=/tmp", "status"], ["git", "diff", "--ext-diff"], ["git", "grep", "-Ovim", "x"],
		["git", "grep", "--open-files-in-pager=vim", "x"], ["git", "log", "--upload-pack=sh"],
		["git", "ls-remote", "ext::sh -c id"], ["git", "log", "fd::3"],
	] {
		"escape.git_exec" in t.rules(t.run([argv]))
	}
	not "escape.git_exec" in t.rules(t.run([["git", "--exec-path"]]))
}

test_readonly_extras if {
	t.run([["git", "config", "--get", "user.name"]]).action == "allow"
	t.run([["git", "config", "--list"]]).action == "allow"
	t.run([["git", "stash", "list"]]).action == "allow"
	t.run([["git", "remote", "-v"]]).action == "allow"
	t.run([["git", "remote", "get-url", "origin"]]).action == "allow"
	t.run([["git", "reflog"]]).action == "allow"
	every argv in [["git", "config", "user.name", "x"], ["git", "config", "--unset", "x"], ["git", "stash"], ["git", "stash", "pop"], ["git", "remote", "add", "x", "y"], ["git", "reflog", "expire", "--all"]] {
		d := t.run([argv])
		d.action == "deny"
		"allowlist.unknown_command" in t.rules(d)
	}
}

test_branch_read_forms if {
	every argv in [["git", "branch"], ["git", "branch", "-a"], ["git", "branch", "-vv"], ["git", "branch", "--list", "feat*"], ["git", "branch", "--contains", "HEAD"], ["git", "branch", "--merged", "main"], ["git", "branch", "--color=always"], ["git", "branch", "feature-x"]] {
		t.run([argv]).action == "allow"
	}
	every argv in [["git", "branch", "-D", "main"], ["git", "branch", "--delete", "x"], ["git", "branch", "--del", "x"], ["git", "branch", "-dr", "origin/x"], ["git", "branch", "-m", "a", "b"], ["git", "branch", "--force", "main", "HEAD~3"], ["git", "branch", "--set-upstream-to=origin/x"]] {
		d := t.run([argv])
		d.action == "deny"
		"allowlist.unknown_command" in t.rules(d)
	}
}

test_readonly_extras_added_whole if {
	d := t.decide_config(t.script([["git", "stash", "pop"]]), {"allowed_commands": {"additional": ["git stash"]}})
	d.action == "allow"
}

test_outputs if {
	"write.outside_workspace" in t.rules(t.run([["git", "diff", "--output=/tmp/x"]]))
	"write.outside_workspace" in t.rules(t.run([["git", "archive", "-o", "/tmp/x.tar", "HEAD"]]))
	t.run([["git", "diff", "--output=patch.diff"]]).action == "allow"
}

test_no_index_reads_trees if {
	"secrets.read" in t.rules(t.run([["git", "grep", "--no-index", "-r", "root", "/etc"]]))
	"secrets.read" in t.rules(t.run([["git", "diff", "--no-index", "/home", "x"]]))
	t.run([["git", "diff", "--no-index", "a.txt", "b.txt"]]).action == "allow"
	t.run([["git", "grep", "--no-index", "TODO", "/usr/share/doc"]]).action == "allow"
}
