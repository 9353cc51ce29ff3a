package cmdgate.checks.readonly_test

import data.cmdgate.testlib as t

# readonly_doc is a read-only language request reading path through the stages argvs.
readonly_doc(path, argvs) := object.union(t.pipeline(argvs), {
	"request": object.union(t.pipeline(argvs).request, {"source": "execute", "profile": "readonly"}),
	"readonly": {"command": "", "file": path, "path": path},
})

test_stages_allowed if {
	d := t.decide(readonly_doc("/w/docs/a.md", [["cat", "/w/docs/a.md"], ["nl"], ["grep", "-n", "TODO"], ["head", "-n", "5"]]))
	d.action == "allow"
}

test_other_command_denied if {
	d := t.decide(readonly_doc("/w/a.md", [["cat", "/w/a.md"], ["awk", "1"]]))
	d.action == "deny"
	"readonly.shape" in t.rules(d)
}

test_feature_denied if {
	base := readonly_doc("/w/a.md", [["cat", "/w/a.md"]])
	d := t.decide(object.union(base, {"features": {"command_substitution": true}}))
	d.action == "deny"
	"readonly.shape" in t.rules(d)
}

test_no_path_denied if {
	base := readonly_doc("/w/a.md", [["cat", "/w/a.md"]])
	d := t.decide(object.remove(base, ["readonly"]))
	d.action == "deny"
	"readonly.file" in t.rules(d)
}

# The other rules apply to what is read: a secret outside the workspace.
test_secret_outside_denied if {
	d := t.decide(readonly_doc("/home/u/.ssh/id_rsa", [["cat", "/home/u/.ssh/id_rsa"]]))
	d.action == "deny"
	"secrets.read" in t.rules(d)
}

# An ordinary script is not a read-only request: these rules say nothing of it.
test_scripts_untouched if {
	d := t.decide(t.script([["awk", "1", "a.md"]]))
	not "readonly.shape" in t.rules(d)
	not "readonly.file" in t.rules(d)
}
