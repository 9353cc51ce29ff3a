package cmdgate.lib

# File modes (chmod, umask).

# chmod_mode is the mode word of a chmod command ("" when --reference gives it): the
# first word that is not one of chmod's own options (a mode may look like an option:
# chmod -w file).
chmod_mode(c) := "" if {
	has_long(c.argv, "--reference", true)
} else := ws[0] if {
	ws := [w |
		some i, w in c.argv
		i > 0
		not regex.match(`^-[Rcfv]+$`, w)
		not startswith(w, "--")
	]
	count(ws) > 0
} else := ""

# world_writable_mode reports a chmod mode that grants write to others or all, or sets
# setuid/setgid: 777, 0666, 4755, 2775, o+w, a+rwx, ugo=rwx, +s, u+s, g=s, o=u.
world_writable_mode(m) if {
	regex.match(`^[0-7]{1,5}$`, m)
	other := substring(m, count(m) - 1, 1)
	other in {"2", "3", "6", "7"}
}

world_writable_mode(m) if {
	regex.match(`^[0-7]{4,5}$`, m)
	special := substring(m, count(m) - 4, 1)
	special in {"2", "3", "4", "5", "6", "7"}
}

world_writable_mode(m) if {
	not regex.match(`^[0-7]+$`, m)
	some clause in split(m, ",")
	dangerous_clause(clause)
}

dangerous_clause(clause) if regex.match(`[+=][rwxXt]*s`, clause)

dangerous_clause(clause) if {
	who := regex.find_n(`^[ugoa]*`, clause, 1)[0]
	regex.match(`[oa]`, who)
	rest := substring(clause, count(who), -1)
	regex.match(`[+=]([rwxXst]*w|[ugo])`, rest)
}

# permissive_umask reports a umask that leaves new files writable by others.
permissive_umask(m) if {
	regex.match(`^[0-7]{1,4}$`, m)
	other := substring(m, count(m) - 1, 1)
	not other in {"2", "3", "6", "7"}
}

permissive_umask(m) if {
	not regex.match(`^[0-7]+$`, m)
	some clause in split(m, ",")
	who := regex.find_n(`^[ugoa]*`, clause, 1)[0]
	regex.match(`[oa]`, who)
	regex.match(`[+=][rwxXst]*w`, substring(clause, count(who), -1))
}
