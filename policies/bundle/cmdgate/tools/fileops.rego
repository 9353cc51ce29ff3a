# File operations: rm, chmod, umask, cd/pushd.
package cmdgate.tools

import data.cmdgate.lib

# rm: recursive and force in any spelling is forbidden (the forbidden list: rm -rf);
# recursive alone asks; --no-preserve-root is forbidden.
check(k, c) := rm_findings(c) if k == "rm"

rm_findings(c) := set() if {
	rm_contained(c)
} else := ({lib.finding("deny", "forbidden.rm_recursive_force", sprintf("rm %s: recursive forced deletion is forbidden", [concat(" ", array.slice(c.argv, 1, count(c.argv)))]), c) |
	rm_recursive(c.argv)
	rm_force(c.argv)
} | {lib.finding("ask", "destructive.rm_recursive", "rm -r deletes whole directory trees; a person must approve it", c) |
	rm_recursive(c.argv)
	not rm_force(c.argv)
}) | {lib.finding("deny", "forbidden.rm_recursive_force", "rm --no-preserve-root is forbidden", c) |
	lib.has_long(c.argv, "--no-preserve-root", true)
}

# rm_contained: under the sandboxed profile, in a sandbox that isolates, deleting
# trees the workspace holds (rm -rf build dist node_modules/.cache) is build hygiene:
# every operand a static path inside the workspace from every directory the shell may
# be in, none the workspace itself or .git (nor under it), and a glob only below a
# sub-directory (build/*, not ./* or *.o at the top). Nothing outside the workspace is
# writable there, so a symbolic link in the workspace cannot carry the deletion out.
rm_contained(c) if {
	lib.sandboxed
	input.sandbox.isolated == true
	count(c.operands) > 0
	not lib.has_long(c.argv, "--no-preserve-root", true)
	every o in c.operands {
		rm_contained_operand(o)
	}
}

rm_contained_operand(o) if {
	o.dynamic == false
	o.inside_workspace == true
	o.path != input.request.workspace
	not regex.match(`(^|/)\.git(/|$)`, o.path)
	rm_glob_below_top(o)
}

rm_glob_below_top(o) if o.glob != true

rm_glob_below_top(o) if {
	o.glob == true
	parts := split(o.path, "/")
	dir := concat("/", array.slice(parts, 0, count(parts) - 1))
	not regex.match(`[*?\[]`, dir)
	dir != input.request.workspace
	lib.inside(dir)
}

rm_recursive(argv) if lib.has_short(argv, "r")

rm_recursive(argv) if lib.has_short(argv, "R")

rm_recursive(argv) if lib.has_long(argv, "--recursive", true)

rm_force(argv) if lib.has_short(argv, "f")

rm_force(argv) if lib.has_long(argv, "--force", true)

# chmod: modes granting write to others or setuid/setgid (the chmod 777 class of seed
# 001 6.3.7), and modes copied from a file outside the workspace.
check(k, c) := chmod_findings(c) if k == "chmod"

chmod_findings(c) := {lib.finding("deny", "forbidden.chmod_mode", sprintf("chmod %s grants write to others or sets setuid/setgid; it is forbidden", [m]), c) |
	m := lib.chmod_mode(c)
	m != ""
	lib.world_writable_mode(m)
} | {lib.finding("deny", "forbidden.chmod_mode", sprintf("chmod --reference=%s copies the mode of a file outside the workspace", [v]), c) |
	some v in lib.option_values(c.argv, {"long": ["--reference"], "abbrev": true})
	not lib.target(c, v).inside_workspace
}

# umask: a umask leaving new files writable by others is the chmod 777 class too.
check(k, c) := {lib.finding("deny", "forbidden.chmod_mode", sprintf("umask %s makes new files writable by others; it is forbidden", [o.text]), c) |
	some o in c.operands
	lib.permissive_umask(o.text)
} if k == "umask"

# cd, pushd: the commands after a cd run somewhere else; paths there are only known
# when the new directory is inside the workspace and static. Bare cd (home), cd -,
# cd $X and cd to outside the workspace are denied.
check(k, c) := set() if {
	k == "cd"

	# the common case: one static operand inside the workspace
	count(c.operands) == 1
	o := c.operands[0]
	o.inside_workspace == true
	o.dynamic == false
	o.text != "-"
} else := cd_findings(c) if k == "cd"

# The common case: one static operand inside the workspace.
cd_findings(c) := set() if {
	count(c.operands) == 1
	o := c.operands[0]
	o.inside_workspace == true
	o.dynamic == false
	o.text != "-"
} else := {lib.finding("deny", "path.cd_outside_workspace", msg, c) |
	count(c.operands) == 0
	msg := sprintf("%s without a directory goes to the home directory (or the directory stack), outside what the policy knows", [c.name])
} | {lib.finding("deny", "path.cd_outside_workspace", msg, c) |
	some o in c.operands
	not o.text in {"-L", "-P", "-e", "-@"}
	cd_target_unsafe(o)
	msg := sprintf("%s %s leaves the workspace (or goes where the policy cannot know)", [c.name, o.text])
}

cd_target_unsafe(o) if o.text == "-"

cd_target_unsafe(o) if o.dynamic

cd_target_unsafe(o) if {
	o.text != "-"
	not o.dynamic
	not o.inside_workspace
	not likely_inside(o)
}

# likely_inside: under the sandboxed profile, a cd whose target is inside the workspace
# from the directory the shell is most likely in (every cd before it succeeded) is
# fine, although a failed earlier cd could take it elsewhere (`cd sub`, newline,
# `cd ..`): the later commands' paths are still judged from every directory the shell
# may be in, and the sandbox holds the rest.
likely_inside(o) if {
	lib.sandboxed
	o.path != ""
	lib.inside(o.path)
}
