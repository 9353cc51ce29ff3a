// Package docker is the executor backend that runs each command in a running Docker
// container (a task's environment) through the Engine API: an exec in the container,
// with the semantics of every backend (executor.Executor): the shell or argv as given,
// the working directory, standard input, output caps, a timeout that stops the
// command's whole process tree and answers 124, COMMAND_NOT_FOUND in direct mode, and
// nothing of the command left running once Run returns.
//
// The containers are a task's: CreateContainer makes one with seed 001's isolation (a
// non-root user, no capability, no-new-privileges, a read-only root with a /workspace
// volume and a /tmp tmpfs, CPU, memory and pids limits, cmdgate's labels and naming
// rule), RemoveContainer stops and removes it (10 s grace, three tries) and Reap removes
// stale ones, never a container that is not cmdgate's (container.go).
//
// It speaks to the engine with github.com/moby/moby/client (DOCKER_HOST and the other
// DOCKER_* variables are honoured by client.FromEnv). It never runs the docker CLI.
//
// # Process trees
//
// Each command runs under a small POSIX sh wrapper that starts it with setsid, so that
// it leads a process group of its own with the wrapper outside it, writes the group's
// id (in the container's pid namespace) to a file in /tmp, waits for it, then kills
// whatever of the group is left and exits with the command's status: a background job
// never outlives its command, as in the other backends, at no extra cost. A timeout or
// a cancel signals the group through a second exec in the container (TERM, then KILL
// after the grace), which works whether the engine runs here or elsewhere
// (DOCKER_HOST). The image needs setsid (util-linux or busybox); without it the
// command runs in the wrapper's group and stragglers are not killed. A process that
// starts a session of its own (setsid, a daemon) leaves the group, as in the other
// backends.
//
// The environment is the container's, plus Config.EnvSet: the gateway's own variables
// mean nothing inside a container.
package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/executor"
)

// Options configures an Executor.
type Options struct {
	// Client talks to the engine (client.New(client.FromEnv)).
	Client *client.Client
	// Container is the id or name of the running container commands run in.
	Container string
	// User runs the commands ("" : the container's user).
	User string
	// Config holds the limits (timeouts, output caps, EnvSet).
	Config executor.Config
}

// Executor runs commands in one container. It is safe for concurrent use.
type Executor struct {
	cli       *client.Client
	container string
	user      string
	cfg       executor.Config
}

var _ executor.Executor = (*Executor)(nil)

// New returns an Executor for the container of opts.
func New(opts Options) (*Executor, error) {
	if opts.Client == nil || opts.Container == "" {
		return nil, errors.New("docker executor: a client and a container are needed")
	}
	if err := opts.Config.Check(); err != nil {
		return nil, err
	}
	return &Executor{cli: opts.Client, container: opts.Container, user: opts.User, cfg: opts.Config}, nil
}

// notFound is the wrapper's exit status for a direct-mode command that does not exist.
const notFound = 227

// The wrapper ($0 the pid file, then "shell" SCRIPT or "direct" ARGV...) starts the
// command with setsid, so that it leads a process group (and session) of its own with
// the wrapper outside it, keeps its standard input (an asynchronous list's would be
// /dev/null), writes the group's id to the pid file, waits for the command, then kills
// whatever of the group is left and exits with the command's status.
const wrapper = `f=$0; m=$1; shift
exec 3<&0
s=; command -v setsid >/dev/null 2>&1 && s=setsid
if [ "$m" = direct ]; then
  command -v -- "$1" >/dev/null 2>&1 || exit 227
  $s "$@" <&3 3<&- &
elif command -v bash >/dev/null 2>&1; then
  $s bash -c "$1" <&3 3<&- &
else
  $s sh -c "$1" <&3 3<&- &
fi
c=$!
exec 3<&-
echo $c >"$f"
wait $c; r=$?
kill -s KILL -- "-$c" 2>/dev/null
rm -f "$f"
exit $r`

// Run runs spec in the container; see the package documentation.
func (e *Executor) Run(ctx context.Context, spec executor.Spec) (executor.Result, error) {
	spec, err := e.cfg.Prepare(spec)
	if err != nil {
		return executor.Result{}, err
	}
	res := executor.Result{Cwd: spec.Dir, Command: echo(spec)}
	var nonce [8]byte
	rand.Read(nonce[:])
	pidFile := "/tmp/.cmdgate-exec-" + hex.EncodeToString(nonce[:])
	cmd := []string{"sh", "-c", wrapper, pidFile, "shell", spec.Script}
	if spec.ShellMode == executor.ShellDirect {
		cmd = append([]string{"sh", "-c", wrapper, pidFile, "direct"}, spec.Argv...)
	} else if spec.Script == "" {
		cmd[5] = executor.QuotePOSIX(spec.Argv)
	}
	env := make([]string, 0, len(e.cfg.EnvSet))
	for _, k := range slices.Sorted(maps.Keys(e.cfg.EnvSet)) {
		env = append(env, k+"="+e.cfg.EnvSet[k])
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("run in container: not started: %w", context.Cause(ctx))
	}
	start := time.Now()
	created, err := e.cli.ExecCreate(ctx, e.container, client.ExecCreateOptions{
		User: e.user, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Env: env, WorkingDir: spec.Dir, Cmd: cmd,
	})
	if err != nil {
		return res, engineError("create the exec", err)
	}
	att, err := e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return res, engineError("start the exec", err)
	}
	defer att.Close()
	t := &tree{e: e, exec: created.ID, pidFile: pidFile}
	if spec.OnStart != nil {
		spec.OnStart()
	}

	// Standard input, then end of file.
	go func() {
		if spec.Stdin != "" {
			io.WriteString(att.Conn, spec.Stdin)
		}
		att.CloseWrite()
	}()
	stdout, stderr := executor.NewCapture(spec.MaxOutputChars), executor.NewCapture(spec.MaxOutputChars)
	var outW, errW io.Writer = stdout, stderr
	if spec.Stdout != nil {
		outW = io.MultiWriter(stdout, tee{spec.Stdout})
	}
	if spec.Stderr != nil {
		errW = io.MultiWriter(stderr, tee{spec.Stderr})
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		stdcopy.StdCopy(outW, errW, att.Reader) // ends with the stream
	}()

	wd := executor.Watch(ctx, t, spec.Timeout, e.cfg.Grace())
	code, werr := t.waitExit(context.WithoutCancel(ctx), drained)
	out := wd.Exited(drained)
	// The output is complete once the stream ended; a process that left the group
	// (setsid) is not waited for beyond WaitDelay.
	select {
	case <-drained:
	case <-time.After(e.cfg.Delay()):
		att.Close()
		<-drained
	}
	stdout.Close()
	stderr.Close()
	so, se := stdout.Snapshot(), stderr.Snapshot()
	res.Stdout, res.StdoutTruncated, res.StdoutBytes = so.Text, so.Truncated, so.Bytes
	res.Stderr, res.StderrTruncated, res.StderrBytes = se.Text, se.Truncated, se.Bytes
	res.DurationMS = time.Since(start).Milliseconds()
	res.ExitCode = code
	if werr != nil {
		return res, engineError("wait for the command", werr)
	}
	if code == notFound && spec.ShellMode == executor.ShellDirect && !out.TimedOut && out.Cause == nil {
		return executor.Result{}, &executor.Error{Code: executor.CodeCommandNotFound,
			Message: fmt.Sprintf("command %q not found in the container", spec.Argv[0])}
	}
	if out.TimedOut {
		res.TimedOut, res.ExitCode = true, 124
	}
	if out.Err != nil {
		return res, executor.Internal("stop the command's processes", out.Err)
	}
	if out.Cause != nil {
		return res, fmt.Errorf("run in container: stopped: %w", out.Cause)
	}
	return res, nil
}

// tee passes output on to a Spec's tee and never fails the copy.
type tee struct{ w io.Writer }

func (t tee) Write(p []byte) (int, error) { t.w.Write(p); return len(p), nil }

// echo is the Result's Command: the request as given.
func echo(spec executor.Spec) []string {
	if spec.Script != "" {
		return []string{spec.Script}
	}
	return slices.Clone(spec.Argv)
}

// engineError is an error of the engine, as INTERNAL with what was being done.
func engineError(what string, err error) error {
	return executor.Internal("docker: "+what, err)
}

// tree is one exec's command, its process group in the container.
type tree struct {
	e       *Executor
	exec    string
	pidFile string
	done    atomic.Bool // the wrapper exited: it killed what was left of the group
}

// waitExit waits until the exec's wrapper has exited (the engine says it no longer
// runs) and returns its exit code.
func (t *tree) waitExit(ctx context.Context, drained <-chan struct{}) (int, error) {
	poll := 2 * time.Millisecond
	for {
		select {
		case <-drained:
			poll = time.Millisecond // the stream ended: the exit is a moment away
		case <-time.After(poll):
			poll = min(2*poll, 100*time.Millisecond)
		}
		insp, err := t.e.cli.ExecInspect(ctx, t.exec, client.ExecInspectOptions{})
		if err != nil {
			return 0, err
		}
		if !insp.Running {
			t.done.Store(true)
			return insp.ExitCode, nil
		}
	}
}

// Terminate sends SIGTERM to the group; Interrupt SIGINT; Kill SIGKILL. Once the
// wrapper has exited there is nothing to signal: it killed the rest of the group.
func (t *tree) Terminate() error { return t.signal("TERM") }
func (t *tree) Interrupt() error { return t.signal("INT") }
func (t *tree) Kill() error      { return t.signal("KILL") }

// signal signals the group through the engine: an exec reads the pid file and sends
// the signal, so that it works whether the engine runs here or not (DOCKER_HOST).
func (t *tree) signal(sig string) error {
	if t.done.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := fmt.Sprintf(`p=$(cat %s 2>/dev/null) && [ -n "$p" ] && kill -s %s -- "-$p" 2>/dev/null; exit 0`, t.pidFile, sig)
	created, err := t.e.cli.ExecCreate(ctx, t.e.container, client.ExecCreateOptions{User: t.e.user, Cmd: []string{"sh", "-c", script}})
	if err != nil {
		return err
	}
	_, err = t.e.cli.ExecStart(ctx, created.ID, client.ExecStartOptions{})
	return err
}
