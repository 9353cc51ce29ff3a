# Options that run another program, in every spelling parse reads (commands[].options;
# the rules: tools/options.rego, the list: data.cmdgate.lists.exec_options). One pass
# over the options of the request: an option whose name is on no tool's list (most of
# them) costs one lookup; the others are judged with the list of the command's tool.
#
#   escape.tar_exec, escape.zip_exec, escape.git_exec, escape.ssh_command, ...  deny
#       (the rule of the tool's exec_options entry)
#   dynamic.exec_option  (policy.dynamic_command) an option word of such a tool whose
#       letters are only known at run time (tar -$X)
#   escape.git_config    deny: git -c / git clone --config with a key not on the safe
#       list
package cmdgate.checks

import data.cmdgate.lib
import data.cmdgate.tools

# (Per-command checks, routed by checks/commands.rego.)
findings contains f if {
	some i in input.routed.exec_options
	c := input.commands[i]
	t := data.cmdgate.index.exec_options[c.path]
	some o in c.options
	t.names[o.name]
	some f in tools.exec_option_findings(t.key, c)
}

# Commands run by a path (/usr/bin/tar): the tool of their profile.
findings contains f if {
	some i in input.routed.exec_options_path
	c := input.commands[i]
	contains(c.path, "/")
	count(c.options) > 0
	key := lib.profile_for(c).key
	t := data.cmdgate.index.exec_options[key]
	some o in c.options
	t.names[o.name]
	some f in tools.exec_option_findings(key, c)
}

# An option word whose letters are only known at run time, of such a tool.
findings contains f if {
	some i in input.routed.dynamic_options
	c := input.commands[i]
	c.dynamic == true
	some o in c.options
	o.dynamic == true
	lib.dynamic_text(o.name)
	key := lib.profile_for(c).key
	data.cmdgate.index.exec_options[key]
	some f in tools.exec_option_findings(key, c)
}

findings contains f if {
	some i in input.routed.git_config
	c := input.commands[i]
	c.name == "git"
	some o in c.options
	o.name in {"-c", "--config"}
	some f in tools.git_setting_findings(c)
}
