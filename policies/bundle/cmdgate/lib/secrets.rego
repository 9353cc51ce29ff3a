package cmdgate.lib

# Secret locations (data.cmdgate.lists.secrets).

# secret reports an operand-like object that names a secret location, unless the
# sandbox makes it the command's own (sandbox_private: its private /tmp, its own home).
secret(o) if {
	secret_location(o)
	not sandbox_private(o)
}

secret_location(o) if {
	not o.dynamic
	o.path != ""
	secret_path(clean(o.path))
}

secret_location(o) if {
	object.get(o, "glob", false)
	not o.dynamic
	o.path != ""
	secret_glob(clean(o.path))
}

secret_location(o) if {
	secret_text_candidate(o)
	regex.match(lists.secrets.text_pattern, o.text)
}

secret_text_candidate(o) if o.dynamic

secret_text_candidate(o) if o.path == ""

secret_text_candidate(o) if startswith(o.text, "~")

# secret_path reports a clean absolute path in a secret location.
secret_path(p) if {
	some h in lists.secrets.homes
	under(p, h)
}

secret_path(p) if {
	some h in lists.secrets.home_parents
	startswith(p, concat("", [h, "/"]))
}

secret_path(p) if p in lists.secrets.files

secret_path(p) if {
	some d in lists.secrets.dirs
	under(p, d)
}

secret_path(p) if {
	some part in split(p, "/")
	part in lists.secrets.components
}

secret_path(p) if regex.match(lists.secrets.basename_pattern, basename(p))

secret_path(p) if regex.match(lists.secrets.proc_pattern, p)

secret_path(p) if regex.match(lists.secrets.device_pattern, p)

# secret_glob reports a glob pattern (cat /r??t/.ssh/*, cat /etc/sha*) that can match
# a secret location or a directory holding them.
secret_glob(p) if regex.match(lists.secrets.device_pattern, p)

secret_glob(p) if {
	some s in secret_roots
	n := count(split(s, "/"))
	parts := split(p, "/")
	count(parts) >= n
	glob.match(concat("/", array.slice(parts, 0, n)), ["/"], s)
}

secret_glob(p) if {
	some part in split(p, "/")
	regex.match(`[*?\[]`, part)
	some comp in lists.secrets.components
	glob.match(part, [], comp)
}

secret_glob(p) if {
	some h in lists.secrets.home_parents
	parts := split(p, "/")
	n := count(split(h, "/"))
	count(parts) > n
	glob.match(concat("/", array.slice(parts, 0, n)), ["/"], h)
}

secret_roots := {s |
	some s in array.concat(array.concat(lists.secrets.homes, lists.secrets.dirs), lists.secrets.files)
}
