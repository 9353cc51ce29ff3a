package cmdgate.lib.interp_test

import data.cmdgate.lib
import data.cmdgate.testlib as t

python := data.cmdgate.lists.interpreters.python

test_shell_program if {
	lib.shell_program(t.command(0, ["bash", "-c", "ls"])) == "inline"
	lib.shell_program(t.command(0, ["bash", "-ec", "ls"])) == "inline"
	lib.shell_program(t.command(0, ["bash"])) == "stdin"
	lib.shell_program(t.command(0, ["bash", "-s", "--", "x"])) == "stdin"
	lib.shell_program(t.command(0, ["sh", "-"])) == "stdin"
	lib.shell_program(t.command(0, ["sh", "/dev/stdin"])) == "stdin"
	lib.shell_program(t.command(0, ["bash", "script.sh"])) == "file"
	lib.shell_program(t.command(0, ["bash", "-o", "pipefail", "script.sh"])) == "file"
	lib.shell_program(t.command(0, ["busybox", "sh"])) == "stdin"
}

test_interpreter_program if {
	lib.interpreter_program(t.command(0, ["python3", "-c", "x"]), python) == "inline"
	lib.interpreter_program(t.command(0, ["python3", "-Ic", "x"]), python) == "inline"
	lib.interpreter_program(t.command(0, ["python3", "-m", "pytest"]), python) == "inline"
	lib.interpreter_program(t.command(0, ["python3"]), python) == "stdin"
	lib.interpreter_program(t.command(0, ["python3", "-"]), python) == "stdin"
	lib.interpreter_program(t.command(0, ["python3", "-W", "ignore"]), python) == "stdin"
	lib.interpreter_program(t.command(0, ["python3", "-u", "x.py"]), python) == "file"
}

test_stdin_redirected_from_file if {
	lib.stdin_redirected_from_file(t.set(t.command(0, ["python3"]), {"redirects": [t.redirect("<", "x.py")]}))
	not lib.stdin_redirected_from_file(t.set(t.command(0, ["python3"]), {"redirects": [object.union(t.redirect("<", "x"), {"target": "/dev/stdin"})]}))
}
