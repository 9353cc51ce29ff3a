//go:build linux

// Command spawnfloor is the least a sandboxed run built of Go programs pays, with no
// sandbox in it: the benchmarks' floor for `cmdgate sandbox run` and for a cold
// sandbox (BenchmarkSandboxRun/floor, BenchmarkSandbox/linux_floor). It plays the
// parts cmdgate's programs play, by its first argument, and runs the command after
// "--":
//
//	cli     replaces itself with `spawnfloor runner` (cmdgate handing a run over to
//	        cmdgate-sandbox)
//	runner  starts `spawnfloor init` in new user, mount, pid, network, IPC and UTS
//	        namespaces, as the linux backend starts its init, and waits for it
//	init    replaces itself with the command (the init, once the sandbox is built)
//	spawner for each byte read from its standard input, starts `spawnfloor init` as
//	        runner does and writes the byte back once it has ended (the linux
//	        backend's spawner, which starts the inits of the gateway's sandboxes): the
//	        floor of a cold sandbox
//
// Nothing is mounted, confined or measured: what it costs is three Go program starts,
// the clone into the namespaces and the command's exec, each of which a Go
// implementation of the sandbox cannot avoid.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
)

func main() {
	i := slices.Index(os.Args, "--")
	if len(os.Args) < 2 || i < 0 || i == len(os.Args)-1 {
		fail(fmt.Errorf("usage: spawnfloor cli|runner|spawner|init -- COMMAND [ARG...]"))
	}
	command := os.Args[i+1:]
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	init := func(stdout *os.File) error {
		cmd := exec.Command(self, append([]string{"init", "--"}, command...)...)
		cmd.Stdout, cmd.Stderr = stdout, os.Stderr
		cmd.SysProcAttr = Namespaces()
		return cmd.Run()
	}
	switch os.Args[1] {
	case "cli":
		fail(syscall.Exec(self, append([]string{self, "runner", "--"}, command...), os.Environ()))
	case "runner":
		if err := init(os.Stdout); err != nil {
			fail(err)
		}
	case "spawner":
		b := make([]byte, 1)
		for {
			if _, err := os.Stdin.Read(b); err != nil {
				return // the benchmark is done
			}
			if err := init(nil); err != nil {
				fail(err)
			}
			if _, err := os.Stdout.Write(b); err != nil {
				fail(err)
			}
		}
	case "init":
		path, err := exec.LookPath(command[0])
		if err != nil {
			fail(err)
		}
		fail(syscall.Exec(path, command, os.Environ()))
	default:
		fail(fmt.Errorf("unknown part %q", os.Args[1]))
	}
}

// Namespaces are the attributes with which the runner starts the init: new user,
// mount, pid, network, IPC and UTS namespaces, the caller's user and group mapped.
func Namespaces() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "spawnfloor:", err)
	os.Exit(1)
}
