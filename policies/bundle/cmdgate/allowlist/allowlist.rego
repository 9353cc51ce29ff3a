# Package cmdgate.allowlist computes the effective allowlist from the lists and the
# configuration (the allowlist configuration): use_default, additional, exclude, custom_list.
#
# The result depends only on data, so the engine evaluates `computed` once when it
# loads the bundle and stores it at data.cmdgate.effective; `effective` reads that
# and falls back to `computed` (as under `opa test`, where nothing was stored).
package cmdgate.allowlist

import data.cmdgate.lib

cfg := data.cmdgate.config.allowed_commands

# default_entries are the entries of the default categories, and of the categories the
# profile in force adds (data.cmdgate.lists.profiles: sandboxed adds the runners, local
# version control and developer tools).
default_entries := {e | some cat in categories; some e in cat.commands}

# categories are the default categories, then those of the profile in force; under
# sandboxed, also the publishing commands (data.cmdgate.lists.publishing), which
# checks/publish.rego makes ask a human.
categories := array.concat(array.concat(lib.lists.categories, object.get(lib.lists, ["profiles", profile, "categories"], [])), publishing_categories)

profile := object.get(data.cmdgate.config, "profile", "strict")

publishing_categories := [{
	"id": "publishing",
	"title": "Publishing and pushing (each asks a human)",
	"commands": sort([concat(" ", [n, f]) | some n, forms in lib.lists.publishing; some f in forms]),
}] if profile == "sandboxed"

else := []

builtin_entries := {e | some e in lib.lists.builtins.commands}

# base is the default list, or custom_list when use_default is false.
base := default_entries if cfg.use_default == true

else := {e | some e in cfg.custom_list}

additional := {e | some e in cfg.additional}

# excluded reports entries removed by exclude: the entry itself and, for a single
# word, every multi-word entry of that command ("git" removes "git status").
excluded(e) if e in cfg.exclude

excluded(e) if {
	some x in cfg.exclude
	not contains(x, " ")
	startswith(e, concat("", [x, " "]))
}

# entries is the effective allowlist: normalized entries ("git  status" -> "git status").
entries := {n |
	some e in ((base | builtin_entries) | additional)
	n := normalize(e)
	n != ""
	not excluded(n)
}

normalize(e) := concat(" ", [w | some w in split(trim_space(e), " "); w != ""])

# category_of is the id of the first category that lists the entry: a default
# category, the builtins, or "custom"/"additional" for entries only the config names.
category_of(e) := ids[0] if {
	ids := [cat.id | some cat in categories; e in cat.commands]
	count(ids) > 0
} else := lib.lists.builtins.id if {
	e in lib.lists.builtins.commands
} else := "custom" if {
	e in cfg.custom_list
} else := "additional"

# computed is the effective allowlist in the form the rules read:
#   names:       {"ls": "files", ...} single-word entries and their category
#   subcommands: {"git": {"entries": {"status": "vcs", ...}, "max": 1}} the words after
#                the name of the multi-word entries (joined by spaces) and the most
#                words an entry has, for names with or without a single-word entry
#   categories:  [{id, title, commands}] in display order, for the system prompt
computed := {
	"names": {e: category_of(e) | some e in entries; not contains(e, " ")},
	"subcommands": {n: {"entries": subs, "max": max([k | some s, _ in subs; k := count(split(s, " "))])} |
		some n in {split(e, " ")[0] | some e in multi_entries}
		prefix := concat("", [n, " "])
		subs := {substring(e, count(prefix), -1): category_of(e) | some e in multi_entries; startswith(e, prefix)}
	},
	"categories": display_categories,
}

multi_entries := {e | some e in entries; contains(e, " ")}

# display_categories lists each entry once, under the first category that has it (the
# builtins category shows only the builtins no other category lists).
display_categories := array.concat(
	[{"id": cat.id, "title": cat.title, "commands": cmds} |
		some cat in array.concat(categories, [lib.lists.builtins])
		cmds := [e | some e in cat.commands; normalize(e) in entries; category_of(normalize(e)) == cat.id]
		count(cmds) > 0
	],
	[{"id": id, "title": title, "commands": cmds} |
		some [id, title] in [["custom", "Custom"], ["additional", "Additional"]]
		cmds := sort([e | some e in entries; category_of(e) == id])
		count(cmds) > 0
	],
)

# effective is the precomputed allowlist when the engine stored one, else computed.
effective := data.cmdgate.effective if {
	data.cmdgate.effective.names
} else := computed

# allowed reports whether the command c is on the effective allowlist, by name, by a
# versioned name (python3.12 for python3), or by name and subcommand words.
allowed(c, eff) if eff.names[c.name]

allowed(c, eff) if allowed_unlisted(c, eff)

# allowed_unlisted reports whether a command whose name is not itself on the allowlist
# is allowed by its subcommand words or as a versioned name.
allowed_unlisted(c, eff) if {
	sub := eff.subcommands[c.name]
	sub.max == 1
	sub.entries[first_subcommand_word(c)]
}

allowed_unlisted(c, eff) if {
	sub := eff.subcommands[c.name]
	sub.max > 1
	words := subcommand_words(c)
	count(words) > 0
	some k in numbers.range(1, min([count(words), sub.max]))
	sub.entries[concat(" ", array.slice(words, 0, k))]
}

# first_subcommand_word is subcommand_words(c)[0], with a fast path for the common
# `tool subcommand ...`.
first_subcommand_word(c) := c.argv[1] if {
	startswith(c.argv[1], "-") == false
} else := subcommand_words(c)[0]

allowed_unlisted(c, eff) if {
	contains(c.name, ".")
	versioned(c.name)
	eff.names[split(c.name, ".")[0]]
}

versioned(n) if regex.match(`^[A-Za-z][A-Za-z0-9_+-]*\.[0-9][0-9.]*$`, n)

# subcommand_words are the positional words of c that name its subcommand, skipping
# the options that take a value before it (git -C dir status).
subcommand_words(c) := lib.positional(c.argv, data.cmdgate.lists.git.global_value_options) if {
	c.name == "git"
} else := lib.positional(c.argv, object.get(data.cmdgate.lists.subcommand_value_options, c.name, []))
