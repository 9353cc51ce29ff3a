package cmdgate.checks.code_test

import data.cmdgate.testlib as t

code(argv) := "code.outside_workspace" in t.rules(t.run([argv]))

test_program_files_outside_the_workspace if {
	every argv in [
		["python3", "/tmp/x.py"], ["python3", "-u", "/tmp/x.py", "arg"], ["python", "../x.py"],
		["python3", "/usr/lib/python3/dist-packages/x.py"], ["python3.12", "/tmp/x.py"],
		["/usr/bin/python3", "/tmp/x.py"], ["python3", "~/x.py"],
		["go", "run", "/tmp/x.go"], ["go", "run", "/tmp/x.go", "a.go"], ["go", "run", "/tmp/cmd"],
		["go", "test", "/tmp/pkg"], ["go", "generate", "../other/..."], ["go", "-C", "/tmp", "test", "./..."],
		["go", "test", "-modfile=/tmp/go.mod", "./..."], ["go", "build", "-overlay", "/tmp/o.json", "./..."],
		["make", "-f", "/tmp/evil.mk"], ["make", "--file=/tmp/x.mk"], ["make", "-I", "/tmp/inc"], ["make", "--makef", "/tmp/m"],
		["awk", "-f", "/tmp/x.awk", "f"], ["sed", "-f", "/tmp/x.sed", "f"],
		["eslint", "--rulesdir", "/tmp/rules", "."], ["eslint", "-c", "/tmp/x.js", "src"],
		["eslint", "--resolve-plugins-relative-to", "/tmp", "."], ["prettier", "--plugin", "/tmp/p.js", "x"],
		["jest", "--config", "/tmp/jest.config.js"], ["mocha", "-r", "/tmp/hook.js"], ["mocha", "/tmp/test.js"],
		["pytest", "--rootdir=/"], ["pytest", "-c", "/tmp/pytest.ini"], ["pytest", "/tmp/tests"],
		["pytest", "--confcutdir", "/"], ["cargo", "build", "--manifest-path", "/tmp/Cargo.toml"],
		["cargo", "install", "--path", "/tmp/x"], ["mvn", "-f", "/tmp/pom.xml", "package"],
		["mvn", "--file=/tmp/pom.xml", "test"], ["gradle", "-b", "/tmp/b.gradle", "build"],
		["gradle", "--init-script", "/tmp/i.gradle", "build"], ["gradle", "-p", "/tmp", "build"],
		["cmake", "-S", "/tmp/src", "-B", "build"], ["cmake", "-P", "/tmp/x.cmake"], ["cmake", "/tmp/src"],
		["dotnet", "run", "--project", "/tmp/app"], ["dotnet", "/tmp/app.dll"],
		["npm", "--prefix", "/tmp", "run", "build"], ["npm", "install", "/tmp/pkg"],
		["pip", "install", "/tmp/pkg"], ["pip", "install", "-r", "/tmp/req.txt"], ["pip", "install", "-e", "../lib"],
		["tsc", "-p", "/tmp/tsconfig.json"], ["rubocop", "-r", "/tmp/cop.rb"],
		["mypy", "--python-executable", "/tmp/py", "src"], ["node", "/tmp/x.js"], ["node", "-r", "/tmp/h.js", "app.js"],
		["perl", "-I/tmp/lib", "x.pl"], ["ruby", "-r/tmp/x.rb", "-e", "1"], ["php", "-f", "/tmp/x.php"],
		["bash", "/tmp/x.sh"], ["bash", "--rcfile", "/tmp/rc", "-c", "ls"], ["source", "/tmp/x.sh"], [".", "/tmp/x.sh"],
		["deno", "run", "/tmp/x.ts"], ["python3", "-m", "pytest", "/tmp/t"], ["python3", "-m", "pip", "install", "/tmp/pkg"],
		["make", "-f", "$MK"], ["go", "run", "$X"],
	] {
		code(argv)
	}
}

test_program_files_inside_the_workspace if {
	every argv in [
		["python3", "script.py"], ["python3", "x.py", "/etc/hosts"], ["python3", "-m", "pytest", "-x", "tests/"],
		["python3", "-c", "print(1)", "/tmp/x"], ["python3", "-m", "http.server"],
		["go", "run", "./cmd/tool", "--help"], ["go", "run"], ["go", "vet", "/tmp/x"], ["go", "run", "main.go", "/tmp/out"], ["go", "run", ".", "/tmp/x"],
		["go", "test", "./..."], ["go", "test", "-args", "/tmp"], ["go", "build", "-o", "bin/app", "./cmd/app"],
		["make"], ["make", "-C", "build"], ["make", "-f", "build/Makefile", "all"],
		["pytest", "tests/", "-k", "not slow"], ["pytest", "-p", "xdist"], ["eslint", "src"],
		["npm", "install", "lodash"], ["npm", "run", "build", "--", "--out", "/tmp"],
		["pip", "install", "-r", "requirements.txt"], ["cmake", "-E", "copy", "/tmp/a", "b"], ["cmake", "-S", ".", "-B", "build"],
		["mvn", "-fae", "package"], ["dotnet", "test"], ["bash", "-c", "ls /tmp"], ["python3", "/dev/null"],
	] {
		not code(argv)
	}
}

test_dynamic_program_operand_is_left_to_dynamic_script if {
	rules := t.rules(t.run([["python3", "$S"]]))
	"dynamic.script" in rules
	not "code.outside_workspace" in rules
}

test_message if {
	some r in t.run([["python3", "/tmp/x.py"]]).reasons
	r.rule == "code.outside_workspace"
	contains(r.message, "/tmp/x.py, outside the workspace")
	some d in t.run([["make", "-f", "$MK"]]).reasons
	contains(d.message, "known only at run time")
}
