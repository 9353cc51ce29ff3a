# Package cmdgate.lib holds the helpers every rule shares: findings, names, paths,
# option values. It decides nothing itself.
package cmdgate.lib

# lists is data.cmdgate.lists (lists/data.yaml); config is the policy configuration.
lists := data.cmdgate.lists

config := data.cmdgate.config

# unknown_effect and dynamic_effect are what policy.unknown_command and
# policy.dynamic_command ask for. Anything but "ask" is a deny (fail closed).
unknown_effect := "ask" if config.unknown_command == "ask"

else := "deny"

dynamic_effect := "ask" if config.dynamic_command == "ask"

else := "deny"

# finding is one reason of the decision. command is the index of the command it is
# about (-1 when it is about the request as a whole).
finding(effect, rule, message, c) := {"effect": effect, "rule": rule, "message": message, "command": c.index}

request_finding(effect, rule, message) := {"effect": effect, "rule": rule, "message": message, "command": -1}

# tool_key is the name the tool-specific rules know a command by: aliases first
# (python3 -> python), then versioned names without their version (python3.12 ->
# python3 -> python, mkfs.ext4 -> mkfs).
tool_key(n) := k if {
	k := lists.aliases[n]
} else := k if {
	contains(n, ".")
	base := split(n, ".")[0]
	base != ""
	k := object.get(lists.aliases, base, base)
} else := n

# family is the name a forbidden-list lookup also tries: the part before the first "."
# or "-", without trailing digits (nc.openbsd -> nc, iptables-save -> iptables,
# killall5 -> killall).
family(n) := trim_right(split(split(n, ".")[0], "-")[0], "0123456789")

# basename of a path as written.
basename(p) := b if {
	parts := split(p, "/")
	b := parts[count(parts) - 1]
}

# under reports whether path p is dir or inside it (both clean and absolute).
under(p, dir) if p == dir

under(p, dir) if startswith(p, concat("", [dir, "/"]))

under(p, "/") if startswith(p, "/")

workspace := input.request.workspace

# words holds every argv word and redirect target of the request's commands, one per
# line, for a rule that looks for text anywhere in them: input.words, which the engine
# adds, or the same built here for a document without it (hand-written, raw JSON).
# Testing one string costs one evaluation; walking the words costs one per word.
words := input.words if is_string(input.words)

else := concat("", [concat("", [w, "\n"]) |
	some c in input.commands
	some w in array.concat(c.argv, [r.target | some r in c.redirects])
])

# inside reports whether the clean absolute path p is inside the workspace. An empty or
# relative workspace contains nothing.
inside(p) if {
	startswith(workspace, "/")
	under(p, workspace)
}

# clean is the lexical clean of an absolute path (path.Clean without symlinks).
clean(p) := "/" if count(clean_parts(p)) == 0

clean(p) := concat("", ["/", concat("/", clean_parts(p))]) if count(clean_parts(p)) > 0

clean_parts(p) := [x |
	parts := [s | some s in split(p, "/"); s != ""; s != "."]
	some i, x in parts
	x != ".."
	not cancelled(parts, i)
]

# A component is cancelled when a later ".." consumes it: the count of components
# minus the count of ".." after it drops below zero somewhere.
cancelled(parts, i) if {
	some j, _ in parts
	j > i
	seg := array.slice(parts, i + 1, j + 1)
	count([1 | some s in seg; s != ".."]) < count([1 | some s in seg; s == ".."])
}

# dynamic_text reports text that needs run-time state to know.
dynamic_text(t) if contains(t, "$")

dynamic_text(t) if contains(t, "`")

# base_dir is the directory a command's relative paths are resolved against.
base_dir(c) := d if {
	d := c.cwd
	is_string(d)
} else := input.request.cwd

# abs_path resolves text against the command's directory, lexically.
abs_path(c, text) := clean(text) if startswith(text, "/")

else := clean(concat("/", [base_dir(c), text]))

# target describes a path named in text (an option value, a word of a program) the
# way the input describes operands: {text, path, inside_workspace, dynamic}. The
# command's own operand is used when one has the same text.
target(c, text) := {"text": text, "path": "", "inside_workspace": false, "dynamic": true} if {
	dynamic_text(text)
} else := {"text": text, "path": "", "inside_workspace": false, "dynamic": false} if {
	startswith(text, "~")
} else := os[0] if {
	os := [o | some o in c.operands; o.text == text]
	count(os) > 0
} else := {"text": text, "path": p, "inside_workspace": inside(p), "dynamic": false} if {
	p := abs_path(c, text)
	inside(p)
} else := {"text": text, "path": abs_path(c, text), "inside_workspace": false, "dynamic": false}

# sink reports paths outside the workspace that only swallow or show output.
sink(p) if p in lists.sinks

sink(p) if regex.match(`^/(dev|proc/self)/fd/[0-9]+$`, p)

# outside_write reports a write target that is outside the workspace (dynamic and
# unknown targets count as outside) and is not a sink. t is an operand, a redirect or
# a target.
outside_write(t) if t.dynamic == true

outside_write(t) if {
	t.dynamic == false
	t.inside_workspace == false
	not sink(t.path)
	not sandbox_private(t)
	not likely_inside_write(t)
}

# likely_inside_write: under the sandboxed profile, in a sandbox that isolates, a write
# whose path is inside the workspace from the directory the shell is most likely in
# (every earlier cd succeeded: cd tools/gen, newline, go build -o ../../bin/gen) is
# not a write outside the workspace; were an earlier cd to fail, the path would name a
# system directory, which such a sandbox keeps read-only.
likely_inside_write(t) if {
	sandboxed
	input.sandbox.isolated == true
	is_string(t.path)
	t.path != ""
	inside(t.path)
}

# sandboxed reports the sandboxed profile (data.cmdgate.config.profile, set by the
# gateway where the backend isolates, and shown as input.request.profile): the rules
# allow there what runs the project's own code, which the sandbox contains.
sandboxed if object.get(data.cmdgate.config, "profile", "strict") == "sandboxed"

# sandbox_private reports a target that the sandbox makes the command's own
# (input.sandbox): its private /tmp and /dev/shm, and, in an isolated sandbox with a
# HOME of its own, that home, named by path or by ~ (not ~user). Writing there
# touches nothing of the host's, and nothing there is the host's secret. Without the
# guarantees (the process backend, the offline CLI) nothing is private.
sandbox_private(t) if private_path(t.path)

sandbox_private(t) if {
	t.dynamic == false
	own_home_text(object.get(t, "text", object.get(t, "target", "")))
}

private_path(p) if {
	input.sandbox.private_tmp == true
	some d in ["/tmp", "/dev/shm"]
	under(p, d)
}

private_path(p) if under(p, own_home)

own_home_text(text) if {
	own_home
	tilde_home(text)
}

# own_home is the isolated sandbox's HOME (an absolute path other than /).
own_home := h if {
	input.sandbox.isolated == true
	h := input.sandbox.home
	startswith(h, "/")
	h != "/"
}

tilde_home("~")

tilde_home(text) if startswith(text, "~/")

# git_internal reports a write target inside a .git directory (hooks, config): writing
# there makes the next `git status` run what it names.
git_internal(t) if {
	t.inside_workspace == true
	contains(concat("", [t.path, "/"]), "/.git/")
}

# dashdash is the index of the first "--" in argv (count(argv) when none): options
# end there.
dashdash(argv) := min({i | some i, w in argv; w == "--"}) if "--" in argv

else := count(argv)

# option_values are the values of the options spec names in argv, in every spelling:
#   spec.short  ["o"]: -o V, -oV, -xo V, -xoV (a cluster ending in or containing o)
#   spec.long   ["--output"]: --output=V, --output V; with spec.abbrev also --out V
#   spec.single ["-o", "-coverprofile"]: -o V, -o=V, --o V, --o=V (Go flag and find style)
# Only words before "--" that start with "-" are looked at.
option_values(argv, spec) := {v |
	end := dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	startswith(w, "-")
	v := word_value(argv, i, w, spec)
}

# word_value is the value word w (argv[i]) gives an option of spec, if it does.
word_value(argv, i, w, spec) := option_value(argv, i, w, name) if {
	startswith(w, "--")
	name := split(w, "=")[0]
	long_match(name, object.get(spec, "long", []), object.get(spec, "abbrev", false))
} else := option_value(argv, i, w, name) if {
	name := split(w, "=")[0]
	concat("", ["-", trim_left(name, "-")]) in object.get(spec, "single", [])
} else := short_value(argv, i, substring(w, j + 1, -1)) if {
	not startswith(w, "--")
	js := [j | some ch in object.get(spec, "short", []); j := indexof(w, ch); j > 0]
	count(js) > 0
	j := min(js)
}

# option_value is the value of the option word w named name: after "=", or the next word.
option_value(argv, i, w, name) := substring(w, count(name) + 1, -1) if count(w) > count(name)

else := argv[i + 1]

long_match(name, longs, _) if name in longs

long_match(name, longs, true) if {
	not name in longs
	count(name) > 2
	some l in longs
	startswith(l, name)
}

short_value(argv, i, rest) := rest if rest != ""

else := argv[i + 1]

# has_flag reports whether any of names appears in argv as an option before "--"
# (exact words, and --name=value for long names).
has_flag(argv, names) if {
	end := dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	w in names
}

has_flag(argv, names) if {
	end := dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	startswith(w, "--")
	contains(w, "=")
	substring(w, 0, indexof(w, "=")) in names
}

# has_short reports whether a short option letter appears in any -cluster before "--".
has_short(argv, letter) if {
	end := dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	regex.match(`^-[A-Za-z0-9]+$`, w)
	contains(w, letter)
}

# has_long reports whether a long option (or, with abbrev, an unambiguous GNU prefix of
# it of at least 4 characters) appears before "--".
has_long(argv, long, abbrev) if {
	end := dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	startswith(w, "--")
	name := split(w, "=")[0]
	long_match(name, [long], abbrev)
}

# positional are the words after argv[0] that are not options nor option values, for
# the tools' value-taking options in values.
positional(argv, values) := [w |
	some i, w in argv
	i > 0
	startswith(w, "-") == false
	not argv[i - 1] in values
]

# first_positional is positional(argv, values)[0], with a fast path for the common
# `tool subcommand ...`.
first_positional(argv, values) := argv[1] if {
	startswith(argv[1], "-") == false
} else := positional(argv, values)[0]

# in_pipeline_after reports whether c reads the output of an earlier stage of its
# pipeline.
in_pipeline_after(c) if {
	c.context.pipeline
	c.context.stage > 0
}

# dangerous_env reports an assignment NAME=value that changes what programs run or
# where they write (data.cmdgate.lists.dangerous_env), names compared
# case-insensitively: a listed name or prefix, or a judged name whose value is
# dangerous (a value that needs run-time state always is).
dangerous_env(name, value) if {
	upper(name) in data.cmdgate.lists.dangerous_env.names
	not workspace_search_path(name, value)
}

dangerous_env(name, _) if {
	u := upper(name)
	some p in data.cmdgate.lists.dangerous_env.prefixes
	startswith(u, p)
}

dangerous_env(name, value) if {
	j := data.cmdgate.lists.dangerous_env.judged[upper(name)]
	dangerous_value(j, value)
}

# workspace_search_path: under the sandboxed profile, a variable naming where a
# language loads the project's own modules (PYTHONPATH=src, NODE_PATH=lib) is fine
# when every entry of its value is a relative path that does not go up: it adds the
# workspace's code, which the sandbox runs anyway, and nothing of the host
# (data.cmdgate.lists.profiles.sandboxed.search_path_env).
workspace_search_path(name, value) if {
	sandboxed
	upper(name) in object.get(data.cmdgate.lists, ["profiles", "sandboxed", "search_path_env"], [])
	not dynamic_text(value)
	value != ""
	every e in split(value, ":") {
		regex.match(`^[A-Za-z0-9_.@+-][A-Za-z0-9_.@+/-]*$`, e)
		not regex.match(`(^|/)\.\.(/|$)`, e)
	}
}

dangerous_value(_, value) if dynamic_text(value)

dangerous_value(j, value) if regex.match(j.deny, value)

dangerous_value(j, value) if not regex.match(j.allow, value)

# dev_net reports bash's network pseudo-files /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT:
# by resolved path, by the word as written (bash compares the word), and anywhere in
# text that is only known at run time or is a value used later (anywhere == true).
dev_net(path, _, _) if startswith(path, "/dev/tcp/")

dev_net(path, _, _) if startswith(path, "/dev/udp/")

dev_net(_, text, _) if startswith(text, "/dev/tcp/")

dev_net(_, text, _) if startswith(text, "/dev/udp/")

dev_net(_, text, true) if regex.match(`/dev/+(tcp|udp)(/|$)`, text)

# substitution_text reports static text that holds a command substitution.
substitution_text(w) if contains(w, "$(")

substitution_text(w) if contains(w, "`")
