package cmdgate.tools.interpreters_test

import data.cmdgate.testlib as t

test_python_code_that_spawns_or_connects if {
	every code in [
		"import os;os.system('id')", "import subprocess", "import pty; pty.spawn('sh')", "import socket",
		"__import__('os')", "exec('1')", "eval('1')", "getattr(os, 'system')('id')", "import ctypes",
		"from os import system; system('id')", "os.popen('id')", "import urllib.request", "import requests",
		"import base64; base64.b64decode(x)", "import shutil; shutil.rmtree('/')", "os.execv('/bin/sh', [])",
	] {
		"escape.interpreter_code" in t.rules(t.run([["python3", "-c", code]]))
	}
}

test_python_everyday_code if {
	every code in ["print(1)", "import json,sys; print(json.load(sys.stdin)['a'])", "import re; print(re.compile('x').match('x'))", "import ast; ast.literal_eval('1')"] {
		t.run([["python3", "-c", code]]).action == "allow"
	}
}

test_python_modules if {
	"escape.interpreter_module" in t.rules(t.run([["python3", "-m", "http.server"]]))
	"escape.interpreter_module" in t.rules(t.run([["python", "-mhttp.server"]]))
	t.run([["python3", "-m", "pytest", "-q"]]).action == "allow"
	t.run([["python3", "-m", "venv", ".venv"]]).action == "allow"
}

test_secret_paths_in_code if {
	"secrets.read" in t.rules(t.run([["python3", "-c", "print(open('/etc/shadow').read())"]]))
	"secrets.read" in t.rules(t.run([["python3", "-c", "open(os.path.expanduser('~/.ssh/id_rsa'))"]]))
}

test_other_interpreters_when_allowed if {
	d := t.decide_config(t.script([["node", "-e", "require('child_process').execSync('id')"]]), {"allowed_commands": {"additional": ["node", "perl", "ruby", "php"]}})
	"escape.interpreter_code" in t.rules(d)
	d2 := t.decide_config(t.script([["perl", "-ne", "print if /x/; system('id')", "f"]]), {"allowed_commands": {"additional": ["perl"]}})
	"escape.interpreter_code" in t.rules(d2)
	d3 := t.decide_config(t.script([["node", "-e", "console.log(1)"]]), {"allowed_commands": {"additional": ["node"]}})
	d3.action == "allow"
}

test_in_place_edits if {
	d := t.decide_config(t.script([["perl", "-pi", "-e", "s/a/b/", "/etc/hosts"]]), {"allowed_commands": {"additional": ["perl"]}})
	"write.outside_workspace" in t.rules(d)
}

test_inline_writes_outside_workspace if {
	every argv in [
		["python3", "-c", `open("/etc/passwd", "a").write("x")`],
		["python3", "-c", `import pathlib; pathlib.Path('/tmp/x').write_text('y')`],
		["python", "-c", `import os; os.remove('../other/file')`],
		["node", "-e", `require("fs").writeFileSync("/etc/cron.d/x", "* * * * * id")`],
		["perl", "-e", `open(my $f, ">>", "/etc/hosts"); print $f "x"`],
		["ruby", "-e", `File.write("/tmp/x", "y")`],
		["php", "-r", `file_put_contents("/etc/x", "y");`],
		["python3", "-c", `open('~/.bashrc', 'w')`],
	] {
		d := t.run([argv])
		d.action == "deny"
		"write.outside_workspace" in t.rules(d)
	}
	every argv in [
		["python3", "-c", `open("out/report.txt", "w").write("x")`],
		["python3", "-c", `print(open("/etc/os-release").read())`],
		["python3", "-c", `import sys; open('/dev/null', 'w')`],
	] {
		t.run([argv]).action == "allow"
	}

	# node is not on the default allowlist; the write rule still stays quiet.
	not "write.outside_workspace" in t.rules(t.run([["node", "-e", `require("fs").writeFileSync("dist/x.json", "{}")`]]))
}

test_program_written_then_run if {
	writer := t.set(t.command(0, ["cat"]), {"redirects": [t.redirect(">", "x.py"), t.heredoc("import os\nos.system('id')\n")]})
	d := t.decide(t.doc([writer, t.command(1, ["python3", "x.py"])]))
	"escape.interpreter_code" in t.rules(d)
	tee := t.set(t.command(0, ["tee", "y.py"]), {"redirects": [t.heredoc("import socket\n")]})
	"escape.interpreter_code" in t.rules(t.decide(t.doc([tee, t.command(1, ["python3", "y.py"])])))
	ok := t.set(t.command(0, ["cat"]), {"redirects": [t.redirect(">", "x.py"), t.heredoc("print('hello')\n")]})
	t.decide(t.doc([ok, t.command(1, ["python3", "x.py"])])).action == "allow"

	# another file, or a file written after it runs
	t.decide(t.doc([writer, t.command(1, ["python3", "other.py"])])).action == "allow"
	t.decide(t.doc([t.command(0, ["python3", "x.py"]), object.union(writer, {"index": 1})])).action == "allow"
}
