# git: -c and --config-env settings that run programs (core.pager, core.sshCommand,
# core.fsmonitor, alias.x=!cmd, diff.external, ...: only keys on the safe list pass),
# --exec-path, --git-dir/--work-tree and -C outside the workspace, ext:: and fd::
# transports, --upload-pack/--receive-pack, --ext-diff, grep -O (pager), the argument
# rules of the read-only extras (config --get/--list, stash list/show, remote -v/show,
# reflog without expire/delete), and the files git writes (--output, archive -o,
# format-patch -o).
package cmdgate.tools

import data.cmdgate.allowlist
import data.cmdgate.lib

# The common case (`git status --short`: the subcommand first, no argument rules nor
# output files for it, no word that runs a program) is ruled out first.
check(k, c) := set() if {
	k == "git"
	startswith(c.argv[1], "-") == false
	object.get(data.cmdgate.lists.git.readonly_args, c.argv[1], false) == false
	object.get({"archive": true, "format-patch": true, "bundle": true}, c.argv[1], false) == false
	regex.match(`(?m)^(--(upload-pack|receive-pack|exec|ext-diff|open-files-in-pager|no-index)|-O|-u$|.*::)`, concat("\n", c.argv)) == false
} else := git_findings(c) if k == "git"

git_findings(c) := (((git_global_findings(c, array.slice(c.argv, 0, sub_i)) | git_word_findings(c)) | git_readonly_findings(c, sub_i)) | git_output_findings(c, sub_i)) | git_no_index_findings(c) if {
	sub_i := git_subcommand_index(c.argv)
}

# git_subcommand_index is the index in argv of the subcommand (count(argv) when none).
git_subcommand_index(argv) := min({i |
	some i, w in argv
	i > 0
	not startswith(w, "-")
	not argv[i - 1] in data.cmdgate.lists.git.global_value_options
} | {count(argv)})

git_subcommand(argv) := argv[git_subcommand_index(argv)]

# git_global_findings: the options before the subcommand (globals is argv up to it).
git_global_findings(c, globals) := (({lib.finding("deny", "escape.git_config", msg, c) |
	some setting in git_config_settings(globals)
	not git_safe_setting(setting)
	msg := sprintf("git -c %s may make git run a program; only display settings are allowed", [setting])
} | {lib.finding("deny", "escape.git_config", "git --config-env sets configuration from the environment; it is not allowed", c) |
	some w in globals
	startswith(w, "--config-env")
}) | ({lib.finding("deny", "escape.git_dir", msg, c) |
	some w in globals
	o := split(w, "=")[0]
	o in {"--git-dir", "--work-tree"}
	msg := sprintf("git %s points git at a repository whose config and hooks the policy cannot check", [o])
} | {lib.finding("deny", "escape.git_dir", msg, c) |
	some i, w in globals
	w == "-C"
	dir := c.argv[i + 1]
	not lib.target(c, dir).inside_workspace
	msg := sprintf("git -C %s runs git in a repository outside the workspace, whose config and hooks may run programs", [dir])
})) | {lib.finding("deny", "escape.git_exec", msg, c) |
	some w in globals
	startswith(w, "--exec-path=")
	msg := sprintf("git %s runs git commands from another directory", [w])
} if {
	count(globals) > 1
} else := set()

# git_config_settings are the values of -c (separate or attached) among the globals.
git_config_settings(globals) := {v |
	some i, w in globals
	w == "-c"
	v := globals[i + 1]
} | {substring(w, 2, -1) |
	some i, w in globals
	i > 0
	startswith(w, "-c")
	w != "-c"
	not startswith(w, "--")
}

git_safe_setting(setting) if {
	key := lower(split(setting, "=")[0])
	key in data.cmdgate.lists.git.safe_config_keys
}

git_safe_setting(setting) if {
	key := lower(split(setting, "=")[0])
	some p in data.cmdgate.lists.git.safe_config_prefixes
	startswith(key, p)
}

# git_word_findings: options anywhere that run programs, and ext::/fd:: transports
# (a regular expression over the joined words first: most git commands have none).
git_word_findings(c) := set() if {
	not regex.match(`(?m)^(--(upload-pack|receive-pack|exec|ext-diff|open-files-in-pager)|-O|-u$|.*::)`, concat("\n", c.argv))
} else := (({lib.finding("deny", "escape.git_exec", msg, c) |
	some i, w in c.argv
	i > 0
	startswith(w, "--")
	o := split(w, "=")[0]
	o in {"--upload-pack", "--receive-pack", "--exec", "--ext-diff", "--open-files-in-pager"}
	msg := sprintf("git %s runs a program", [o])
} | {lib.finding("deny", "escape.git_exec", msg, c) |
	some i, w in c.argv
	i > 0
	contains(w, "::")
	regex.match(`^(ext|fd)::`, w)
	msg := sprintf("git transport %s runs a command", [w])
}) | {lib.finding("deny", "escape.git_exec", "git grep -O opens the matches in a pager program", c) |
	git_subcommand(c.argv) == "grep"
	some i, w in c.argv
	i > git_subcommand_index(c.argv)
	startswith(w, "-O")
}) | {lib.finding("deny", "escape.git_exec", "git -u names the upload-pack program to run", c) |
	"-u" in c.argv
	git_subcommand(c.argv) in {"clone", "fetch", "pull", "ls-remote", "archive"}
}

# git_readonly_findings: git branch and the read-only extras of the default list (git
# config, stash, remote, reflog) only in their read forms, unless the configuration adds the entry.
git_readonly_findings(c, sub_i) := {lib.finding(lib.unknown_effect, "allowlist.unknown_command", msg, c) |
	sub := c.argv[sub_i]
	rules := data.cmdgate.lists.git.readonly_args[sub]
	not concat(" ", ["git", sub]) in allowlist.cfg.additional
	not local_write_allowed(sub)
	words := array.slice(c.argv, sub_i + 1, count(c.argv))
	not git_readonly_ok(words, rules)
	msg := sprintf("git %s %s is not on the allowlist: only its read-only forms are", [sub, concat(" ", words)])
}

# local_write_allowed: under the sandboxed profile the local forms of git branch and git
# stash (create, delete, rename a branch; push, pop, drop a stash) are allowed; git
# config and git remote stay read-only under every profile (a config key or a remote
# URL can run programs on the developer's machine later: core.hooksPath, core.pager,
# core.fsmonitor, ext:: URLs), and so does reflog.
local_write_allowed(sub) if {
	lib.sandboxed
	sub in {"branch", "stash"}
}

git_readonly_ok(words, rules) if {
	not git_denied_word(words, rules)
	git_required_word(words, rules)
}

git_denied_word(words, rules) if {
	some w in words
	w in object.get(rules, "deny_words", [])
}

# git accepts unambiguous abbreviations of long options (--del for --delete) ...
git_denied_word(words, rules) if {
	some w in words
	startswith(w, "--")
	name := split(w, "=")[0]
	count(name) > 3
	some d in object.get(rules, "deny_words", [])
	startswith(d, name)
}

# ... and clusters of short options (-df).
git_denied_word(words, rules) if {
	some w in words
	regex.match(`^-[A-Za-z]{2,}$`, w)
	some d in object.get(rules, "deny_words", [])
	regex.match(`^-[A-Za-z]$`, d)
	contains(w, substring(d, 1, 1))
}

git_denied_word(words, rules) if {
	firsts := object.get(rules, "first_word", [])
	count(firsts) > 0
	pos := [w | some w in words; not startswith(w, "-")]
	count(pos) > 0
	not pos[0] in firsts
}

git_required_word(words, rules) if {
	anys := object.get(rules, "any_word", [])
	count(anys) == 0
	firsts := object.get(rules, "first_word", [])
	count(firsts) == 0
}

git_required_word(words, rules) if {
	some w in words
	split(w, "=")[0] in object.get(rules, "any_word", [])
}

git_required_word(words, rules) if {
	firsts := object.get(rules, "first_word", [])
	count(firsts) > 0
	pos := [w | some w in words; not startswith(w, "-")]
	count(pos) > 0
	pos[0] in firsts
}

# key_only: exactly one word that is not an option (git config user.email reads it;
# a second word would set it). An option's value counts as a word, so a --file or
# --blob that names where to read makes the form unknown and denied.
git_required_word(words, rules) if {
	object.get(rules, "key_only", false)
	count([w | some w in words; not startswith(w, "-")]) == 1
}

git_required_word(words, rules) if {
	object.get(rules, "allow_none", false)
	count([w | some w in words; not startswith(w, "-")]) == 0
}

# git_no_index_findings: git grep/diff --no-index read whole trees outside the
# repository (secrets.read when they hold secret locations).
git_no_index_findings(c) := recursive_secret_read(c, [o | some o in c.operands]) if {
	"--no-index" in c.argv
} else := set()

# git_output_findings: files git writes outside the workspace.
git_output_findings(c, sub_i) := {lib.finding("deny", "write.outside_workspace", msg, c) |
	c.argv[sub_i] in {"archive", "format-patch", "bundle"}
	some v in lib.option_values(c.argv, {"short": ["o"], "long": ["--output", "--output-directory"]})
	t := lib.target(c, v)
	lib.outside_write(t)
	msg := sprintf("git %s writes %s, outside the workspace", [git_subcommand(c.argv), v])
}
