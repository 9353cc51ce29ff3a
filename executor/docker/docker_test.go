package docker_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// startContainer runs a container of the test image that sleeps, removed at the end.
func startContainer(t testing.TB, cli *client.Client) string {
	t.Helper()
	ctx := context.Background()
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: testenv.DockerImage(), Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{"cmdgate.test": t.Name()}},
		HostConfig: &container.HostConfig{Init: new(bool)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func newExecutor(t testing.TB) (*docker.Executor, *client.Client, string) {
	t.Helper()
	cli := testenv.DockerEngine(t)
	id := startContainer(t, cli)
	e, err := docker.New(docker.Options{Client: cli, Container: id, Config: executor.Config{KillGrace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return e, cli, id
}

// processes lists the container's processes other than its init (pid 1), the
// executor's sessions (which wait for the next command) and the listing itself, as
// `pid command` lines.
func processes(t testing.TB, e *docker.Executor) []string {
	t.Helper()
	res, err := e.Run(context.Background(), executor.Spec{Dir: "/", Timeout: 30 * time.Second,
		Script: `for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] && continue; c=$(tr '\0' ' ' < $d/cmdline 2>/dev/null); case "$c" in *" cmdgate-session "|*cmdgate-exec*|"") continue;; esac; echo "$p $c"; done`})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if l != "" && !strings.Contains(l, "/proc/[0-9]") {
			out = append(out, l)
		}
	}
	return out
}

// A command runs in the container as exec_command runs it: script or argv, the
// working directory, standard input, both streams, the exit code.
func TestRun(t *testing.T) {
	t.Parallel()
	e, _, _ := newExecutor(t)
	ctx := context.Background()
	res, err := e.Run(ctx, executor.Spec{Script: `cat; echo "in $(pwd) as $(id -un)"; echo oops >&2; exit 3`, Dir: "/tmp", Stdin: "from stdin\n"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "from stdin\nin /tmp as agent\n" || res.Stderr != "oops\n" || res.ExitCode != 3 || res.Cwd != "/tmp" || res.TimedOut {
		t.Errorf("result %+v", res)
	}
	res, err = e.Run(ctx, executor.Spec{Argv: []string{"printf", "%s|", "a b", "$HOME"}, ShellMode: executor.ShellDirect, Dir: "/"})
	if err != nil || res.Stdout != "a b|$HOME|" || res.ExitCode != 0 {
		t.Errorf("direct argv: %+v, %v", res, err)
	}
	res, err = e.Run(ctx, executor.Spec{Argv: []string{"echo", "it's", "$x"}, Dir: "/"})
	if err != nil || res.Stdout != "it's $x\n" {
		t.Errorf("argv through the shell: %+v, %v", res, err)
	}
	_, err = e.Run(ctx, executor.Spec{Argv: []string{"no-such-command-xyz"}, ShellMode: executor.ShellDirect, Dir: "/"})
	var xe *executor.Error
	if !errors.As(err, &xe) || xe.Code != executor.CodeCommandNotFound {
		t.Errorf("a missing command in direct mode: %v; want COMMAND_NOT_FOUND", err)
	}
	res, err = e.Run(ctx, executor.Spec{Script: `head -c 5000 /dev/zero | tr '\0' x`, Dir: "/", MaxOutputChars: 1000})
	if err != nil || len(res.Stdout) != 1000 || !res.StdoutTruncated || res.StdoutBytes != 5000 {
		t.Errorf("capped output: %d chars, truncated %v, %d bytes, %v", len(res.Stdout), res.StdoutTruncated, res.StdoutBytes, err)
	}
}

// A timeout stops the command's whole tree in the container, children that ignore
// TERM included, and answers 124; nothing of it is left running, and a background job
// of a command that ended by itself does not outlive it either.
func TestTimeoutLeavesNothing(t *testing.T) {
	t.Parallel()
	e, _, _ := newExecutor(t)
	start := time.Now()
	res, err := e.Run(context.Background(), executor.Spec{Dir: "/", Timeout: 500 * time.Millisecond,
		Script: `trap '' TERM; (trap '' TERM; sleep 1001) & sleep 1002 & echo started; wait`})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 124 || res.Stdout != "started\n" || time.Since(start) > 20*time.Second {
		t.Errorf("timed-out run: %+v after %v", res, time.Since(start))
	}
	if left := processes(t, e); len(left) > 0 {
		t.Errorf("processes left in the container after the timeout: %q", left)
	}
	res, err = e.Run(context.Background(), executor.Spec{Dir: "/", Script: `sleep 1003 & echo done`})
	if err != nil || res.ExitCode != 0 || res.Stdout != "done\n" {
		t.Errorf("a command leaving a background job: %+v, %v", res, err)
	}
	if left := processes(t, e); len(left) > 0 {
		t.Errorf("a background job outlived its command: %q", left)
	}
}

// A cancelled context stops the command like a timeout (a client gone, a job killed);
// ErrKillNow kills at once.
func TestCancel(t *testing.T) {
	t.Parallel()
	e, _, _ := newExecutor(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(executor.ErrKillNow) })
	res, err := e.Run(ctx, executor.Spec{Dir: "/", Script: `trap '' TERM; sleep 1004`})
	if !errors.Is(err, executor.ErrKillNow) || res.TimedOut {
		t.Errorf("cancelled run: %+v, %v", res, err)
	}
	if left := processes(t, e); len(left) > 0 {
		t.Errorf("processes left after the kill: %q", left)
	}
}

// BenchmarkDockerExec is `true` run in a ready container through the executor (exec
// create, attach, wait, the group killed after) beside `docker exec NAME true`, the
// CLI, in one run.
func BenchmarkDockerExec(b *testing.B) {
	e, _, id := newExecutor(b)
	b.Run("executor", func(b *testing.B) {
		for b.Loop() {
			if res, err := e.Run(context.Background(), executor.Spec{Argv: []string{"true"}, ShellMode: executor.ShellDirect, Dir: "/"}); err != nil || res.ExitCode != 0 {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("docker-cli", func(b *testing.B) {
		docker := testenv.NeedCommand(b, "docker")
		for b.Loop() {
			if out, err := exec.Command(docker, "exec", id, "true").CombinedOutput(); err != nil {
				b.Fatalf("docker exec: %v %s", err, out)
			}
		}
	})
}
