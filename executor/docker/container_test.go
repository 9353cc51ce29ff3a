package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

func taskID() string {
	var b [8]byte
	rand.Read(b[:])
	return "test-" + hex.EncodeToString(b[:])
}

// taskContainer creates a task container for the test (of the test image, its guard
// too), removed at the end with its network and rules.
func taskContainer(t *testing.T, cli *client.Client, spec docker.ContainerSpec) (string, *docker.Executor) {
	t.Helper()
	if spec.TaskID == "" {
		spec.TaskID = taskID()
	}
	if spec.Image == "" {
		spec.Image = testenv.DockerImage()
	}
	if spec.GuardImage == "" {
		spec.GuardImage = testenv.DockerImage()
	}
	spec.Labels = map[string]string{"cmdgate.test": t.Name()} // what TestReap may reap is its own
	id, err := docker.CreateContainer(context.Background(), cli, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := docker.RemoveTask(context.Background(), cli, spec.TaskID); err != nil {
			t.Errorf("remove task %s: %v", spec.TaskID, err)
		}
	})
	e, err := docker.New(docker.Options{Client: cli, Container: id, Config: executor.Config{KillGrace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return id, e
}

func run(t *testing.T, e *docker.Executor, script string) executor.Result {
	t.Helper()
	res, err := e.Run(context.Background(), executor.Spec{Script: script, Dir: docker.Workspace + "/project", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res
}

// A task container runs its commands as a non-root user with no capability and no way
// to gain privileges, on a read-only root file system where only /workspace and /tmp
// are writable, under the memory and pids limits.
func TestTaskContainerIsolation(t *testing.T) {
	t.Parallel()
	cli := testenv.DockerEngine(t)
	id, e := taskContainer(t, cli, docker.ContainerSpec{Memory: 128 << 20, Pids: 64})
	insp, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil || insp.Container.Name != "/"+docker.NamePrefix+insp.Container.Config.Labels[docker.LabelTask] {
		t.Fatalf("container %+v, %v", insp.Container.Name, err)
	}
	if res := run(t, e, `id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status | tr -s '\t' ' '`); res.Stdout != "1000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nNoNewPrivs: 1\n" {
		t.Errorf("identity and privileges:\n%s", res.Stdout)
	}
	res := run(t, e, `touch /etc/x 2>/dev/null && echo etc; touch /usr/x 2>/dev/null && echo usr; touch /workspace/project/x && echo ws; touch /tmp/x && echo tmp; touch $HOME/x && echo home`)
	if res.Stdout != "ws\ntmp\nhome\n" {
		t.Errorf("writable places: %q; want only the workspace, /tmp and HOME under /workspace", res.Stdout)
	}
	// A memory bomb is killed, the container and its next command unharmed.
	// (tail keeps the last line, here 400 MB without a newline, in memory.)
	if res := run(t, e, `head -c 400m /dev/zero | tail -n 1 >/dev/null; echo "status $?"`); res.Stdout != "status 137\n" {
		t.Errorf("memory bomb: %+v", res)
	}
	// A fork bomb is contained by the pids limit.
	// A fork bomb is contained by the pids limit: the shell cannot start 200 processes
	// (what it started is killed with its command).
	res = run(t, e, `sh -c 'for i in $(seq 200); do sleep 30 & done; echo all started' 2>/dev/null; echo "bomb $?"`)
	if strings.Contains(res.Stdout, "all started") || !strings.Contains(res.Stdout, "bomb ") {
		t.Errorf("fork bomb: %+v", res)
	}
	if got := run(t, e, `echo alive`); got.Stdout != "alive\n" {
		t.Errorf("after the bombs: %+v", got)
	}
	if insp.Container.HostConfig.Resources.PidsLimit == nil || *insp.Container.HostConfig.Resources.PidsLimit != 64 ||
		insp.Container.HostConfig.Resources.Memory != 128<<20 || !insp.Container.HostConfig.ReadonlyRootfs {
		t.Errorf("host config %+v", insp.Container.HostConfig.Resources)
	}
}

// Creating a task's container again replaces the one left by an earlier attempt;
// removing it removes it with its volume; removing what is gone succeeds.
func TestTaskContainerLifecycle(t *testing.T) {
	t.Parallel()
	cli := testenv.DockerEngine(t)
	ctx := context.Background()
	task := taskID()
	first, _ := taskContainer(t, cli, docker.ContainerSpec{TaskID: task})
	second, e := taskContainer(t, cli, docker.ContainerSpec{TaskID: task, Network: "none"})
	if first == second {
		t.Fatal("the same container twice")
	}
	if _, err := cli.ContainerInspect(ctx, first, client.ContainerInspectOptions{}); err == nil {
		t.Errorf("the earlier container %s is still there", first)
	}
	if res := run(t, e, `cat /sys/class/net/*/operstate 2>/dev/null | wc -l; ls /sys/class/net`); !strings.Contains(res.Stdout, "lo") || strings.Contains(res.Stdout, "eth0") {
		t.Errorf("network none: %q", res.Stdout)
	}
	if err := docker.RemoveContainer(ctx, cli, second); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, second, client.ContainerInspectOptions{}); err == nil {
		t.Errorf("container %s not removed", second)
	}
	if err := docker.RemoveContainer(ctx, cli, second); err != nil {
		t.Errorf("removing a removed container: %v", err)
	}
	if _, err := docker.CreateContainer(ctx, cli, docker.ContainerSpec{TaskID: taskID(), User: "root"}); err == nil {
		t.Error("a root task container was created")
	}
}

// Reaping removes stale task containers and never one that is not cmdgate's, even
// named like one.
func TestReap(t *testing.T) {
	t.Parallel()
	cli := testenv.DockerEngine(t)
	ctx := context.Background()
	ours, _ := taskContainer(t, cli, docker.ContainerSpec{})
	foreignName := docker.ContainerName(taskID())
	foreign, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: foreignName,
		Config: &container.Config{Image: testenv.DockerImage(), Cmd: []string{"sleep", "infinity"}, Labels: map[string]string{"cmdgate.test": t.Name()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), foreign.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	})
	only := map[string]string{"cmdgate.test": t.Name()} // other tests' and real tasks' containers are not this test's to reap
	if removed, err := docker.Reap(ctx, cli, time.Now().Add(-time.Hour), only); err != nil || len(removed) != 0 {
		t.Errorf("reaping what is an hour old removed %v, %v", removed, err)
	}
	removed, err := docker.Reap(ctx, cli, time.Now().Add(time.Minute), only)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, ours, client.ContainerInspectOptions{}); err == nil {
		t.Errorf("the stale task container survived the reaping (removed %v)", removed)
	}
	if _, err := cli.ContainerInspect(ctx, foreign.ID, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("the foreign container was touched: %v", err)
	}
}
