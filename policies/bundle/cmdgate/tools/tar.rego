# tar: options that run commands (--checkpoint-action, --to-command,
# --use-compress-program/-I, --rsh-command, --info-script/-F, --new-volume-script),
# remote archives (host:file runs rsh/ssh), absolute names (-P), and where it writes:
# the extraction directory (-C, --directory) or the archive it creates (-f).
package cmdgate.tools

import data.cmdgate.lib

# The common case is ruled out first: a contained tar (its operands inside the
# workspace) without long options, -I, -F, -P or a host:file archive.
check(k, c) := set() if {
	k == "tar"
	c.contained == true
	regex.match(`(?m)^--|:|^-?[A-Za-z0-9]*[IFP]`, concat("\n", array.slice(c.argv, 1, count(c.argv)))) == false
} else := tar_findings(c) if k == "tar"

tar_findings(c) := (((((({lib.finding("deny", "escape.tar_exec", msg, c) |
	argv := tar_argv(c.argv)
	some o in tar_exec_long
	lib.has_long(argv, o, true)
	msg := sprintf("tar %s runs a command", [o])
} | {lib.finding("deny", "escape.tar_exec", msg, c) |
	argv := tar_argv(c.argv)
	some letter in ["I", "F"]
	lib.has_short(argv, letter)
	msg := sprintf("tar -%s runs a command", [letter])
}) | {lib.finding("deny", "escape.tar_exec", "tar -P/--absolute-names writes and reads absolute paths anywhere", c) |
	argv := tar_argv(c.argv)
	tar_absolute(argv)
}) | {lib.finding("deny", "escape.tar_exec", msg, c) |
	some f in tar_archives(c)
	regex.match(`^[^/]*:`, f)
	not lib.has_long(tar_argv(c.argv), "--force-local", true)
	msg := sprintf("tar archive %s is remote: tar would run rsh/ssh to reach it", [f])
}) | {lib.finding("deny", "write.outside_workspace", msg, c) |
	tar_extracts(tar_argv(c.argv))
	some t in tar_extract_dirs(c)
	lib.outside_write(t)
	msg := sprintf("tar extracts into %s, outside the workspace", [t.text])
}) | {lib.finding("deny", "write.outside_workspace", msg, c) |
	tar_creates(tar_argv(c.argv))
	some f in tar_archives(c)
	t := lib.target(c, f)
	f != "-"
	lib.outside_write(t)
	msg := sprintf("tar writes the archive %s, outside the workspace", [f])
}) | {lib.finding("deny", "write.outside_workspace", msg, c) |
	lib.has_long(tar_argv(c.argv), "--remove-files", true)
	some o in c.operands
	lib.outside_write(o)
	msg := sprintf("tar --remove-files deletes %s, outside the workspace", [o.text])
}) | {f |
	tar_creates(tar_argv(c.argv))
	some f in recursive_secret_read(c, [o | some o in c.operands])
}

tar_exec_long := ["--checkpoint-action", "--to-command", "--use-compress-program", "--rsh-command", "--info-script", "--new-volume-script", "--rmt-command", "--compress-program"]

# tar_argv turns old-style options (tar xzf a.tgz) into a cluster (tar -xzf a.tgz).
tar_argv(argv) := array.concat([argv[0], concat("", ["-", argv[1]])], array.slice(argv, 2, count(argv))) if {
	count(argv) > 1
	not startswith(argv[1], "-")
} else := argv

tar_absolute(argv) if lib.has_short(argv, "P")

tar_absolute(argv) if lib.has_long(argv, "--absolute-names", true)

tar_extracts(argv) if lib.has_short(argv, "x")

tar_extracts(argv) if lib.has_long(argv, "--extract", true)

tar_extracts(argv) if lib.has_long(argv, "--get", true)

tar_creates(argv) if {
	some letter in ["c", "r", "u", "A"]
	lib.has_short(argv, letter)
}

tar_creates(argv) if {
	some o in ["--create", "--append", "--update", "--concatenate", "--catenate"]
	lib.has_long(argv, o, true)
}

# tar_archives are the archive names (-f, --file; old style: the value of f in order).
tar_archives(c) := lib.option_values(tar_argv(c.argv), {"short": ["f"], "long": ["--file"], "abbrev": true}) | tar_old_style_values(c.argv, "f")

tar_extract_dirs(c) := dirs if {
	ds := lib.option_values(tar_argv(c.argv), {"short": ["C"], "long": ["--directory"], "abbrev": true}) | tar_old_style_values(c.argv, "C")
	count(ds) > 0
	dirs := {lib.target(c, d) | some d in ds}
} else := {lib.target(c, ".")}

# tar_old_style_values: in `tar xfC a.tgz dir` the letters that take values take the
# following words in order.
tar_old_style_values(argv, letter) := {v |
	count(argv) > 1
	not startswith(argv[1], "-")
	letters := [ch | some ch in split(argv[1], ""); ch in tar_value_letters]
	some k, ch in letters
	ch == letter
	v := argv[2 + k]
}

tar_value_letters := {"f", "C", "T", "X", "b", "g", "K", "N", "V", "H", "I", "F", "L"}
