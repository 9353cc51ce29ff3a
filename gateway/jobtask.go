//go:build unix

package gateway

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/jobs"
)

// Jobs in task containers: a job whose task is a task's id runs in that task's
// container, through the job host's own client of the engine and an executor per
// container (its sessions outlive each job). The host reads the task from the state
// store, as the gateway that decided the job left it.

// hostTasks are a job host's means to run jobs in tasks; nil when tasks are off.
type hostTasks struct {
	cli    *client.Client
	ownCli bool
	state  *stateStore

	mu    sync.Mutex
	execs map[string]*docker.Executor // by container id
}

// openHostTasks connects a job host to the engine and the state store when tasks are
// on.
func openHostTasks(ctx context.Context, opts Options) (*hostTasks, error) {
	if !opts.Tasks.Enabled {
		return nil, nil
	}
	t := &hostTasks{cli: opts.Tasks.Client, execs: map[string]*docker.Executor{}}
	if t.cli == nil {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			return nil, fmt.Errorf("tasks: docker client: %w", err)
		}
		t.cli, t.ownCli = cli, true
	}
	state, err := openStateStore(ctx, opts.DataDir)
	if err != nil {
		t.close()
		return nil, err
	}
	t.state = state
	return t, nil
}

func (t *hostTasks) close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	for _, e := range t.execs {
		e.Close()
	}
	t.mu.Unlock()
	if t.state != nil {
		t.state.close()
	}
	if t.ownCli {
		t.cli.Close()
	}
}

// jobRunnerFor is the executor of job j: the host's backend, or the container of the
// task j names. A task that is not ready, not the job's principal's, or gone fails the
// job (fail closed: never on the host instead).
func (h *jobHost) jobRunnerFor(ctx context.Context, j *jobs.Job) (executor.Executor, error) {
	if h.tasks == nil || uuid.Validate(j.Task) != nil {
		if h.opts.Sandbox == SandboxDocker {
			return nil, fmt.Errorf("not started: this gateway runs commands in task containers only, and the job names no task")
		}
		return h.runner, nil
	}
	t, err := h.tasks.state.task(ctx, j.Task)
	if err != nil {
		return nil, fmt.Errorf("not started: task %s: %w", j.Task, err)
	}
	if t.Principal.Name != j.Principal && j.Role != string(RoleAdmin) {
		return nil, fmt.Errorf("not started: task %s is not %s's", t.ID, j.Principal)
	}
	if t.State != TaskReady && t.State != TaskRunning {
		return nil, fmt.Errorf("not started: task %s is %s", t.ID, t.State)
	}
	h.tasks.mu.Lock()
	defer h.tasks.mu.Unlock()
	if e := h.tasks.execs[t.ContainerID]; e != nil {
		return e, nil
	}
	cfg := taskConfig(h.opts.Executor, t)
	cfg.MaxTimeout, cfg.EnvSet = noRunLimit, docker.TaskEnv()
	e, err := docker.New(docker.Options{Client: h.tasks.cli, Container: t.ContainerID, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("not started: task %s: %w", t.ID, err)
	}
	h.tasks.execs[t.ContainerID] = e
	return e, nil
}
