# Commands run by a path (./ls, /usr/bin/git), by a dynamic name ($CMD), or by a name
# without a profile (unknown tools, versioned names such as python3.12): their profile
# comes from lib.profile_for and they meet every rule here, one by one.
package cmdgate.checks

import data.cmdgate.allowlist
import data.cmdgate.lib
import data.cmdgate.tools

findings contains f if {
	profiles := lib.index.profiles
	some c in input.commands
	object.get(profiles, c.path, false) == false
	some f in odd_findings(c, lib.profile_for(c))
}

# (Each part is a set comprehension so that it is defined, if empty, whatever the
# rules give: an undefined part would hide the others.)
odd_findings(c, p) := (odd_name_findings(c) | odd_special_findings(c, p)) | {f | some f in tools.check(p.key, c)} if {
	lib.checked_key(p.key)
} else := odd_name_findings(c) | odd_special_findings(c, p)

odd_name_findings(c) := {f | f := name_finding(c, allowlist.effective, data.cmdgate.lists.forbidden)}

odd_special_findings(c, p) := special_findings(p.special, c, p) if p.special != ""

else := set()
