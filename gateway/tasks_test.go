//go:build linux

package gateway

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/uuid"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/cmdgate/cmdgate/jobs"
)

// The tests of per-task Docker environments run against the real engine of the
// machine, with repositories served by a git smart-HTTP server in a network namespace
// that stands for the internet (testenv.Outside).

// taskServer is a gateway (process backend for host commands) with tasks on the real
// engine; env is its environment for the clone tokens.
func taskServer(t testing.TB, cli *client.Client, o TaskOptions, env map[string]string) *Server {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	o.Enabled, o.Client = true, cli
	if o.Image == "" {
		o.Image = testenv.DockerImage()
	}
	o.Getenv = func(k string) string { return env[k] }
	s, err := New(t.Context(), Options{Workspace: ws, DataDir: filepath.Join(base, "data"), Sandbox: SandboxProcess, Tasks: o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// gitOutside serves repositories from the outside namespace, with token (or none).
func gitOutside(t *testing.T, token string) (*testenv.GitServer, string) {
	t.Helper()
	o := testenv.NewOutside(t)
	ln := o.Listen(t)
	return testenv.NewGitServer(t, ln, token), "http://" + ln.Addr().String()
}

// newTask creates a task and waits for it to be ready (or to fail), deleting it at the
// end of the test.
func newTask(t *testing.T, s *Server, caller Caller, req TaskRequest) *Task {
	t.Helper()
	req.WaitMS = int64((5 * time.Minute) / time.Millisecond)
	task, err := s.CreateTask(t.Context(), caller, &req)
	if err != nil {
		t.Fatalf("create task: %v", err)
	}
	t.Cleanup(func() { s.DeleteTask(context.Background(), Caller{Name: "cleanup", Role: RoleAdmin}, task.ID) })
	return task
}

// runIn runs a script in a task through the whole pipeline and returns its stdout.
func runIn(t *testing.T, s *Server, caller Caller, taskID, script string) string {
	t.Helper()
	out, err := s.Exec(t.Context(), caller, &Request{Script: script, Task: taskID})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	if out.Result.ExitCode != 0 {
		t.Fatalf("%s: exit %d\n%s%s", script, out.Result.ExitCode, out.Result.Stdout, out.Result.Stderr)
	}
	return out.Result.Stdout
}

// A task goes created → initializing → ready with the project cloned (shallow) into
// /workspace/project; its commands run there, in its container, as a non-root user,
// decided and audited with the task's workspace; DELETE removes the container, and the
// task is deleted.
func TestTaskLifecycle(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, _ := gitOutside(t, "")
	repo := g.Repo(t, "app", map[string]string{"README.md": "hello from the repo\n", "src/main.txt": "x\n"})
	s := taskServer(t, cli, TaskOptions{GitHubHosts: []string{}, GitLabHosts: []string{}}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}

	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady || task.ContainerName != "coding-agent-exec-"+task.ID || task.Workspace != "/workspace/project" {
		t.Fatalf("task: %+v", task)
	}
	if len(task.Steps) != 1 || !task.Steps[0].OK || len(task.Commit) != 40 {
		t.Fatalf("steps %+v, commit %q", task.Steps, task.Commit)
	}
	got := runIn(t, s, alice, task.ID, "pwd; cat README.md; touch mine && stat -c %u mine && rm mine; git rev-parse --is-shallow-repository; git rev-parse HEAD")
	want := "/workspace/project\nhello from the repo\n1000\ntrue\n" + task.Commit + "\n"
	if got != want {
		t.Errorf("in the task: %q, want %q", got, want)
	}
	// A relative cwd is the project's; one outside /workspace is refused.
	if got := runIn(t, s, alice, task.ID, "pwd"); got != "/workspace/project\n" {
		t.Errorf("pwd: %q", got)
	}
	out, err := s.Exec(t.Context(), alice, &Request{Script: "pwd", Task: task.ID, Cwd: "src"})
	if err != nil || out.Result.Stdout != "/workspace/project/src\n" {
		t.Errorf("cwd src: %+v %v", out, err)
	}
	if _, err := s.Exec(t.Context(), alice, &Request{Script: "pwd", Task: task.ID, Cwd: "../../etc"}); AsError(err).Code != CodeInvalidArgument {
		t.Errorf("cwd outside the workspace: %v", err)
	}
	// The decision record holds the task's workspace and the container.
	rec, err := s.store.Get(t.Context(), out.DecisionID)
	if err != nil {
		t.Fatal(err)
	}
	var input struct {
		Request struct{ Cwd, Workspace, Task string }
		Sandbox struct{ Backend string }
	}
	json.Unmarshal(rec.Input, &input)
	if input.Request.Workspace != "/workspace/project" || input.Request.Cwd != "/workspace/project/src" || input.Request.Task != task.ID ||
		input.Sandbox.Backend != "docker" || !strings.Contains(string(rec.Detail), task.ContainerName) {
		t.Errorf("decision record: input %+v, detail %s", input, rec.Detail)
	}
	// The same command without the task runs on the host, not in the container.
	if out, err := s.Exec(t.Context(), alice, &Request{Script: "pwd"}); err != nil || strings.HasPrefix(out.Result.Stdout, "/workspace") {
		t.Errorf("a host command: %+v %v", out, err)
	}
	// Others do not see it; an auditor does.
	bob := Caller{Name: "bob", Role: RoleAgent, RequestID: "t"}
	if _, err := s.Task(t.Context(), bob, task.ID); AsError(err).Code != CodeNotFound {
		t.Errorf("bob sees alice's task: %v", err)
	}
	if _, err := s.Exec(t.Context(), bob, &Request{Script: "true", Task: task.ID}); AsError(err).Code != CodeNotFound {
		t.Errorf("bob runs in alice's task: %v", err)
	}
	if list, err := s.Tasks(t.Context(), Caller{Name: "eve", Role: RoleAuditor}, "", 0); err != nil || len(list) != 1 || list[0].State != TaskReady {
		t.Errorf("auditor's list: %+v %v", list, err)
	}

	del, err := s.DeleteTask(t.Context(), alice, task.ID)
	if err != nil || del.State != TaskDeleted {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if _, err := cli.ContainerInspect(t.Context(), task.ContainerName, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the container is still there: %v", err)
	}
	if _, err := s.Exec(t.Context(), alice, &Request{Script: "true", Task: task.ID}); AsError(err).Code != CodeConflict {
		t.Errorf("a command in a deleted task: %v", err)
	}
	// Every transition is recorded.
	events := taskEvents(t, s, task.ID)
	if strings.Join(events, ",") != "created,step,ready,stopped,deleted" {
		t.Errorf("task records: %v", events)
	}
}

// taskEvents are the events of a task's records, in order.
func taskEvents(t *testing.T, s *Server, id string) []string {
	t.Helper()
	recs, err := s.store.Query(t.Context(), audit.Query{Kind: audit.KindTask, Limit: audit.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, r := range recs.Records {
		var d struct {
			Event  string `json:"event"`
			TaskID string `json:"task_id"`
		}
		json.Unmarshal(r.Detail, &d)
		if d.TaskID == id {
			events = append(events, d.Event)
		}
	}
	slices.Reverse(events) // the store lists newest first
	return events
}

// The clone's token (GITHUB_PERSONAL_ACCESS_TOKEN in the gateway's environment) reaches
// the repository's server and nothing else: not .git/config, not the container's
// environment or any of its files or processes, not the task document, not the audit
// log. Without it the server refuses the clone, and the task fails with its container
// removed.
func TestTaskCloneCredentials(t *testing.T) {
	cli := testenv.DockerEngine(t)
	const token = "ghp_TOKENtokenTOKEN1234567890abcdefXYZ"
	g, host := gitOutside(t, token)
	repo := g.Repo(t, "private", map[string]string{"README.md": "secret project\n"})
	s := taskServer(t, cli, TaskOptions{GitHubHosts: []string{host}}, map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": token})
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}

	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady {
		t.Fatalf("task: %+v", task)
	}
	authorized := 0
	for _, r := range g.Requests() {
		if r.Authorized {
			authorized++
			if r.User != "x-access-token" {
				t.Errorf("user %q, want x-access-token", r.User)
			}
		}
	}
	if authorized == 0 {
		t.Fatal("the server saw no authorized request")
	}
	// Nothing in the container can recover it: search every file a command can read,
	// every process's environment and command line, git's configuration.
	b64 := strings.TrimPrefix(docker.AuthHeader("x-access-token", token), "Authorization: Basic ")
	probe := `for p in "$1" "$2"; do
  grep -rlsF -e "$p" /workspace /tmp /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null
  git -C /workspace/project config --list --show-origin | grep -F -e "$p"
  env | grep -F -e "$p"
done; echo searched`
	// The probe runs as the task's commands do (its user), outside the policy: it is
	// the test looking, not the agent.
	e, err := docker.New(docker.Options{Client: cli, Container: task.ContainerID})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(t.Context(), executor.Spec{Argv: []string{"sh", "-c", probe, "probe", token, b64}, Dir: "/", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The probe's own command line and environment hold the token: not those.
	self := regexp.MustCompile(`^/proc/\d+/(cmdline|environ)$`)
	for _, f := range strings.Fields(res.Stdout) {
		if f != "searched" && !(self.MatchString(f) && probeProc(e, f)) {
			t.Errorf("the token is in %s", f)
		}
	}
	if !strings.Contains(res.Stdout, "searched") {
		t.Fatalf("probe: %+v", res)
	}
	env, _ := e.Run(t.Context(), executor.Spec{Script: `for e in /proc/[0-9]*/environ; do tr '\0' '\n' < $e 2>/dev/null; done | grep -c GIT_CONFIG; true`, Dir: "/", Timeout: time.Minute})
	if strings.TrimSpace(env.Stdout) != "0" {
		t.Errorf("a process still has git's credential configuration: %q", env.Stdout)
	}
	insp, err := cli.ContainerInspect(t.Context(), task.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(insp.Container); strings.Contains(string(b), token) || strings.Contains(string(b), b64) {
		t.Error("the container's configuration holds the token")
	}
	if cfg := runIn(t, s, alice, task.ID, "cat .git/config"); strings.Contains(cfg, token) || strings.Contains(cfg, "extraHeader") || !strings.Contains(cfg, repo) {
		t.Errorf(".git/config:\n%s", cfg)
	}
	// Not in the task document, nor in any audit record.
	doc, _ := json.Marshal(s.liveTask(task.ID))
	if strings.Contains(string(doc), token) || strings.Contains(string(doc), b64) {
		t.Errorf("the task document holds the token: %s", doc)
	}
	recs, err := s.store.Query(t.Context(), audit.Query{Limit: audit.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs.Records {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), token) || strings.Contains(string(b), b64) {
			t.Errorf("audit record %s holds the token", r.ID)
		}
	}

	// Without the token the clone fails: the task failed, its container is gone.
	s2 := taskServer(t, cli, TaskOptions{GitHubHosts: []string{host}}, nil)
	failed := newTask(t, s2, alice, TaskRequest{RepoURL: repo})
	if failed.State != TaskFailed || !strings.Contains(failed.Reason, "clone") {
		t.Errorf("a clone without the token: %+v", failed)
	}
	if _, err := cli.ContainerInspect(t.Context(), failed.ContainerName, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the failed task's container is still there: %v", err)
	}
	// A token is never sent over plain http to a host listed without http://.
	s3 := taskServer(t, cli, TaskOptions{GitHubHosts: []string{strings.TrimPrefix(host, "http://")}},
		map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": token})
	before := len(g.Requests())
	plain := newTask(t, s3, alice, TaskRequest{RepoURL: repo})
	for _, r := range g.Requests()[before:] {
		if r.Password != "" {
			t.Errorf("the token went over http to a host listed for https: %+v", r)
		}
	}
	if plain.State != TaskFailed {
		t.Errorf("task: %+v", plain)
	}
}

// look runs a script in a container as its commands run, outside the policy (the test
// looking), and returns its stdout.
func look(t *testing.T, cli *client.Client, container, script string) string {
	t.Helper()
	e, err := docker.New(docker.Options{Client: cli, Container: container})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Run(t.Context(), executor.Spec{Script: script, Dir: "/", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res.Stdout
}

// probeProc says that a /proc file the probe found is the probe's own: its process is
// gone now.
func probeProc(e *docker.Executor, f string) bool {
	res, err := e.Run(context.Background(), executor.Spec{Argv: []string{"test", "-e", f}, Dir: "/", Timeout: time.Minute})
	return err == nil && res.ExitCode != 0
}

// A pull request's task has the pull request's head checked out on branch pr/N, with
// its target branch fetched so that a diff against it works although the clone is
// shallow; GitLab's merge requests come from their own refs.
func TestTaskPullRequest(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, host := gitOutside(t, "")
	repo := g.Repo(t, "app", map[string]string{"README.md": "v1\n"})
	head := g.PullRequest(t, "app", 7, 3, "feature.txt")
	for _, c := range []struct {
		name      string
		github    []string
		gitlab    []string
		wantPRRef string
	}{
		{"github", []string{host}, []string{}, "refs/pull/7/head"},
		{"gitlab", []string{}, []string{host}, "refs/merge-requests/7/head"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := taskServer(t, cli, TaskOptions{GitHubHosts: c.github, GitLabHosts: c.gitlab}, nil)
			alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
			task := newTask(t, s, alice, TaskRequest{RepoURL: repo, PullRequest: 7})
			if task.State != TaskReady || task.Commit != head {
				t.Fatalf("task: %+v, want commit %s", task, head)
			}
			got := runIn(t, s, alice, task.ID, "git branch --show-current; git diff --name-only origin/main...HEAD; git log --format=%s origin/main -1")
			if got != "pr/7\nfeature.txt\nmain moves on\n" {
				t.Errorf("in the task: %q", got)
			}
			if !strings.Contains(task.Steps[0].Command, c.wantPRRef) {
				t.Errorf("clone step: %+v", task.Steps[0])
			}
		})
	}
}

// Dependency installs run as the task's principal through the policy and are recorded
// with their decision; one that fails leaves the task ready with the failure reported.
func TestTaskInstallFailureReported(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, _ := gitOutside(t, "")
	repo := g.Repo(t, "gem", map[string]string{"Gemfile": "source 'https://rubygems.org'\n"})
	s := taskServer(t, cli, TaskOptions{GitHubHosts: []string{}}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady || !task.InstallFailed || len(task.Steps) != 2 {
		t.Fatalf("task: %+v", task)
	}
	st := task.Steps[1]
	if st.Name != "install" || st.Command != "bundle install" || st.OK || st.DecisionID == "" || st.Error == "" {
		t.Errorf("install step: %+v", st)
	}
	rec, err := s.store.Get(t.Context(), st.DecisionID)
	if err != nil || rec.Principal.Name != "alice" || !strings.Contains(string(rec.Detail), "task_install") {
		t.Errorf("install decision: %+v %v", rec, err)
	}
	// With auto_install_deps false nothing is installed.
	quiet := newTask(t, s, alice, TaskRequest{RepoURL: repo, AutoInstall: new(bool)})
	if quiet.State != TaskReady || len(quiet.Steps) != 1 || quiet.InstallFailed {
		t.Errorf("no installs: %+v", quiet)
	}
	// And fail_on_install_error fails the task.
	strict := taskServer(t, cli, TaskOptions{GitHubHosts: []string{}, FailOnInstallError: true}, nil)
	failed := newTask(t, strict, alice, TaskRequest{RepoURL: repo})
	if failed.State != TaskFailed || !strings.Contains(failed.Reason, "install") {
		t.Errorf("fail_on_install_error: %+v", failed)
	}
}

// A task whose container went away behind the gateway's back fails, and a command in
// it is UNAVAILABLE with the reason; an engine that does not answer fails a new task
// within the operation timeout, with a clear reason, instead of hanging.
func TestTaskEngineErrors(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, _ := gitOutside(t, "")
	repo := g.Repo(t, "app", map[string]string{"README.md": "x\n"})
	s := taskServer(t, cli, TaskOptions{GitHubHosts: []string{}}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady {
		t.Fatalf("task: %+v", task)
	}
	if _, err := cli.ContainerRemove(t.Context(), task.ContainerID, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Exec(t.Context(), alice, &Request{Script: "true", Task: task.ID})
	if e := AsError(err); e.Code != CodeUnavailable || !strings.Contains(e.Message, "gone") {
		t.Errorf("a command in a removed container: %v", err)
	}
	if got, _ := s.Task(t.Context(), alice, task.ID); got.State != TaskFailed {
		t.Errorf("task after its container went: %+v", got)
	}

	// An image the engine does not have: the task fails with the reason, nothing is left.
	missing := newTask(t, s, alice, TaskRequest{RepoURL: repo, Image: "cmdgate-test-missing:none"})
	if missing.State != TaskFailed || !strings.Contains(missing.Reason, "cmdgate-test-missing:none") {
		t.Errorf("a missing image: %+v", missing)
	}
	if _, err := cli.ContainerInspect(t.Context(), missing.ContainerName, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("a container of the missing image: %v", err)
	}

	// An engine that accepts connections and never answers.
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "docker.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	mute, err := client.New(client.WithHost("unix://" + ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	s2 := taskServer(t, mute, TaskOptions{GitHubHosts: []string{}, OpTimeout: 2 * time.Second, Image: testenv.DockerImage()}, nil)
	start := time.Now()
	stuck := newTask(t, s2, alice, TaskRequest{RepoURL: repo})
	if stuck.State != TaskFailed || !strings.Contains(stuck.Reason, "container could not be created") {
		t.Errorf("a mute engine: %+v", stuck)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("a mute engine took %v to fail the task", d)
	}
}

// Bad task requests are refused before anything is created.
func TestTaskRequestRefused(t *testing.T) {
	cli := testenv.DockerEngine(t)
	s := taskServer(t, cli, TaskOptions{}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	neg := -1
	for name, req := range map[string]TaskRequest{
		"no url":            {},
		"credentials":       {RepoURL: "https://user:pw@example.com/r.git"},
		"file":              {RepoURL: "file:///etc"},
		"ssh":               {RepoURL: "ssh://git@example.com/r.git"},
		"ext":               {RepoURL: "ext::sh -c touch% /tmp/pwned"},
		"option ref":        {RepoURL: "https://example.com/r.git", Ref: "--upload-pack=touch /tmp/x"},
		"dotdot ref":        {RepoURL: "https://example.com/r.git", Ref: "a/../b"},
		"ref and pr":        {RepoURL: "https://example.com/r.git", Ref: "main", PullRequest: 3},
		"negative pr":       {RepoURL: "https://example.com/r.git", PullRequest: -3},
		"target without pr": {RepoURL: "https://example.com/r.git", TargetBranch: "main"},
		"allowlist":         {RepoURL: "https://example.com/r.git", Network: "allowlist"},
		"bad network":       {RepoURL: "https://example.com/r.git", Network: "host"},
		"negative depth":    {RepoURL: "https://example.com/r.git", CloneDepth: &neg},
		"negative cpus":     {RepoURL: "https://example.com/r.git", Limits: &TaskLimitsInput{CPUs: -1}},
		"bad memory":        {RepoURL: "https://example.com/r.git", Limits: &TaskLimitsInput{Memory: json.RawMessage(`"lots"`)}},
		"tiny pids":         {RepoURL: "https://example.com/r.git", Limits: &TaskLimitsInput{Pids: 2}},
		"long timeout":      {RepoURL: "https://example.com/r.git", Limits: &TaskLimitsInput{TimeoutSeconds: 999999}},
		"image option":      {RepoURL: "https://example.com/r.git", Image: "--privileged"},
		"control char":      {RepoURL: "https://example.com/r\n.git"},
	} {
		if _, err := s.CreateTask(t.Context(), alice, &req); AsError(err).Code != CodeInvalidArgument {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if _, err := s.CreateTask(t.Context(), Caller{Name: "eve", Role: RoleAuditor}, &TaskRequest{RepoURL: "https://example.com/r.git"}); AsError(err).Code != CodeForbidden {
		t.Errorf("an auditor creates a task: %v", err)
	}
	if list, _ := s.Tasks(t.Context(), Caller{Name: "root", Role: RoleAdmin}, "", 0); len(list) != 0 {
		t.Errorf("refused requests left tasks: %+v", list)
	}
}

// Each dependency manager the image has installs the project's dependencies from local
// fixtures that need no network: npm a file: dependency, pip a local wheel into the
// user's site under HOME in the workspace, go a module replaced by a local directory.
// Each install is a step of its own, decided and recorded; a manager the image lacks
// fails its step, reported.
func TestTaskInstalls(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, _ := gitOutside(t, "")
	files := map[string]string{
		"package.json":                      `{"name": "app", "version": "1.0.0", "dependencies": {"mylib": "file:./mylib"}}`,
		"mylib/package.json":                `{"name": "mylib", "version": "1.0.0", "main": "index.js"}`,
		"mylib/index.js":                    "module.exports = 42;\n",
		"requirements.txt":                  "./wheels/pylib-0.1-py3-none-any.whl\n",
		"wheels/pylib-0.1-py3-none-any.whl": wheel(t, "pylib", "0.1", map[string]string{"pylib/__init__.py": "VALUE = 42\n"}),
		"go.mod":                            "module example.com/app\n\ngo 1.19\n\nrequire example.com/golib v0.0.0\n\nreplace example.com/golib => ./golib\n",
		"main.go":                           "package main\n\nimport \"example.com/golib\"\n\nfunc main() { println(golib.Value) }\n",
		"golib/go.mod":                      "module example.com/golib\n\ngo 1.19\n",
		"golib/lib.go":                      "package golib\n\nconst Value = 42\n",
	}
	repo := g.Repo(t, "deps", files)
	s := taskServer(t, cli, TaskOptions{GitHubHosts: []string{}}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady {
		t.Fatalf("task: %+v", task)
	}
	want := map[string]string{"npm install": "package.json", "pip install -r requirements.txt": "requirements.txt", "go mod download": "go.mod"}
	ran := map[string]bool{}
	for _, st := range task.Steps[1:] {
		if _, ok := want[st.Command]; !ok {
			t.Errorf("unexpected step %+v", st)
			continue
		}
		ran[st.Command] = true
		tool := strings.Fields(st.Command)[0]
		if runIn(t, s, alice, task.ID, "command -v "+tool+" || true") == "" {
			// The image lacks the manager: its install fails, and that is reported.
			if st.OK || st.Error == "" {
				t.Errorf("%s without %s in the image: %+v", st.Command, tool, st)
			}
			t.Logf("%s is not in the image: %s", tool, st.Error)
			continue
		}
		if !st.OK || st.DecisionID == "" || st.Manifest != want[st.Command] {
			t.Errorf("install step %+v", st)
		}
	}
	if len(ran) != len(want) {
		t.Errorf("installs run: %v, want %v", ran, want)
	}
	// What they installed is there.
	checks := map[string]string{
		"npm": "test -e node_modules/mylib/index.js && echo npm-ok",
		"pip": "ls /workspace/tmp/.local/lib/python3*/site-packages/pylib/__init__.py >/dev/null && echo pip-ok",
		"go":  "go build ./... && go list -m example.com/golib && echo go-ok",
	}
	for tool, check := range checks {
		if runIn(t, s, alice, task.ID, "command -v "+tool+" || true") == "" {
			continue
		}
		out, err := s.Exec(t.Context(), alice, &Request{Script: check, Task: task.ID})
		if err != nil || out.Result.ExitCode != 0 || !strings.Contains(out.Result.Stdout, tool+"-ok") {
			t.Errorf("%s's install: %+v %v", tool, out, err)
		}
	}
}

// wheel is a pure-Python wheel of name and version holding files, with its RECORD.
func wheel(t *testing.T, name, version string, files map[string]string) string {
	t.Helper()
	info := name + "-" + version + ".dist-info/"
	all := map[string]string{
		info + "METADATA": "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n",
		info + "WHEEL":    "Wheel-Version: 1.0\nGenerator: cmdgate-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	maps.Copy(all, files)
	var record strings.Builder
	for _, p := range slices.Sorted(maps.Keys(all)) {
		sum := sha256.Sum256([]byte(all[p]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", p, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[p]))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	all[info+"RECORD"] = record.String()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, p := range slices.Sorted(maps.Keys(all)) {
		w, err := z.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(all[p]))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A background job naming a task runs in the task's container, in the job host (here
// in the test's process), decided and recorded as any job; killing it stops its tree
// in the container.
func TestTaskJob(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, _ := gitOutside(t, "")
	repo := g.Repo(t, "app", map[string]string{"README.md": "from the job's task\n"})
	s := taskServer(t, cli, TaskOptions{GitHubHosts: []string{}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunJobHost(ctx, s.opts, s.jobStore.Root, s.hostKey(), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("job host: %v", err)
		}
	})
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady {
		t.Fatalf("task: %+v", task)
	}
	_, j, err := s.StartJob(t.Context(), alice, &JobRequest{Request: Request{Script: "pwd; cat README.md", Task: task.ID}})
	if err != nil {
		t.Fatal(err)
	}
	j, finished, err := s.WaitJob(t.Context(), alice, j.ID, time.Minute)
	if err != nil || !finished || j.State != jobs.Exited || j.ExitCode == nil || *j.ExitCode != 0 {
		t.Fatalf("the job: %+v %v %v", j, finished, err)
	}
	tl, err := s.TailJob(t.Context(), alice, j.ID, 1<<16, 0)
	if err != nil || tl.Stdout.Text != "/workspace/project\nfrom the job's task\n" {
		t.Errorf("the job's output: %+v %v", tl, err)
	}
	// A long job is killed with its tree in the container.
	_, long, err := s.StartJob(t.Context(), alice, &JobRequest{Request: Request{Script: "sleep 1007 & sleep 1008", Task: task.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.KillJob(t.Context(), alice, long.ID, "TERM"); err != nil {
		t.Fatal(err)
	}
	if left := look(t, cli, task.ContainerID, "ps -eo args | grep -c '^sleep 100[78]' || true"); strings.TrimSpace(left) != "0" {
		t.Errorf("the killed job's processes are left in the container: %s", left)
	}
	// Another agent's job cannot name the task.
	bob := Caller{Name: "bob", Role: RoleAgent, RequestID: "t"}
	if _, _, err := s.StartJob(t.Context(), bob, &JobRequest{Request: Request{Script: "true", Task: task.ID}}); err == nil {
		t.Error("bob started a job in alice's task")
	}
}

// The reaper removes the task containers older than the stale threshold, and marks
// their tasks deleted; a container named like a task's without cmdgate's labels is
// never touched.
func TestTaskReap(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, _ := gitOutside(t, "")
	repo := g.Repo(t, "app", map[string]string{"README.md": "x\n"})
	// The test's label keeps the reaper to this test's containers.
	s := taskServer(t, cli, TaskOptions{GitHubHosts: []string{}, StaleAfter: time.Nanosecond,
		Labels: map[string]string{"cmdgate.test": t.Name()}}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady {
		t.Fatalf("task: %+v", task)
	}
	foreign := "coding-agent-exec-" + uuid.NewString()
	c, err := cli.ContainerCreate(t.Context(), client.ContainerCreateOptions{Name: foreign,
		Config: &container.Config{Image: testenv.DockerImage(), Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{"cmdgate.test": t.Name()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	})
	time.Sleep(1100 * time.Millisecond) // the engine's creation times are in seconds
	removed, err := s.ReapTasks(t.Context())
	if err != nil || len(removed) != 1 || removed[0] != task.ContainerName {
		t.Fatalf("reaped %v, %v; want only %s", removed, err, task.ContainerName)
	}
	if got, _ := s.Task(t.Context(), alice, task.ID); got.State != TaskDeleted || !strings.Contains(got.Reason, "reaped") {
		t.Errorf("the reaped task: %+v", got)
	}
	if _, err := cli.ContainerInspect(t.Context(), c.ID, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("the foreign container: %v", err)
	}
	if events := taskEvents(t, s, task.ID); events[len(events)-1] != "deleted" {
		t.Errorf("task records: %v", events)
	}
}

// engineProxy relays connections to the real engine's socket from a socket of the
// test's own: closing it is the engine going away, as cmdgate sees it (connections
// refused, the open ones cut), while the engine itself goes on serving the other tests.
func engineProxy(t *testing.T) (host string, stop func()) {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		p, ok := strings.CutPrefix(h, "unix://")
		if !ok {
			testenv.Skip(t, "the engine proxy relays a unix socket, not %s", h)
		}
		target = p
	}
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "engine.sock"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
	}
	t.Cleanup(stop)
	return "unix://" + ln.Addr().String(), stop
}

// The engine going away while a task's command runs: the command ends with
// UNAVAILABLE and the reason, at once rather than at its timeout; the task failed;
// a new task fails with the reason; nothing hangs.
func TestTaskEngineGone(t *testing.T) {
	cli := testenv.DockerEngine(t)
	g, _ := gitOutside(t, "")
	repo := g.Repo(t, "app", map[string]string{"README.md": "x\n"})
	host, stop := engineProxy(t)
	via, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	defer via.Close()
	s := taskServer(t, via, TaskOptions{GitHubHosts: []string{}, OpTimeout: 5 * time.Second}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	task := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if task.State != TaskReady {
		t.Fatalf("task: %+v", task)
	}
	// The proxy cannot remove the container once it is gone: the real client does.
	t.Cleanup(func() { docker.RemoveTask(context.Background(), cli, task.ID) })
	time.AfterFunc(time.Second, stop)
	start := time.Now()
	_, err = s.Exec(t.Context(), alice, &Request{Script: "sleep 60", Task: task.ID, Timeout: 90 * time.Second})
	if e := AsError(err); e.Code != CodeUnavailable || !strings.Contains(e.Message, "Docker engine") {
		t.Errorf("a command when the engine went away: %v", err)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("the command took %v to fail", d)
	}
	if got, _ := s.Task(t.Context(), alice, task.ID); got.State != TaskFailed || !strings.Contains(got.Reason, "Docker engine") {
		t.Errorf("the task: %+v", got)
	}
	next := newTask(t, s, alice, TaskRequest{RepoURL: repo})
	if next.State != TaskFailed || !strings.Contains(next.Reason, "container could not be created") {
		t.Errorf("a task without an engine: %+v", next)
	}
}
