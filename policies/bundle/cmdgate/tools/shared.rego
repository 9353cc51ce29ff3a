package cmdgate.tools

import data.cmdgate.lib

# recursive_secret_read: a tool that reads whole directory trees, run on a directory
# that holds secret locations (/, /home, /root, /etc, ...), reads the secrets too.
recursive_secret_read(c, roots) := {lib.finding("deny", "secrets.read", msg, c) |
	some r in roots
	r.inside_workspace == false
	r.dynamic == false
	r.path != ""
	root := lib.clean(r.path)
	held := sort([s | some s in secret_roots; lib.under(s, root)])
	count(held) > 0
	msg := sprintf("%s reads the whole tree under %s, which holds secret locations (%s)", [c.name, r.text, concat(", ", array.slice(held, 0, 3))])
}

secret_roots := {s |
	some s in array.concat(array.concat(lib.lists.secrets.homes, lib.lists.secrets.home_parents), array.concat(lib.lists.secrets.dirs, lib.lists.secrets.files))
}
