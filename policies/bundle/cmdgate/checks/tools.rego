# The rules of individual tools (package cmdgate.tools): one check(key, command) per
# tool, called only for the commands whose tool has checks (lib.index.checked), with
# the command's tool key, so that a command only meets the checks of its own tool.
package cmdgate.checks

import data.cmdgate.lib
import data.cmdgate.tools

findings contains f if {
	checked := lib.index.checked
	some c in input.commands
	k := checked[c.path]
	some f in tools.check(k, c)
}
