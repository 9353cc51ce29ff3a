package cmdgate.lib

import data.cmdgate.allowlist
import data.cmdgate.tools

# Profiles: what the rules need to know about a command name, computed from the lists
# and the configuration once (see index below). Every profile has every key, so the
# rules test them with == and != (cheaper than testing for a missing key):
#
#	key             the tool key (aliases applied): the name check() knows the tool by
#	allowed         the name alone is on the effective allowlist (never for a
#	                forbidden name: the forbidden list wins)
#	forbidden       the forbidden list's reason for the exact name, "" for none
#	shell           true for shells
#	interpreter     the interpreter family (python, node, ...), "" for none
#	download        true for download tools (curl, wget, ...)
#	network         true, the subcommands that need the network, or false
#	writer          the writers spec (files the tool writes), or false
#	writes_operands true when the writers spec writes some of the operands
#	in_place        the in_place spec (formatters rewriting their operands), or false
#	pattern         the pattern_tools options (first operand is a pattern), or false
#	non_path        true when the operands are not file names
#	runs_files      true when the tool runs (or makes executable) programs or files
#	special         which rules of checks/profiles.rego apply: "" (none), "options"
#	                (output options), "in_place" (in-place rewrites), "programs"
#	                (programs the policy cannot see), or several of them joined by "+"
#	                in that (sorted) order: "in_place+options", "options+programs"
#	trigger         a regular expression the command's words (joined by newlines)
#	                must match for the special rules to run ("" matches all)
#	wildcard        the glob_options spec (options a glob may inject), or false
#	code            the code_files spec (options and operands naming program files), or
#	                false
computed_profiles := {n: profile(n, eff) |
	eff := allowlist.effective
	some n in profile_names
}

profile_names := ((((({n | some n in lists.shells} | {n | some n, _ in lists.interpreter_names}) | ({n | some n in lists.download_tools} | {n | some n, _ in lists.network})) | ({n | some n, _ in lists.writers} | {n | some n, _ in lists.in_place})) | (({n | some n, _ in lists.pattern_tools} | {n | some n in lists.non_path_tools}) | ({n | some n, _ in lists.aliases} | {n | some _, n in lists.aliases}))) | ((runs_files_names | allowlist_names) | {n | some n, _ in lists.forbidden})) | (({n | some n, _ in eff_names} | {n | some n, _ in lists.glob_options}) | {n | some n, _ in lists.code_files})

eff_names := allowlist.effective.names

runs_files_names := {"source", ".", "eval", "chmod", "install", "exec"}

# allowlist_names: every name of the default lists gets a profile, so that the common
# case is one lookup.
allowlist_names := {split(e, " ")[0] | some cat in lists.categories; some e in cat.commands} | {e | some e in lists.builtins.commands}

profile(n, eff) := {
	"key": key,
	"allowed": allowed,
	"forbidden": forbidden,
	"shell": shell,
	"interpreter": interpreter,
	"download": name_in(n, key, download_set),
	"network": object.get(lists.network, key, false),
	"writer": writer,
	"writes_operands": writes_operands(writer),
	"in_place": in_place,
	"pattern": object.get(lists.pattern_tools, key, false),
	"non_path": name_in(n, key, non_path_set),
	"runs_files": runs,
	"special": special,
	"trigger": special_trigger(special, writer),
	"wildcard": object.get(lists.glob_options, key, object.get(lists.glob_options, n, false)),
	"code": object.get(lists.code_files, key, object.get(lists.code_files, n, false)),
} if {
	key := tool_key(n)
	forbidden := object.get(lists.forbidden, n, "")
	allowed := allowed_name(eff, n, forbidden)
	shell := name_in(n, key, shells_set)
	interpreter := object.get(lists.interpreter_names, n, object.get(lists.interpreter_names, key, ""))
	writer := writer_spec(object.get(lists.writers, n, object.get(lists.writers, key, false)))
	in_place := object.get(lists.in_place, key, false)
	runs := runs_files(n, key)
	special := concat("+", [k | some k, on in {"options": writer_options(writer), "in_place": in_place != false, "programs": runs}; on])
}

# special_trigger is a regular expression over the command's words joined by newlines
# that a command must match for the special rules to apply: the writer's option
# pattern for "options" alone, else "" (every command).
special_trigger("options", writer) := writer.option_pattern

special_trigger(special, _) := "" if special != "options"

allowed_name(eff, n, "") := object.get(eff.names, n, "") != ""

allowed_name(_, _, forbidden) := false if forbidden != ""

name_in(n, key, set) if set[n]

else if set[key]

else := false

shells_set := {x | some x in lists.shells}

download_set := {x | some x in lists.download_tools}

non_path_set := {x | some x in lists.non_path_tools}

runs_files(n, key) if n in runs_files_names

else if object.get(lists.interpreter_names, n, object.get(lists.interpreter_names, key, "")) != ""

else := name_in(n, key, shells_set)

writes_operands(false) := false

writes_operands(spec) := count(object.keys(object.filter(spec, ["all_operands", "last_operand", "second_operand", "mode_operand"]))) > 0 if {
	is_object(spec)
}

# writer_spec adds "options": true to a writers spec that names options, and a regular
# expression matching (in argv joined by newlines) any word that may carry one of them,
# a cheap test before option_values.
writer_spec(false) := false

writer_spec(spec) := object.union(spec, {
	"options": count(object.keys(object.filter(spec, ["short", "long", "single"]))) > 0,
	"option_pattern": option_pattern(spec),
}) if {
	is_object(spec)
}

option_pattern(spec) := concat("|", array.concat(
	array.concat(
		[concat("", ["(?m)^-[^-\\n]*[", concat("", spec.short), "]"]) | count(object.get(spec, "short", [])) > 0],
		[long_pattern(l, object.get(spec, "abbrev", false)) | some l in object.get(spec, "long", [])],
	),
	[concat("", ["(?m)^--?", replace(trim_left(x, "-"), ".", "\\."), "(=|$)"]) | some x in object.get(spec, "single", [])],
))

# long_pattern: a long option as written (--output, --output=x), or with abbrev any
# word with its first letter (--out).
long_pattern(l, true) := concat("", ["(?m)^--", substring(trim_prefix(l, "--"), 0, 1)])

long_pattern(l, abbrev) := concat("", ["(?m)^", replace(l, ".", "\\."), "(=|$)"]) if abbrev != true

# unknown_profile is the profile of a command the rules know nothing about: a name
# with no profile, a dynamic name, or a program run by a path outside the system
# directories (./ls is not ls).
unknown_profile(n) := {
	"key": n, "allowed": false, "forbidden": "", "shell": false, "interpreter": "",
	"download": false, "network": false, "writer": false, "writes_operands": false,
	"in_place": false, "pattern": false, "non_path": false, "runs_files": false,
	"special": "", "trigger": "", "wildcard": false, "code": false,
}

# index holds the profiles and the subsets of names the rules look commands up in (by
# argv[0] as written, their `path`, so that ./ls or $CMD are never found):
#	profiles  name -> profile
#	unlisted  name -> true for names not allowed by themselves (git, forbidden, sh)
#	special   name -> profile for names with special kinds
#	checked   name -> tool key for names whose tool has check() rules
#	allowed   name -> true for names allowed by themselves
#	allowed_subcommands
#	          name -> {word: true} for names allowed with one subcommand word (git
#	          status), unless the name or its family is forbidden
#	network_words
#	          name -> the first positional words that need the network, with the
#	          options taking a value before them ({"words": {"install": true, ...},
#	          "values": {"--prefix", ...}}: npm install, go -C dir get)
#	network_other
#	          name -> profile for the other network needs (curl: always; python -m
#	          pip)
#	network   both in one: name -> the network_words entry, or {"profile": P} for a
#	          network_other one (checks/commands.rego looks up each command routed
#	          to the network kind)
# The engine stores it at data.cmdgate.index when it loads the bundle (with
# data.cmdgate.checked_keys, the keys it found check() rules for); `index` falls back to
# computing it (then every name counts as checked).
index := data.cmdgate.index if {
	is_object(data.cmdgate.index)
} else := computed_index

computed_index := {
	"profiles": ps,
	"unlisted": {n: true | some n, p in ps; p.allowed == false},
	"special": {n: p | some n, p in ps; p.special != ""},
	"checked": checked,
	# check_triggers: per name in checked, its tool's trigger (tools.check_triggers).
	"check_triggers": {n: t | some n, k in checked; t := tools.check_triggers[k]},
	"allowed": {n: true | some n, p in ps; p.allowed == true},
	"allowed_subcommands": {n: words |
		some n, sub in allowlist.effective.subcommands
		object.get(ps, [n, "forbidden"], "") == ""
		not lists.forbidden[family(n)]
		not contains(n, "/")
		words := {w: true | some w, _ in sub.entries; not contains(w, " ")}
		count(words) > 0
	},
	"network_words": {n: network_entry(p) |
		some n, p in ps
		is_array(p.network)
	},
	"network_other": {n: p | some n, p in ps; p.network != false; not is_array(p.network)},
	# network: both of the above in one, for one lookup per command (checks/commands.rego):
	# a network_words entry, or {"profile": P} for a network_other one.
	"network": {n: e |
		some n, p in ps
		p.network != false
		e := network_entry(p)
	},
	# publishing: per tool, the first words of its publishing forms (checks/publish.rego).
	"publishing": {n: {split(f, " ")[0]: true | some f in forms} | some n, forms in lists.publishing},
	# exec_options: per command name of a tool with exec-capable options (its tool key,
	# and its aliases: gtar, gawk), {"key": KEY, "names": {NAME: true}}, the names of those
	# options in any scope (checks/options.rego looks a command's options up here).
	"exec_options": {n: {"key": k, "names": exec_option_names(lists.exec_options[k])} |
		some n, k in exec_option_tools
	},
} if {
	ps := computed_profiles
	checked := object.union({n: p.key | some n, p in ps; checked_key(p.key)}, {k: k | some k in data.cmdgate.checked_keys})
}

# The kinds of per-command check: each is a rule of package cmdgate.checks over the
# commands routed to it (input.routed.KIND; see checks/commands.rego and routes).
check_kinds := [
	"names", "network", "exec_options", "exec_options_path", "dynamic_options",
	"git_config", "special", "publishing", "search", "checked", "wildcard",
]

# search_tools are the file-search tools of checks/search.rego.
search_tools := {"find", "bfs", "fd", "fdfind", "locate", "plocate", "mlocate"}

# computed_routes is the routing table the engine stores at data.cmdgate.routes when it
# loads the bundle (after the index), and looks each command up in to build the input's
# "routed" (checks/commands.rego): "names", per command name, the kinds of check a
# command of that name can meet, for a contained command and for another
# ({"contained": [...], "open": [...]}), with the kinds whose check first matches a
# regular expression over the command's words joined by newlines, and that expression
# ("triggers": {"special": "^-o"}; the engine routes a command to such a kind only when
# its words match), and "kinds", every kind. A kind is left out only where its own
# conditions cannot hold for that name (route_has: its tool is in no index the check
# selects by, or, for "names", a contained command of a tool allowed by its bare name;
# route_trigger: the check's first condition is that expression, read from the same
# place). Names with a slash are not routed: a command run by a path, with a run-time or
# unknown name, or without "contained" meets every kind. Each check keeps its own
# conditions, so a route only saves the evaluation of checks that would find nothing.
computed_routes := {"names": routes(index), "kinds": check_kinds}

routes(ix) := {n: {"contained": route(ix, n, true), "open": route(ix, n, false), "triggers": triggers} |
	some n in route_names(ix)
	not contains(n, "/")
	triggers := {k: t | some k in check_kinds; t := route_trigger(ix, n, k)}
}

# route_trigger: a regular expression over a command's words (joined by newlines) that
# every command of name n the check of kind k can find something in matches, derived
# from what that check reads.
#	special  the profile's trigger, which checks/profiles.rego matches first ("" matches
#	         every command, so it is no trigger)
#	checked  the tool's trigger, which its check() matches first (tools.check_triggers)
#	network  the second word one of the subcommands that need it, or an option (then
#	         the subcommand is found after the options): network_need for a tool whose
#	         need is its subcommands (its profile's network a list), when the words are
#	         plain (no character a regular expression reads) and the name, the first
#	         word, has no newline
route_trigger(ix, n, "special") := t if {
	t := ix.special[n].trigger
	t != ""
}

route_trigger(ix, n, "checked") := ix.check_triggers[n]

route_trigger(ix, n, "network") := sprintf(`\A[^\n]*\n(-|(%s)(\n|\z))`, [concat("|", ws)]) if {
	e := ix.network[n]
	not e.profile
	not contains(n, "\n")
	ws := sort([w | some w, _ in e.words])
	count(ws) > 0
	every w in ws {
		regex.match(`^[A-Za-z0-9:_-]+$`, w)
	}
}

route_names(ix) := ((({n | some n, _ in ix.profiles} | {n | some n, _ in ix.checked}) | {n | some n, _ in ix.exec_options}) | {n | some n, _ in ix.publishing}) | search_tools

# computed_routed is the input's "routed" for an input without it (a hand-written one,
# opa eval on the bundle's files, the bundle's tests): every command routed to every
# kind, where each check's own conditions decide alone (decision.rego).
computed_routed := {k: [i | some i, _ in input.commands] | some k in check_kinds}

route(ix, n, contained) := [k | some k in check_kinds; route_has(ix, n, contained, k)]

# route_has: a command of name n (contained or not) can meet the checks of kind k.
route_has(ix, n, contained, "names") if not allowed_contained(ix, n, contained)

route_has(ix, n, _, "network") if ix.network[n]

route_has(ix, n, _, "exec_options") if ix.exec_options[n]

# (A contained command has no run-time word, but the route does not rely on the field
# for this one: it costs a lookup for the tools with such options only.)
route_has(ix, n, _, "dynamic_options") if not exec_free(ix, n)

route_has(_, "git", _, "git_config")

route_has(ix, n, _, "special") if ix.special[n]

route_has(ix, n, _, "publishing") if ix.publishing[n]

route_has(_, n, _, "search") if n in search_tools

route_has(ix, n, _, "checked") if ix.checked[n]

route_has(ix, n, _, "wildcard") if not ix.profiles[n].wildcard == false

allowed_contained(ix, n, true) if ix.allowed[n] == true

# exec_free: the name's profile is of a tool without exec-capable options.
exec_free(ix, n) if {
	p := ix.profiles[n]
	not ix.exec_options[p.key]
}

# network_entry is a profile's entry in the network index: the first positional words
# that need the network and the options taking a value before them, or the profile
# itself when it needs the network otherwise.
network_entry(p) := {"words": {w: true | some w in p.network}, "values": {v | some v in object.get(lists.subcommand_value_options, p.key, [])}} if {
	is_array(p.network)
} else := {"profile": p}

# exec_option_tools maps the names of the tools of data.cmdgate.lists.exec_options to
# their keys: the keys themselves and the names whose profile has such a key.
exec_option_tools := object.union(
	{n: p.key | some n, p in computed_profiles; lists.exec_options[p.key]},
	{k: k | some k, _ in lists.exec_options},
)

exec_option_names(spec) := object.union(
	{n: true | some n, _ in spec.options},
	{n: true | some _, opts in object.get(spec, "subcommands", {}); some n, _ in opts},
)

checked_key(k) if k in data.cmdgate.checked_keys

# Without the list (under opa test) every tool counts as checked. (Not `not
# is_array(...)`: OPA hoists the undefined reference out of the negation.)
checked_key(_) if not data.cmdgate.checked_keys

# profile_for is a command's profile.
profile_for(c) := p if {
	p := data.cmdgate.index.profiles[c.path]
} else := profile_of(index.profiles, c)

profile_of(ps, c) := p if {
	c.dynamic_name == false
	c.path != c.name
	system_path(c.path)
	p := ps[c.name]
} else := p if {
	# python3.12, pip3.11, bash5, mkfs.ext4: the profile of the version-less name
	c.dynamic_name == false
	not contains(c.path, "/")
	variant_name(c.name)
	p := variant_profile(ps, c.name)
} else := unknown_profile(c.name)

variant_profile(ps, n) := p if {
	p := ps[tool_key(n)]
} else := p if {
	p := ps[family(n)]
}

# variant_name reports names that may be a version or variant of a known tool.
variant_name(n) if contains(n, ".")

variant_name(n) if contains(n, "-")

variant_name(n) if trim_right(n, "0123456789") != n

# system_path reports a path in one of the system directories.
system_path(p) if {
	parts := split(p, "/")
	dir := concat("/", array.slice(parts, 0, count(parts) - 1))
	dir in lists.system_dirs
}

writer_options(spec) := spec.options if is_object(spec)

else := false

# needs_network reports a command that needs the network, given its profile p and
# p.network: true, the first positional words that need it, or "-m pip" (python -m
# pip install/download/wheel).
needs_network(_, _, true)

needs_network(c, p, subs) if {
	is_array(subs)
	first_positional(c.argv, object.get(lists.subcommand_value_options, p.key, [])) in subs
}

needs_network(c, _, "-m pip") if {
	some j, w in c.argv
	w == "-m"
	c.argv[j + 1] in {"pip", "pip3", "ensurepip"}
	c.argv[j + 2] in {"install", "download", "wheel"}
}
