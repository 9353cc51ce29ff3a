package cmdgate.checks.wildcards_test

import data.cmdgate.testlib as t

# globbed is a command whose operands with glob characters (or extended globs) are
# unquoted globs, as parse marks them, so the command has glob set.
globbed(argv) := t.set(c, {"glob": true, "operands": [object.union(o, {"glob": regex.match(`[*?\[]|^[@!+]\(`, o.text)}) | some o in c.operands]}) if {
	c := t.command(0, argv)
}

wildcard(argv) := "escape.wildcard_injection" in t.rules(t.decide(t.doc([globbed(argv)])))

test_globs_injecting_options_are_denied if {
	every argv in [
		["rm", "*"], ["rm", "-f", "*.o"], ["tar", "-cf", "a.tar", "*"], ["chmod", "644", "*"],
		["chown", "me", "*"], ["sed", "-i", "s/a/b/", "*"], ["cp", "*.txt", "build/"],
		["mv", "?x", "old/"], ["ln", "-s", "*", "links/"], ["rmdir", "*"], ["mkdir", "*"],
		["find", ".", "-name", "*.go"], ["find", "*", "-type", "f"], ["sort", "*.txt"],
		["awk", "*"], ["xargs", "*"], ["rsync", "*", "dst/"], ["zip", "a.zip", "*"],
		["7z", "a", "a.7z", "*"], ["unzip", "*.zip"], ["rg", "x", "*"], ["git", "grep", "x", "*"],
		["split", "*"], ["curl", "*"], ["make", "*"], ["gtar", "-cf", "a.tar", "*"], ["cd", "*"], ["pushd", "*"],
		["/usr/bin/rm", "*"], ["rm", "[!a]*"], ["rm", "[-a]*"], ["rm", "[[:alpha:]]*"],
		["rm", "@(a|b)"], ["rm", "!(keep)"], ["rm", "+(x)"], ["rm", "-rf*"], ["rm", "--forc?", "x"],
	] {
		wildcard(argv)
	}
}

test_safe_spellings_are_allowed if {
	every argv in [
		["rm", "./*"], ["rm", "--", "*.o"], ["rm", "build/*.o"], ["chmod", "644", "./*"],
		["tar", "-cf", "a.tar", "--", "*"], ["rm", "[a-z]*.o"], ["rm", "[0-9A-F_.]*"],
		["tar", "--exclude=*.o", "-cf", "a.tar", "src"], ["cp", "a.txt", "b.txt"],
	] {
		not wildcard(argv)
	}
}

test_tools_without_harmful_options_are_allowed if {
	every argv in [
		["ls", "*"], ["cat", "*.txt"], ["grep", "TODO", "*.go"], ["wc", "-l", "*.go"],
		["gofmt", "-l", "*.go"], ["head", "-n", "5", "*.md"], ["du", "-sh", "*"], ["echo", "*"],
		["git", "add", "*"], ["go", "vet", "*.go"],
	] {
		not wildcard(argv)
	}
	t.decide(t.doc([globbed(["ls", "*"])])).action == "allow"
	t.decide(t.doc([globbed(["grep", "TODO", "*.go"])])).action == "allow"
}

test_options_end_at_the_first_operand if {
	not wildcard(["awk", "{print $1}", "*.csv"])
	not wildcard(["awk", "-v", "x=1", "{print}", "*"])
	not wildcard(["xargs", "rm", "*"])
	wildcard(["xargs", "-n1", "*"])
	wildcard(["xargs", "-n", "1", "*"])
	wildcard(["awk", "-f", "prog.awk", "*"])
}

test_quoted_patterns_are_not_globs if {
	# parse leaves glob false for quoted words: find . -name '*.go'
	c := t.set(t.command(0, ["find", ".", "-name", "*.go"]), {"operands": [
		{"text": ".", "path": t.ws, "inside_workspace": true, "dynamic": false, "glob": false, "argi": 1},
		{"text": "*.go", "path": concat("/", [t.ws, "*.go"]), "inside_workspace": true, "dynamic": false, "glob": false, "argi": 3},
	]})
	t.decide(t.doc([c])).action == "allow"

	# and the command without glob is not looked at
	t.decide(t.script([["rm", "*"]])).action == "allow"
}

test_message_tells_the_safe_spelling if {
	some r in t.decide(t.doc([globbed(["rm", "*"])])).reasons
	r.rule == "escape.wildcard_injection"
	contains(r.message, "./*")
	contains(r.message, "-rf")
	some p in t.decide(t.doc([globbed(["find", ".", "-name", "*.go"])])).reasons
	contains(p.message, "quote it")
}
