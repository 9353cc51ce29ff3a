package cmdgate.allowlist_test

import data.cmdgate.allowlist
import data.cmdgate.testlib as t

cfg(use_default, additional, exclude, custom) := {
	"allowed_commands": {"use_default": use_default, "additional": additional, "exclude": exclude, "custom_list": custom},
	"unknown_command": "deny",
	"dynamic_command": "deny",
}

test_default_categories if {
	eff := allowlist.computed
	eff.names.npm == "build"
	eff.names.pytest == "test"
	eff.names.eslint == "lint"
	eff.names.grep == "files"
	eff.names.curl == "utilities"
	eff.names.cd == "utilities"
	eff.names.export == "builtins"
	eff.names.mvn == "build"
	eff.names.maven == "build"
	not eff.names.git
	eff.subcommands.git.entries.status == "vcs"
	eff.subcommands.go.entries.test == "test"
}

test_categories_for_the_prompt if {
	titles := [c.title | some c in allowlist.computed.categories]
	titles == ["Build/Package Management", "Test Execution", "Linter/Formatter", "File Operations", "Version Control", "Utilities", "Text and system utilities", "Wrappers (the wrapped command is checked on its own)", "Shell builtins"]
	some c in allowlist.computed.categories
	c.id == "vcs"
	array.slice(c.commands, 0, 6) == ["git status", "git diff", "git log", "git branch", "git show", "git blame"]
}

test_additional if {
	eff := allowlist.computed with data.cmdgate.config as cfg(true, ["custom-build-tool", "git push"], [], [])
	eff.names["custom-build-tool"] == "additional"
	eff.subcommands.git.entries.push == "additional"
	some c in eff.categories
	c.id == "additional"
	c.commands == ["custom-build-tool", "git push"]
}

test_exclude if {
	eff := allowlist.computed with data.cmdgate.config as cfg(true, [], ["curl", "wget", "git status", "echo"], [])
	not eff.names.curl
	not eff.names.wget
	not eff.names.echo
	not eff.subcommands.git.entries.status
	eff.subcommands.git.entries.diff
}

test_exclude_name_removes_its_subcommands if {
	eff := allowlist.computed with data.cmdgate.config as cfg(true, [], ["git", "go"], [])
	not eff.subcommands.git
	not eff.names.go
	not eff.subcommands.go
}

test_custom_list_replaces_defaults if {
	eff := allowlist.computed with data.cmdgate.config as cfg(false, [], [], ["npm", "python", "grep"])
	eff.names.npm == "build"
	eff.names.grep == "files"
	not eff.names.ls
	not eff.names.curl
	eff.names.cd == "utilities"
	eff.names.export == "builtins"
}

test_custom_list_unknown_names if {
	eff := allowlist.computed with data.cmdgate.config as cfg(false, [], [], ["mytool"])
	eff.names.mytool == "custom"
}

test_entries_normalized if {
	eff := allowlist.computed with data.cmdgate.config as cfg(true, ["  git   push  "], [], [])
	eff.subcommands.git.entries.push
}

test_decisions_follow_the_config if {
	d := t.decide_config(t.script([["curl", "https://example.com"]]), cfg(true, [], ["curl"], []))
	d.action == "deny"
	"allowlist.unknown_command" in t.rules(d)
	d2 := t.decide_config(t.script([["mytool", "x"]]), cfg(true, ["mytool"], [], []))
	d2.action == "allow"
	d3 := t.decide_config(t.script([["git", "push"]]), cfg(true, ["git push"], [], []))
	d3.action == "allow"
}

test_multi_word_entries_match_the_subcommand_words if {
	eff := allowlist.computed with data.cmdgate.config as cfg(true, ["npm run build"], [], [])
	allowlist.allowed_unlisted(t.command(0, ["npm", "run", "build"]), eff)
	not allowlist.allowed_unlisted(t.command(0, ["npm", "run", "deploy"]), eff)
}

test_versioned_names if {
	eff := allowlist.computed
	allowlist.allowed_unlisted(t.command(0, ["python3.12", "x.py"]), eff)
	allowlist.allowed_unlisted(t.command(0, ["pip3.11", "list"]), eff)
	not allowlist.allowed_unlisted(t.command(0, ["make.sh"]), eff)
}
