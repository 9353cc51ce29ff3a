package linux_test

// The positive side of the escape tests: what builds and tests do inside the workspace
// works in the sandbox, with the results the process backend would give.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

func TestWork(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	if err := os.WriteFile(filepath.Join(ws, "input.txt"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		spec   executor.Spec // Dir defaults to the workspace
		stdout string
		stderr string
		exit   int
	}{
		{name: "here-doc into the workspace",
			spec:   executor.Spec{Script: "cat > heredoc.txt <<'EOF'\nline one\nline $two\nEOF\ncat heredoc.txt"},
			stdout: "line one\nline $two\n"},
		{name: "read a host file of the workspace", spec: executor.Spec{Script: "cat input.txt"}, stdout: "from the host\n"},
		{name: "read /etc/passwd", spec: executor.Spec{Script: "grep -c '^root:x:0:0:' /etc/passwd"}, stdout: "1\n"},
		{name: "list /usr/bin", spec: executor.Spec{Script: "ls /usr/bin | head -n 3 | wc -l"}, stdout: "3\n"},
		{name: "files in the workspace",
			spec: executor.Spec{Script: `mkdir -p a/b/c && echo x > a/b/c/f && mv a/b/c/f a/g && ln -s g a/l && ln a/g a/h &&
printf '#!/bin/sh\necho script ran\n' > s.sh && chmod +x s.sh && ./s.sh && cat a/l a/h && rm -r a && ls`},
			stdout: "script ran\nx\nx\nheredoc.txt\ninput.txt\ns.sh\nsub\n"},
		{name: "/tmp, /dev/shm and /dev/null",
			spec:   executor.Spec{Script: "echo t > /tmp/t && echo s > /dev/shm/s && echo gone > /dev/null && cat /tmp/t /dev/shm/s"},
			stdout: "t\ns\n"},
		{name: "HOME is writable", spec: executor.Spec{Script: "echo h > ~/h && cat ~/h && echo $HOME"}, stdout: "h\n/tmp/home\n"},
		{name: "2>&1", spec: executor.Spec{Script: "{ echo out; echo err >&2; } 2>&1"}, stdout: "out\nerr\n"},
		{name: "stderr apart", spec: executor.Spec{Script: "echo out; echo err >&2"}, stdout: "out\n", stderr: "err\n"},
		{name: "stdin", spec: executor.Spec{Script: "cat; echo", Stdin: "typed in"}, stdout: "typed in\n"},
		{name: "exit code", spec: executor.Spec{Script: "exit 3"}, exit: 3},
		{name: "killed by a signal", spec: executor.Spec{Script: "kill -TERM $$"}, exit: 143},
		{name: "direct", spec: executor.Spec{Argv: []string{"echo", "a  b", "$HOME"}, ShellMode: executor.ShellDirect}, stdout: "a  b $HOME\n"},
		{name: "argv through the shell", spec: executor.Spec{Argv: []string{"printf", "%s|", "a b", "'c'"}}, stdout: "a b|'c'|"},
		{name: "subdirectory", spec: executor.Spec{Script: "pwd", Dir: filepath.Join(ws, "sub")}, stdout: filepath.Join(ws, "sub") + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			if spec.Dir == "" {
				spec.Dir = ws
			}
			spec.Timeout = 20 * time.Second
			res, err := e.Run(context.Background(), spec)
			if err != nil {
				t.Fatalf("Run(%+v): %v", spec, err)
			}
			if res.Stdout != tt.stdout || res.ExitCode != tt.exit || !strings.Contains(res.Stderr, tt.stderr) ||
				tt.stderr == "" && res.Stderr != "" {
				t.Errorf("Run(%+v) = exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
					spec, res.ExitCode, res.Stdout, res.Stderr, tt.exit, tt.stdout, tt.stderr)
			}
		})
	}
	t.Run("loopback", func(t *testing.T) {
		// Without network, a command still talks to itself: test servers on 127.0.0.1.
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			testenv.Skip(t, "no /usr/bin/python3 to serve on the sandbox's loopback: %v", err)
		}
		res := run(t, e, ws, `/usr/bin/python3 -c '
import socket
s = socket.create_server(("127.0.0.1", 0))
c = socket.create_connection(s.getsockname())
s.accept()[0].sendall(b"over loopback")
print(c.recv(100).decode())'`)
		if res.ExitCode != 0 || res.Stdout != "over loopback\n" {
			t.Errorf("loopback: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
	if b, err := os.ReadFile(filepath.Join(ws, "heredoc.txt")); err != nil || string(b) != "line one\nline $two\n" {
		t.Errorf("the host reads heredoc.txt: %q, %v", b, err)
	}
}

func TestWorkErrors(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	file := filepath.Join(ws, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec executor.Spec
		want error
	}{
		{"no such command", executor.Spec{Argv: []string{"cmdgate-no-such-command"}, ShellMode: executor.ShellDirect, Dir: ws},
			executor.ErrCommandNotFound},
		// It exists on the host, not in the sandbox.
		{"the helper's host path", executor.Spec{Argv: []string{helper}, ShellMode: executor.ShellDirect, Dir: ws},
			executor.ErrCommandNotFound},
		{"directory outside the workspace", executor.Spec{Script: "true", Dir: t.TempDir()}, executor.ErrInvalidArgument},
		{"directory /", executor.Spec{Script: "true", Dir: "/"}, executor.ErrInvalidArgument},
		{"missing directory", executor.Spec{Script: "true", Dir: filepath.Join(ws, "missing")}, executor.ErrNotDirectory},
		{"directory is a file", executor.Spec{Script: "true", Dir: file}, executor.ErrNotDirectory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.spec.Timeout = 20 * time.Second
			res, err := e.Run(context.Background(), tt.spec)
			if !errors.Is(err, tt.want) {
				t.Errorf("Run(%+v) = %+v, %v; want %v", tt.spec, res, err, tt.want)
			}
		})
	}
}

// TestWorkBuilds runs what a coding agent runs: git, a C compiler, make.
func TestWorkBuilds(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	tests := []struct {
		name, script, stdout string
		need                 string
	}{
		{"git", `git -c init.defaultBranch=main init -q repo && cd repo && echo hi > a.txt && git add a.txt &&
git -c user.email=agent@example.com -c user.name=Agent commit -q -m first && git log --format=%s && git status --short`,
			"first\n", "git"},
		{"gcc", `mkdir c && cd c && printf '#include <stdio.h>\nint main(void) { puts("hello from c"); return 0; }\n' > hello.c &&
gcc -Wall -o hello hello.c && ./hello`, "hello from c\n", "gcc"},
		{"make", `mkdir m && cd m && printf 'hello: hello.c\n\tcc -o $@ $<\n\ntest: hello\n\t./hello | grep -q "from make" && echo tests passed\n' > Makefile &&
printf '#include <stdio.h>\nint main(void) { puts("hello from make"); return 0; }\n' > hello.c &&
make -s && make -s test`, "tests passed\n", "make"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testenv.NeedCommand(t, tt.need)
			res := run(t, e, ws, tt.script)
			if res.ExitCode != 0 || res.Stdout != tt.stdout {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want stdout %q", tt.name, res.ExitCode, res.Stdout, res.Stderr, tt.stdout)
			}
		})
	}
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		testenv.NeedCommand(t, "go")
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Fatalf("go env GOROOT: %v", err)
		}
		goroot := strings.TrimSpace(string(out))
		opts := linux.Options{Workspace: ws}
		if !under(goroot, linux.DefaultReadOnly) {
			opts.ExtraReadOnly = []string{goroot}
		}
		e, _ := newExecutor(t, opts)
		// A cold cache: the whole standard library the program needs is compiled here.
		script := `export PATH=` + goroot + `/bin:$PATH GOCACHE=/tmp/gocache GOPATH=/tmp/gopath GOTOOLCHAIN=local GOPROXY=off GOFLAGS= CGO_ENABLED=0
mkdir hello && cd hello && printf 'package main\n\nfunc main() { println("hello from go") }\n' > main.go &&
go mod init example.com/hello 2>/dev/null && go build -o hello . && ./hello 2>&1`
		res, err := e.Run(context.Background(), executor.Spec{Script: script, Dir: ws, Timeout: 90 * time.Second})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.ExitCode != 0 || res.Stdout != "hello from go\n" {
			t.Errorf("go build: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		if _, err := os.Stat(filepath.Join(ws, "hello", "hello")); err != nil {
			t.Errorf("the host does not see the binary: %v", err)
		}
	})
}

// under reports whether p lies in one of dirs.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// A timeout passes SIGTERM on to the command, so a command that stops on it is not kept
// for the kill grace (seen: every timed-out command answered 2 s late, because the init
// passed the signal on from a thread whose Landlock domain was not the command's).
func TestTimeoutTerminates(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{Config: executor.Config{KillGrace: 20 * time.Second}})
	for _, spec := range []executor.Spec{
		{Script: `trap 'echo got TERM; exit 3' TERM; sleep 60 & wait`},
		{Script: `sleep 60; echo not reached`},
		{Argv: []string{"sleep", "60"}, ShellMode: executor.ShellDirect},
	} {
		spec.Dir, spec.Timeout = ws, 300*time.Millisecond
		// The trap's output shows the command got SIGTERM; without it the grace's
		// SIGKILL ends the run, 20 s later and with no output.
		res, err := e.Run(context.Background(), spec)
		if err != nil || !res.TimedOut || res.ExitCode != 124 {
			t.Errorf("Run(%q) = %+v, %v; want timed out, exit 124, stopped by SIGTERM", spec.Script+strings.Join(spec.Argv, " "), res, err)
		}
		if strings.HasPrefix(spec.Script, "trap") && res.Stdout != "got TERM\n" {
			t.Errorf("Run(%q) stdout = %q: the command never saw SIGTERM", spec.Script, res.Stdout)
		}
	}
}

// An interrupted run (a job killed with INT) passes SIGINT on to the command: the init
// gets it from the executor as a stop message, not as a signal.
func TestInterruptPassesSIGINT(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{Config: executor.Config{KillGrace: 20 * time.Second}})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		// Once the trap is set: a SIGINT before it would end the shell by its default.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(ws, "trapped")); err == nil {
				cancel(executor.ErrInterrupt)
				return
			}
		}
	}()
	res, err := e.Run(ctx, executor.Spec{Script: `trap 'echo got INT; exit 5' INT; touch trapped; sleep 60 & wait`, Dir: ws, Timeout: time.Minute})
	if !errors.Is(err, executor.ErrInterrupt) {
		t.Errorf("Run = %v, want stopped by the interrupt", err)
	}
	if res.Stdout != "got INT\n" || res.ExitCode != 5 {
		t.Errorf("stdout %q, exit %d; want the trap's \"got INT\" and its exit 5 (without SIGINT the grace's SIGKILL ends the run, 20 s later)", res.Stdout, res.ExitCode)
	}
}

// The stop signals sent to a sandbox's init directly, by hand on the host or by the
// command, stop nothing: the init ignores them once the command runs (the executor
// asks it for its stops by message), and as pid 1 of its pid namespace it never sees an
// ignored signal. The command runs to its end.
func TestInitIgnoresStopSignals(t *testing.T) {
	t.Parallel()
	e, ws := newExecutor(t, linux.Options{})
	script := nsScript + `trap 'echo got TERM' TERM; trap 'echo got INT' INT; trap 'echo got HUP' HUP
until [ -e go ]; do sleep 0.02; done
kill -TERM 1; kill -INT 1; kill -HUP 1; kill -QUIT 1
sleep 0.2
echo done`
	running, wait := runAsync(e, executor.Spec{Script: script, Dir: ws, Timeout: 30 * time.Second})
	ino := sandboxNamespace(t, ws, running)
	init := 0
	for _, pid := range inNamespace(ino) {
		if nsPid(pid) == 1 {
			init = pid
		}
	}
	if init == 0 {
		t.Fatalf("no process of the pid namespace %d is its pid 1", ino)
	}
	// The init ignores them from the moment its command has started: wait for that, as
	// its status shows, rather than race it.
	stops := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ign := testenv.SigIgnored(init)
		if ign&sigMask(stops...) == sigMask(stops...) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the init %d does not ignore SIGTERM, SIGINT, SIGHUP and SIGQUIT (SigIgn %#x)", init, ign)
		}
	}
	for _, sig := range stops {
		if err := syscall.Kill(init, sig); err != nil {
			t.Fatalf("kill the init %d with %v: %v", init, sig, err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := wait()
	if err != nil || res.ExitCode != 0 || res.Stdout != "done\n" {
		t.Errorf("Run = %+v, %v; want exit 0 and only \"done\": the init passed a signal on or died of one", res, err)
	}
}

// sigMask is the status files' bit mask of sigs.
func sigMask(sigs ...syscall.Signal) uint64 {
	var m uint64
	for _, s := range sigs {
		m |= 1 << (uint(s) - 1)
	}
	return m
}

// nsPid is pid's number in its own pid namespace (the last of NSpid), or 0.
func nsPid(pid int) int {
	f := strings.Fields(testenv.StatusField(pid, "NSpid"))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[len(f)-1])
	return n
}

// TestWorkspaceOverHome: a workspace that covers the sandbox's default HOME, /tmp/home
// (the workspace /tmp itself, bound over the private /tmp, or one under /tmp/home),
// builds for every command, the probe's and the pool's included, and HOME is a writable
// directory there. Before, the init's mkdir of HOME failed on the second build over /tmp
// (the first had made it in the workspace) and on every build under /tmp/home (its
// mount point). Its workspaces are fixed host paths; what it makes there it removes.
func TestWorkspaceOverHome(t *testing.T) {
	const home = linux.SandboxHome
	if _, err := os.Lstat(home); errors.Is(err, os.ErrNotExist) {
		t.Cleanup(func() { os.Remove(home) }) // made by a sandbox or below; empty by then
	}
	under := filepath.Join(home, fmt.Sprintf("cmdgate-test-%d", os.Getpid()))
	if err := os.MkdirAll(under, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(under) })
	newExecutor(t, linux.Options{Pool: -1}) // skips where no sandbox can be built at all
	file := fmt.Sprintf("home-test-%d", os.Getpid())
	for _, ws := range []string{filepath.Dir(home), under} {
		t.Run(ws, func(t *testing.T) {
			e, err := linux.New(linux.Options{Workspace: ws, Helper: helper})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { e.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := e.Probe(ctx); err != nil {
				t.Fatalf("Probe: %v", err)
			}
			for i := range 3 {
				res := run(t, e, ws, "echo h > ~/"+file+" && cat ~/"+file+" && rm ~/"+file+" && echo $HOME")
				if res.ExitCode != 0 || res.Stdout != "h\n"+home+"\n" {
					t.Errorf("command %d: exit %d, stdout %q, stderr %q; want h and %s", i, res.ExitCode, res.Stdout, res.Stderr, home)
				}
			}
		})
	}
}

// TestWorkspaceRefused: New refuses, with the reason, a workspace the sandbox cannot
// bind as asked: not absolute, not a directory, holding a system directory (it would be
// writable), or inside /proc or /dev, which every sandbox mounts afresh (before, those
// two failed every build with an internal "mkdir: file exists").
func TestWorkspaceRefused(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ws, want string }{
		{"relative", "not an absolute path"},
		{file, "not a directory"},
		{"/", "contains the system directory"},
		{"/usr", "contains the system directory"},
		{"/dev/shm", "lies in /dev"},
		{"/proc/self", "lies in /proc"},
		{"/dev", "lies in /dev"},
	} {
		e, err := linux.New(linux.Options{Workspace: c.ws, Helper: helper})
		if err == nil {
			e.Close()
			t.Errorf("New(workspace %s) succeeded, want an error with %q", c.ws, c.want)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(workspace %s) error = %v, want one with %q", c.ws, err, c.want)
		}
	}
}
