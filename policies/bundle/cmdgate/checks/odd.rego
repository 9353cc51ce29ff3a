# Commands run by a path (./ls, /usr/bin/git), by a dynamic name ($CMD), or by a name
# without a profile (unknown tools, versioned names such as python3.12): their profile
# comes from lib.profile_for and they meet every rule here, one by one.
package cmdgate.checks

import data.cmdgate.allowlist
import data.cmdgate.lib
import data.cmdgate.tools

# odd_findings (called from names.rego) is what commands.rego and profiles.rego give a
# profiled command: the name rules (none for a function call), the special rules, the
# tool's check() rules and its network finding. (Each part is a set comprehension so that it is defined, if empty,
# whatever the rules give: an undefined part would hide the others.)
odd_findings(c, p) := ((odd_name_findings(c) | odd_special_findings(c, p)) | {f | some f in tools.check(p.key, c)}) | network_findings(c, p) if {
	lib.checked_key(p.key)
} else := (odd_name_findings(c) | odd_special_findings(c, p)) | network_findings(c, p)

odd_name_findings(c) := set() if {
	function_call(c)
} else := set() if {
	workspace_program(c)
} else := {f | f := name_finding(c, allowlist.effective, data.cmdgate.lists.forbidden)}

odd_special_findings(c, p) := special_findings(p.special, c, p) if p.special != ""

else := set()
