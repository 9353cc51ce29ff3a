# The rules of individual tools (package cmdgate.tools): one check(key, command) per
# tool, called only for the commands whose tool has checks (data.cmdgate.index.checked,
# routed as "checked"), with the command's tool key, so that a command only meets the
# checks of its own tool.
package cmdgate.checks

import data.cmdgate.lib
import data.cmdgate.tools

findings contains f if {
	some i in input.routed.checked
	c := input.commands[i]
	k := data.cmdgate.index.checked[c.path]
	some f in tools.check(k, c)
}
