// Package docker is the executor backend that runs each command in a running Docker
// container (a task's environment) through the Engine API, with the semantics of every backend (executor.Executor): the shell or argv as given,
// the working directory, standard input, output caps, a timeout that stops the
// command's whole process tree and answers 124, COMMAND_NOT_FOUND in direct mode, and
// nothing of the command left running once Run returns.
//
// The containers are a task's: CreateContainer makes one with seed 001's isolation (a
// non-root user, no capability, no-new-privileges, a read-only root with a /workspace
// volume and a /tmp tmpfs, CPU, memory and pids limits, cmdgate's labels and naming
// rule, the task's guarded network or none), RemoveContainer stops and removes it (10 s
// grace, three tries), RemoveTask removes it with its network and rules, and Reap
// removes stale ones, never anything that is not cmdgate's (container.go, network.go).
//
// # Network
//
// A task has the outside world by default (NetworkExternal: package installs), but
// never the host's own services nor the link-local metadata addresses; NetworkNone
// gives it no network at all, and the domain allowlist is refused (not available yet).
// The external network is a bridge of the task's own, NetworkName(task), with
// inter-container traffic off, whose host interface is "cgt" and 12 hex digits of a
// hash of the task's id. Before the task's container exists, a guard container (the
// guard image, DefaultImage unless given, run once as root with NET_ADMIN and NET_RAW
// in the engine host's network namespace, then removed) inserts at the top of the host's
// filter chains, with the iptables backend Docker uses, rules commented with the
// network's name:
//
//   - raw PREROUTING, before routing and address translation: what the bridge sends to
//     any address of the host (a published port included), to 169.254.0.0/16 (cloud
//     metadata), 127.0.0.0/8, 0.0.0.0/8 and 100.100.100.200 (Alibaba's metadata) is
//     dropped. Docker never rewrites this table.
//   - INPUT: everything from the bridge is dropped: the host's services on every address
//     of the host (the bridge's gateway, its other interfaces, its loopback), the
//     gateway's port and the engine's TCP ports among them. Docker's DNS (127.0.0.11)
//     lives in the container's own namespace and still answers, unless the engine's
//     upstream resolver is a service of the host on an address other than loopback.
//   - the top of FORWARD (not DOCKER-USER, whose jump Docker takes out and puts back
//     whenever a network comes or goes): the same ranges, and whatever was addressed to
//     the host and rewritten to another (a published port).
//   - The same with ip6tables when the host has IPv6: fe80::/10, ::1, ::,
//     ::ffff:0:0/96 and fd00:ec2::254 (AWS's metadata).
//
// Containers of different tasks are on different bridges, which Docker keeps apart.
// When the network or its rules cannot be made, the task does not start (fail closed);
// RemoveTask and Reap remove the rules (by their comment) before the network, so that a
// network left means rules may be left. It all goes through the Engine API, so it
// works with an engine elsewhere (DOCKER_HOST): no program runs on cmdgate's host.
// The rules live in the engine host's firewall: a flush of it (a firewall reload)
// drops them with Docker's own, and Docker's default address pools bound the task
// networks an engine can have at once (about 30: widen default-address-pools for
// more).
//
// It speaks to the engine with github.com/moby/moby/client (DOCKER_HOST and the other
// DOCKER_* variables are honoured by client.FromEnv). It never runs the docker CLI.
//
// # Process trees
//
// Each command runs under a small POSIX sh loop, a session's agent (session.go: a few
// long-lived execs per container, one command at a time each, so that a command does
// not pay for an exec), that starts it with setsid, so that it leads a process group of
// its own with the agent outside it, writes the group's id (in the container's pid
// namespace) to a file in /tmp, waits for it, then kills whatever of the group is left
// and writes an end marker with the command's status: a background job never outlives
// its command, as in the other backends, at no extra cost. A timeout or
// a cancel signals the group through a second exec in the container (TERM, then KILL
// after the grace), which works whether the engine runs here or elsewhere
// (DOCKER_HOST). The image needs setsid (util-linux or busybox); without it the
// command runs in the agent's group and stragglers are not killed. A process that
// starts a session of its own (setsid, a daemon) leaves the group, as in the other
// backends; what it prints later goes nowhere (output between commands is dropped), and
// a command that forges another command's end marker can only confuse its own task.
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
	"slices"
	"sync"
	"sync/atomic"
	"time"

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

	mu     sync.Mutex
	idle   []*session // sessions waiting for a command (session.go)
	closed bool
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

// notFound is the agent's exit status for a direct-mode command that does not exist.
const notFound = 227

// Run runs spec in the container; see the package documentation.
func (e *Executor) Run(ctx context.Context, spec executor.Spec) (executor.Result, error) {
	spec, err := e.cfg.Prepare(spec)
	if err != nil {
		return executor.Result{}, err
	}
	res := executor.Result{Cwd: spec.Dir, Command: echo(spec)}
	if ctx.Err() != nil {
		return res, fmt.Errorf("run in container: not started: %w", context.Cause(ctx))
	}
	dir := spec.Dir
	if dir == "" {
		dir = Project
	}
	mode, words := "shell", []string{spec.Script}
	if spec.ShellMode == executor.ShellDirect {
		mode, words = "direct", spec.Argv
	} else if spec.Script == "" {
		words = []string{executor.QuotePOSIX(spec.Argv)}
	}
	s, err := e.acquire(ctx)
	if err != nil {
		return res, err
	}
	var nonce, pid [16]byte
	rand.Read(nonce[:])
	rand.Read(pid[:])
	pidFile := "/tmp/.cmdgate-exec-" + hex.EncodeToString(pid[:])

	stdout, stderr := executor.NewCaptureKeep(spec.MaxOutputChars, spec.Keep), executor.NewCaptureKeep(spec.MaxOutputChars, spec.Keep)
	var outW, errW io.Writer = stdout, stderr
	if spec.Stdout != nil {
		outW = io.MultiWriter(stdout, tee{spec.Stdout})
	}
	if spec.Stderr != nil {
		errW = io.MultiWriter(stderr, tee{spec.Stderr})
	}
	so, se := s.begin(hex.EncodeToString(nonce[:]), outW, errW)
	start := time.Now()
	if err := s.send(hex.EncodeToString(nonce[:]), mode, pidFile, dir, words, spec.Stdin); err != nil {
		s.close()
		return res, engineError("send the command", err)
	}
	t := &tree{e: e, pidFile: pidFile}
	if spec.OnStart != nil {
		spec.OnStart()
	}

	// The command ends with both markers. When it is being stopped and they do not come
	// (the engine cannot be reached to signal it), the session is given up on.
	wd := executor.Watch(ctx, t, spec.Timeout, e.cfg.Grace())
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	timer := time.AfterFunc(spec.Timeout, halt)
	defer timer.Stop()
	defer context.AfterFunc(ctx, halt)()
	var giveUp <-chan time.Time
	ended, lost := false, false
	for !ended && !lost {
		select {
		case <-so.done:
			select {
			case <-se.done:
				ended = true
			case <-s.dead:
				lost = true
			case <-stop:
				if giveUp == nil {
					giveUp = time.After(e.cfg.Grace() + e.cfg.Delay() + 5*time.Second)
				}
				select {
				case <-se.done:
					ended = true
				case <-s.dead:
					lost = true
				case <-giveUp:
					lost = true
				}
			}
		case <-s.dead:
			lost = true
		case <-stop:
			stop = nil
			giveUp = time.After(e.cfg.Grace() + e.cfg.Delay() + 5*time.Second)
		case <-giveUp:
			lost = true
		}
	}
	t.done.Store(ended) // the agent killed what was left of the group
	closed := make(chan struct{})
	close(closed)
	out := wd.Exited(closed)
	if ended {
		e.release(s)
	} else {
		s.end()
		s.close()
	}
	stdout.Close()
	stderr.Close()
	res.SetOutput(stdout.Snapshot(), stderr.Snapshot())
	res.DurationMS = time.Since(start).Milliseconds()
	if !ended {
		return res, executor.Internal("docker: the command's session ended before the command", errors.New("no end marker"))
	}
	res.ExitCode = so.status
	switch {
	case res.ExitCode == notFound && spec.ShellMode == executor.ShellDirect && !out.TimedOut && out.Cause == nil:
		return executor.Result{}, &executor.Error{Code: executor.CodeCommandNotFound,
			Message: fmt.Sprintf("command %q not found in the container", spec.Argv[0])}
	case res.ExitCode == cdFailed && !out.TimedOut && out.Cause == nil:
		return executor.Result{}, &executor.Error{Code: executor.CodeNotDirectory,
			Message: fmt.Sprintf("cwd %s is not a directory in the container", dir)}
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

// tree is one command's process group in the container.
type tree struct {
	e       *Executor
	pidFile string
	done    atomic.Bool // the command ended: the agent killed what was left of the group
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
