package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// End-to-end test of `cmdgate task` through the real program: a `cmdgate serve` with
// tasks on the real Docker engine of the machine (jobserve_test.go's harness), a
// repository served with a token by a git smart-HTTP server in a network namespace
// that stands for the internet (testenv.Outside), and `cmdgate task` and `cmdgate exec
// --task` as its clients.

// taskCLI runs cmdgate as a client with the token and answers the one JSON object it
// printed on stdout (anything else on stdout fails the test), its stderr and its exit
// status.
func taskCLI(t *testing.T, e *jsEnv, token string, args ...string) (map[string]any, string, int) {
	t.Helper()
	var extra []string
	if token != "" {
		extra = append(extra, "CMDGATE_TOKEN="+token)
	}
	out, stderr, code := e.run(t, extra, args...)
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&obj); err != nil || dec.More() || !bytes.HasSuffix(out, []byte("}\n")) || bytes.Count(out, []byte("\n")) != 1 {
		t.Fatalf("cmdgate %s: stdout is not one JSON object on one line (%v):\n%s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
	}
	return obj, stderr, code
}

// A task through the CLI: create (waiting until ready) with flags that reach the task
// document, list, show, run a command in it with exec --task, and rm: the container is
// gone. Another agent gets NOT_FOUND; what the gateway refuses is an answer (exit 0,
// ok false, the code); no token is UNAUTHENTICATED with a hint on stderr.
func TestTaskCLI(t *testing.T) {
	cli := testenv.DockerEngine(t)
	o := testenv.NewOutside(t)
	ln := o.Listen(t)
	const token = "ghp_cliTOKENtokenTOKEN0123456789"
	g := testenv.NewGitServer(t, ln, token)
	repo := g.Repo(t, "app", map[string]string{"README": "hello from the CLI's task\n"})
	e := jsNewEnv(t, "tasks:\n  enabled: true\n  docker:\n    base_image: "+testenv.DockerImage()+
		"\n  clone:\n    github_hosts: [\"http://"+ln.Addr().String()+"\"]\n    gitlab_hosts: []\n")
	e.env = append(e.env, "GITHUB_PERSONAL_ACCESS_TOKEN="+token)
	alice, bob, admin := e.token(t, "agent", "alice"), e.token(t, "agent", "bob"), e.token(t, "admin", "root")
	gw := e.serve(t)
	e.env = append(e.env, "CMDGATE_URL="+gw.url)

	var created []string
	// Registered after serve's cleanup: it runs first, while the gateway is there; the
	// engine removes what the gateway could not.
	t.Cleanup(func() {
		for _, id := range created {
			select {
			case <-gw.exited:
			default:
				if _, _, code := e.run(t, []string{"CMDGATE_TOKEN=" + admin}, "task", "rm", id); code != 0 {
					t.Logf("cleanup: cmdgate task rm %s: exit %d", id, code)
				}
			}
			cli.ContainerRemove(context.Background(), docker.NamePrefix+id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	})

	task, stderr, code := taskCLI(t, e, alice, "task", "create", "--url", gw.url, "--repo", repo, "--no-install", "--depth", "0",
		"--cpus", "1", "--memory", "512m", "--pids", "256", "--timeout-seconds", "600", "--wait", "5m")
	id := jsStr(task, "task_id")
	if id != "" {
		created = append(created, id)
	}
	if code != 0 || task["ok"] != true || task["type"] != "task.create" || jsNum(task, "http_status") != 201 || task["state"] != "ready" || stderr != "" {
		t.Fatalf("task create: exit %d %v\nstderr: %s\n%s", code, task, stderr, e.serveLog())
	}
	if task["auto_install_deps"] != false || jsNum(task, "clone_depth") != 0 || jsNum(task, "limits", "cpus") != 1 ||
		jsNum(task, "limits", "memory_bytes") != 512<<20 || jsNum(task, "limits", "pids") != 256 || jsNum(task, "limits", "timeout_seconds") != 600 ||
		jsStr(task, "principal", "name") != "alice" || jsStr(task, "container_name") != docker.NamePrefix+id {
		t.Errorf("task create: the flags did not reach the task: %v", task)
	}
	insp, err := cli.ContainerInspect(t.Context(), docker.NamePrefix+id, client.ContainerInspectOptions{})
	if err != nil || insp.Container.HostConfig == nil || insp.Container.HostConfig.Memory != 512<<20 || insp.Container.HostConfig.NanoCPUs != 1e9 {
		t.Errorf("the task's container: %+v %v", insp.Container.HostConfig, err)
	}

	list, _, code := taskCLI(t, e, alice, "task", "list", "--state", "live")
	if tasks, _ := list["tasks"].([]any); code != 0 || list["type"] != "task.list" || len(tasks) != 1 || jsStr(tasks[0], "task_id") != id {
		t.Errorf("task list: exit %d %v", code, list)
	}
	if show, _, code := taskCLI(t, e, alice, "task", "show", id, "--wait", "1s"); code != 0 || show["type"] != "task.show" || show["state"] != "ready" {
		t.Errorf("task show: exit %d %v", code, show)
	}
	run, _, code := taskCLI(t, e, alice, "exec", "--task", id, "-c", "pwd && cat README")
	if code != 0 || run["ok"] != true || run["stdout"] != docker.Project+"\nhello from the CLI's task\n" {
		t.Errorf("exec --task: exit %d %v", code, run)
	}

	// What the gateway refuses is its answer: exit 0, ok false, the code.
	for _, c := range []struct {
		token string
		args  []string
		code  string
	}{
		{bob, []string{"task", "show", id}, "NOT_FOUND"},
		{bob, []string{"task", "rm", id}, "NOT_FOUND"},
		{bob, []string{"exec", "--task", id, "-c", "pwd"}, "NOT_FOUND"},
		{alice, []string{"task", "create", "--repo", "file:///etc"}, "INVALID_ARGUMENT"},
		{alice, []string{"task", "create", "--repo", repo, "--ref", "--upload-pack=touch /tmp/x"}, "INVALID_ARGUMENT"},
		{alice, []string{"task", "create", "--repo", repo, "--network", "allowlist"}, "INVALID_ARGUMENT"},
		{alice, []string{"task", "create", "--repo", repo, "--memory", "lots"}, "INVALID_ARGUMENT"},
		{alice, []string{"task", "create", "--repo", repo, "--cpus", "-1"}, "INVALID_ARGUMENT"},
		{alice, []string{"task", "list", "--state", "sleeping"}, "INVALID_ARGUMENT"},
		{alice, []string{"task", "list", "--limit", "0"}, "INVALID_ARGUMENT"},
		{alice, []string{"task", "show", "not-a-task"}, "NOT_FOUND"},
		{"", []string{"task", "list"}, "UNAUTHENTICATED"},
	} {
		got, stderr, code := taskCLI(t, e, c.token, c.args...)
		if code != 0 || got["ok"] != false || jsStr(got, "error", "code") != c.code || !strings.Contains(stderr, c.code) {
			t.Errorf("cmdgate %s: exit %d %v, stderr %q; want exit 0, ok false, %s", strings.Join(c.args, " "), code, got, stderr, c.code)
		}
		if c.token == "" && !strings.Contains(stderr, "no token: set CMDGATE_TOKEN") {
			t.Errorf("cmdgate %s without a token: stderr %q lacks the hint", strings.Join(c.args, " "), stderr)
		}
	}
	if list, _, _ := taskCLI(t, e, admin, "task", "list"); len(list["tasks"].([]any)) != 1 {
		t.Errorf("the refused requests created tasks: %v", list)
	}

	rm, _, code := taskCLI(t, e, alice, "task", "rm", id)
	if code != 0 || rm["type"] != "task.rm" || rm["state"] != "deleted" {
		t.Errorf("task rm: exit %d %v", code, rm)
	}
	if _, err := cli.ContainerInspect(t.Context(), docker.NamePrefix+id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the container is still there after task rm: %v", err)
	}
	if show, _, _ := taskCLI(t, e, alice, "task", "show", id); show["state"] != "deleted" {
		t.Errorf("task show after rm: %v", show)
	}
	gw.stop(t)
}
