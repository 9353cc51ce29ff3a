# Text and system utilities: date may set the system clock (-s, --set, or an
# MMDDhhmm operand); ripgrep runs preprocessor programs (--pre) and a program for its
# hyperlinks' host name (--hostname-bin); sort runs a compression program for its
# temporary files (--compress-program); mkdir -m sets a mode like chmod does.
package cmdgate.tools

import data.cmdgate.lib

check(k, c) := date_findings(c) if k == "date"

date_findings(c) := {lib.finding("deny", "forbidden.set_clock", msg, c) |
	some w in date_set_words(c.argv)
	msg := sprintf("date %s sets the system clock; it is forbidden", [w])
}

# date_set_words are the words that set the clock: -s/--set in any spelling, and an
# operand that is not a +FORMAT (date MMDDhhmm[[CC]YY][.ss]).
date_set_words(argv) := {w |
	end := lib.dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	startswith(w, "-")
	date_set_option(w)
} | {w |
	some i, w in argv
	i > 0
	not startswith(w, "+")
	not startswith(w, "-")
	not date_option_value(argv, i)
}

date_set_option(w) if {
	startswith(w, "--")
	name := split(w, "=")[0]
	count(name) > 3
	startswith("--set", name)
}

# A cluster with s: an option letter before it that takes a value (-d, -f, -r, -I) makes
# the rest its value (-dsomething), so only s before those counts.
date_set_option(w) if {
	not startswith(w, "--")
	m := regex.find_all_string_submatch_n(`^-([^dfrsI]*)s`, w, 1)
	count(m) > 0
}

# date_option_value reports argv[i] as the value of the option before it (-d STRING,
# --date STRING, -f FILE, -r FILE, -ud STRING, -s STRING, --set STRING).
date_option_value(argv, i) if regex.match(`^(-[^-]*[dfrs]|--(d|da|dat|date|f|fi|fil|file|r|re|ref|refe|refer|refere|referen|referenc|reference|s|se|set))$`, argv[i - 1])

# rg: --pre COMMAND runs COMMAND on every file searched; --hostname-bin runs a program.
# (rg_recursive_findings: recursive.rego.)
check(k, c) := rg_recursive_findings(c) | {lib.finding("deny", "escape.rg_preprocessor", msg, c) |
	end := lib.dashdash(c.argv)
	some i, w in c.argv
	i > 0
	i < end
	split(w, "=")[0] in {"--pre", "--hostname-bin"}
	msg := sprintf("rg %s runs another program on the files it searches", [split(w, "=")[0]])
} if k == "rg"

# sort --compress-program PROG runs PROG on its temporary files. (The flags rule out
# most commands first.)
check(k, c) := {lib.finding("deny", "escape.sort_compress_program", "sort --compress-program runs another program", c) |
	lib.has_long(c.argv, "--compress-program", true)
} if {
	k == "sort"
	some f in c.flags
	startswith(f, "--co")
}

# mkdir -m MODE: the chmod 777 class (world-writable or setuid/setgid modes).
check(k, c) := {lib.finding("deny", "forbidden.chmod_mode", msg, c) |
	some m in lib.option_values(c.argv, {"short": ["m"], "long": ["--mode"], "abbrev": true})
	lib.world_writable_mode(m)
	msg := sprintf("mkdir -m %s creates a directory writable by others (or setuid/setgid); it is forbidden", [m])
} if {
	k == "mkdir"
	some f in c.flags
	regex.match(`^-[^-]*m|^--m`, f)
}
