package cmdgate.lib.profiles_test

import data.cmdgate.lib
import data.cmdgate.testlib as t

test_profile_fields if {
	p := lib.computed_profiles.python3
	p.key == "python"
	p.allowed == true
	p.interpreter == "python"
	p.runs_files == true
	p.special == "programs"
	q := lib.computed_profiles.cp
	q.writer.last_operand == true
	q.writes_operands == true
	q.special == "options"
	lib.computed_profiles.sudo.allowed == false
	lib.computed_profiles.sudo.forbidden != ""
	lib.computed_profiles.bash.shell == true
	lib.computed_profiles.curl.download == true
	lib.computed_profiles.ls.special == ""
}

test_every_profile_has_every_key if {
	keys := object.keys(lib.unknown_profile("x"))
	every _, p in lib.computed_profiles {
		object.keys(p) == keys
	}
}

test_index_subsets if {
	idx := lib.computed_index
	idx.unlisted.git == true
	idx.unlisted.sudo == true
	not idx.unlisted.ls
	idx.special.go.key == "go"
	idx.checked.git == "git"
	idx.checked.python3 == "python"
	idx.network_other.curl.key == "curl"
	idx.network_words.npm.words.install == true
	idx.network_words.npm.values["--prefix"]
	idx.network_other.python3.key == "python"
	idx.network.npm.words.install == true
	idx.network.npm.values["--prefix"]
	idx.network.curl.profile.key == "curl"
	not idx.network.ls
	idx.allowed.ls == true
	not idx.allowed.git
	idx.allowed_subcommands.git.status == true
	not idx.allowed_subcommands.git.push
	not idx.allowed_subcommands.sudo
}

test_allowed_subcommands_never_forbidden if {
	idx := lib.computed_index with data.cmdgate.config as {"allowed_commands": {"use_default": true, "additional": ["sudo ls", "nc-x y", "git push"], "exclude": [], "custom_list": []}}
		with data.cmdgate.effective as {}
	not idx.allowed_subcommands.sudo
	not idx.allowed_subcommands["nc-x"]
	idx.allowed_subcommands.git.push == true
}

test_checked_keys_from_the_engine if {
	idx := lib.computed_index with data.cmdgate.checked_keys as ["git"]
	idx.checked.git == "git"
	not idx.checked.find
}

test_profile_of_odd_commands if {
	ps := lib.computed_profiles
	lib.profile_of(ps, t.command(0, ["/usr/bin/git", "status"])).key == "git"
	lib.profile_of(ps, t.command(0, ["python3.12", "-c", "x"])).key == "python"
	lib.profile_of(ps, t.command(0, ["./git", "status"])).allowed == false
	lib.profile_of(ps, t.command(0, ["./git", "status"])).key == "git"
	lib.profile_of(ps, t.command(0, ["npx", "x"])).allowed == false
}
