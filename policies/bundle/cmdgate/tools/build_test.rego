package cmdgate.tools.build_test

import data.cmdgate.testlib as t

test_go_exec_options if {
	every argv in [["go", "test", "-exec", "x", "./..."], ["go", "build", "-toolexec=x", "./..."], ["go", "vet", "-vettool=x", "./..."], ["go", "build", "--toolexec", "x"], ["go", "build", "-ldflags=-extld=/tmp/ld", "."], ["go", "build", "-ldflags", "-linkmode external -extld /tmp/ld", "."]] {
		"escape.go_exec" in t.rules(t.run([argv]))
	}
	t.run([["go", "test", "-run", "TestExec", "./..."]]).action == "allow"
	t.run([["go", "build", "-ldflags=-s -w -X main.version=1", "."]]).action == "allow"
}

test_go_env_write if {
	"write.tool_config" in t.rules(t.run([["go", "env", "-w", "GOFLAGS=x"]]))
	t.run([["go", "env", "GOPATH"]]).action == "allow"
}

test_cargo_config if {
	"escape.cargo_config" in t.rules(t.run([["cargo", "--config", "x", "build"]]))
}

test_make_eval if {
	"escape.make_eval" in t.rules(t.run([["make", "--eval=$(shell id)"]]))
	"escape.make_eval" in t.rules(t.run([["make", "-E", "x"]]))
	t.run([["make", "CFLAGS=-O2", "all"]]).action == "allow"
}

test_maven_exec if {
	"escape.maven_exec" in t.rules(t.run([["mvn", "exec:exec"]]))
	"escape.maven_exec" in t.rules(t.run([["maven", "antrun:run"]]))
	t.run([["mvn", "test"]]).action == "allow"
}

test_global_installs_and_config if {
	"write.outside_workspace" in t.rules(t.run([["npm", "install", "-g", "x"]]))
	"write.outside_workspace" in t.rules(t.run([["yarn", "global", "add", "x"]]))
	"write.outside_workspace" in t.rules(t.run([["pip", "install", "--user", "x"]]))
	"write.outside_workspace" in t.rules(t.run([["pip3", "install", "--target", "/opt/x", "y"]]))
	"write.tool_config" in t.rules(t.run([["npm", "config", "set", "x", "y"]]))
	"write.tool_config" in t.rules(t.run([["pip", "config", "set", "x", "y"]]))
	"escape.npm_script_shell" in t.rules(t.run([["npm", "--script-shell=/tmp/x", "test"]]))
	t.run([["npm", "config", "get", "registry"]]).action == "allow"
}

test_wrapped_commands if {
	"forbidden.command" in t.rules(t.run([["bundle", "exec", "sudo", "x"]]))
	"escape.wrapped_shell" in t.rules(t.run([["conda", "run", "-n", "e", "bash", "-c", "x"]]))
	"allowlist.unknown_command" in t.rules(t.run([["npm", "exec", "--", "cowsay"]]))
	t.run([["bundle", "exec", "rspec"]]).action == "allow"
	t.run([["bundle", "install"]]).action == "allow"
}

test_make_variables if {
	"escape.make_variable" in t.rules(t.run([["make", "SHELL=/bin/sh -c id"]]))
	"escape.make_variable" in t.rules(t.run([["make", ".SHELLFLAGS=-c id;"]]))
	"escape.make_variable" in t.rules(t.run([["make", "MAKEFLAGS=--eval=x"]]))
	"escape.make_variable" in t.rules(t.run([["make", "MAKE=sh -c id", "all"]]))
	"escape.make_variable" in t.rules(t.run([["make", "X!=id"]]))
	"escape.make_variable" in t.rules(t.run([["make", "X:=$(shell id)"]]))
	"escape.make_variable" in t.rules(t.run([["make", "X=`id`"]]))
	"escape.make_variable" in t.rules(t.run([["make", "GO=sh -c 'id'", "build"]]))
	"escape.make_variable" in t.rules(t.run([["make", "RUN=a; id"]]))
	"env.dangerous" in t.rules(t.run([["make", "PATH=/tmp/bin"]]))
	"env.dangerous" in t.rules(t.run([["make", "CC=/tmp/evil"]]))
	t.run([["make", "CC=clang", "VERSION=1.2.3", "-j4", "all"]]).action == "allow"
	t.run([["make", "CFLAGS=-O2 -g", "PREFIX=/usr/local"]]).action == "allow"
	t.run([["make", "OUT=$(CURDIR)/build"]]).action == "allow"
}

test_cmake_command_mode if {
	"escape.cmake_command" in t.rules(t.run([["cmake", "-E", "env", "X=1", "sh", "-c", "id"]]))
	"escape.cmake_command" in t.rules(t.run([["cmake", "-E", "chdir", "/tmp", "id"]]))
	"forbidden.rm_recursive_force" in t.rules(t.run([["cmake", "-E", "rm", "-rf", "build"]]))
	"destructive.rm_recursive" in t.rules(t.run([["cmake", "-E", "remove_directory", "build"]]))
	"write.outside_workspace" in t.rules(t.run([["cmake", "-E", "copy", "x", "/etc/x"]]))
	"write.outside_workspace" in t.rules(t.run([["cmake", "-E", "make_directory", "/tmp/x"]]))
	t.run([["cmake", "-E", "make_directory", "build"]]).action == "allow"
	t.run([["cmake", "-E", "echo", "/etc/hosts"]]).action == "allow"
	t.run([["cmake", "-S", ".", "-B", "build"]]).action == "allow"
}

test_composer_exec if {
	"escape.wrapped_shell" in t.rules(t.run([["composer", "exec", "sh"]]))
	"allowlist.unknown_command" in t.rules(t.run([["composer", "exec", "phpstan"]]))
}
