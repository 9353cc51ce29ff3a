# Publishing and pushing (data.cmdgate.lists.publishing): npm publish, twine upload,
# cargo publish, gem push, gh release create, docker push, git push. What leaves the
# sandbox for good asks a human under the sandboxed profile and is denied under strict.
# A security team that wants one allowed names it in allowed_commands.additional
# ("git push"); a function the script defined with such a name runs its body.
package cmdgate.checks

import data.cmdgate.allowlist
import data.cmdgate.lib

# (A per-command check, routed by checks/commands.rego.)
findings contains publish_finding(c) if {
	some i in input.routed.publishing
	c := input.commands[i]
	first := data.cmdgate.index.publishing[c.name]
	some w in c.argv
	first[w] # a word that begins a publishing form: cheap, and rare
	forms := data.cmdgate.lists.publishing[c.name]
	not function_call(c)
	words := allowlist.subcommand_words(c)
	some form in forms
	publishes(words, split(form, " "))
	not concat(" ", [c.name, form]) in allowlist.cfg.additional
}

publishes(words, form) if array.slice(words, 0, count(form)) == form

publish_finding(c) := lib.finding(effect, "publish.release", msg, c) if {
	effect := publish_effect
	msg := sprintf("%s publishes or pushes outside the sandbox: %s", [concat(" ", array.slice(c.argv, 0, min([count(c.argv), 3]))), publish_why])
}

publish_effect := "ask" if lib.sandboxed

else := "deny"

publish_why := "a human approves it" if lib.sandboxed

else := "the strict profile does not allow it"
