package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// The tests of /v1/tasks run against the real Docker engine of the machine, with the
// repository served by a git smart-HTTP server in a network namespace that stands for
// the internet (testenv.Outside), as the task containers reach GitHub.

// taskWorld is a gateway with tasks on the real engine, a repository it clones with
// a token, and a tag of the task image of this test alone: every container the
// gateway creates is of that tag, so the test can tell its containers from any other
// on the engine.
type taskWorld struct {
	*testEnv
	cli   *client.Client
	git   *testenv.GitServer
	repo  string // the repository's URL
	image string // the tag of this test
	token string // the clone's token, in the gateway's environment
}

const taskReadme = "hello from the task repository\n"

func newTaskWorld(t *testing.T) *taskWorld {
	t.Helper()
	cli := testenv.DockerEngine(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var r [6]byte
	rand.Read(r[:])
	tag := "cmdgate-httpapi-test:" + hex.EncodeToString(r[:])
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: testenv.DockerImage(), Target: tag}); err != nil {
		t.Fatalf("tag the task image: %v", err)
	}
	t.Cleanup(func() { cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{}) })

	o := testenv.NewOutside(t)
	ln := o.Listen(t)
	token := "ghp_" + hex.EncodeToString(r[:]) + "TOKENtoken"
	g := testenv.NewGitServer(t, ln, token)
	repo := g.Repo(t, "app", map[string]string{"README": taskReadme})
	env := newEnv(t, func(o *gateway.Options) {
		o.Tasks = gateway.TaskOptions{Enabled: true, Client: cli, Image: tag,
			GitHubHosts: []string{"http://" + ln.Addr().String()}, GitLabHosts: []string{},
			Getenv: func(k string) string {
				if k == "GITHUB_PERSONAL_ACCESS_TOKEN" {
					return token
				}
				return ""
			}}
	})
	w := &taskWorld{testEnv: env, cli: cli, git: g, repo: repo, image: tag, token: token}
	env.tokens["bob"] = "Bearer " + env.token("bob", gateway.RoleAgent)
	// Registered after the gateway's own cleanup: it runs before the gateway closes.
	t.Cleanup(func() {
		list, err := env.srv.Tasks(context.Background(), gateway.Caller{Name: "cleanup", Role: gateway.RoleAdmin}, "live", 1000)
		if err != nil {
			t.Errorf("cleanup: list the tasks: %v", err)
		}
		for _, task := range list {
			env.srv.DeleteTask(context.Background(), gateway.Caller{Name: "cleanup", Role: gateway.RoleAdmin}, task.ID)
		}
	})
	return w
}

// containers lists the containers of this test's image tag, running or not.
func (w *taskWorld) containers(t *testing.T) []string {
	t.Helper()
	res, err := w.cli.ContainerList(t.Context(), client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var names []string
	for _, c := range res.Items {
		if c.Image == w.image {
			names = append(names, strings.Join(c.Names, ","))
		}
	}
	return names
}

// task decodes an answer that must be a task document with the given status.
func taskOf(t *testing.T, what string, a answer, status int) *gateway.Task {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s = %d %s, want %d", what, a.status, a.body, status)
	}
	var task gateway.Task
	a.decode(t, &task)
	return &task
}

// A task over HTTP: POST /v1/tasks answers 201 with the task as created; GET with
// wait_ms answers it ready, cloned with the token of the gateway's environment (which
// no answer shows); POST /v1/exec naming it runs in /workspace/project of its
// container; DELETE answers it deleted and the container is gone; the task's commands
// are refused after.
func TestTaskHTTPLifecycle(t *testing.T) {
	w := newTaskWorld(t)
	created := taskOf(t, "POST /v1/tasks", w.do("POST", "/v1/tasks", "agent", []byte(`{"repo_url": "`+w.repo+`"}`)), http.StatusCreated)
	if created.State != gateway.TaskCreated && created.State != gateway.TaskInitializing {
		t.Errorf("created task in state %q, want created or initializing", created.State)
	}
	if created.Principal.Name != "agent-tok" || created.RepoURL != w.repo || created.ContainerName != docker.NamePrefix+created.ID ||
		created.Image != w.image || created.Workspace != docker.Project {
		t.Errorf("created task %+v", created)
	}

	ready := taskOf(t, "GET /v1/tasks/{id}?wait_ms", w.do("GET", "/v1/tasks/"+created.ID+"?wait_ms=300000", "agent", nil), http.StatusOK)
	if ready.State != gateway.TaskReady || len(ready.Commit) != 40 || len(ready.Steps) == 0 || !ready.Steps[0].OK {
		t.Fatalf("task after the wait: %+v", ready)
	}
	authorized := false
	for _, r := range w.git.Requests() {
		authorized = authorized || r.Authorized && r.Password == w.token
	}
	if !authorized {
		t.Errorf("the git server saw no request with the token: %+v", w.git.Requests())
	}

	a := w.exec("agent", map[string]any{"command": "pwd && cat README", "task": created.ID})
	var res struct {
		Decision string `json:"decision"`
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
		Cwd      string `json:"cwd"`
	}
	a.decode(t, &res)
	if a.status != http.StatusOK || res.Decision != "allow" || res.ExitCode != 0 || res.Stdout != docker.Project+"\n"+taskReadme {
		t.Fatalf("POST /v1/exec in the task = %d %s, want pwd %s and the README", a.status, a.body, docker.Project)
	}
	// The same command without the task runs in the gateway's workspace.
	a = w.exec("agent", map[string]any{"command": "pwd"})
	a.decode(t, &res)
	if res.Stdout != w.ws+"\n" {
		t.Errorf("POST /v1/exec without the task: %s", a.body)
	}
	insp, err := w.cli.ContainerInspect(t.Context(), created.ContainerName, client.ContainerInspectOptions{})
	if err != nil || insp.Container.State == nil || !insp.Container.State.Running || insp.Container.Config.Image != w.image {
		t.Fatalf("the task's container: %+v %v", insp.Container.State, err)
	}

	deleted := taskOf(t, "DELETE /v1/tasks/{id}", w.do("DELETE", "/v1/tasks/"+created.ID, "agent", nil), http.StatusOK)
	if deleted.State != gateway.TaskDeleted || deleted.EndedAt == nil {
		t.Errorf("deleted task %+v", deleted)
	}
	if _, err := w.cli.ContainerInspect(t.Context(), created.ContainerName, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the container is still there after DELETE: %v", err)
	}
	if got := taskOf(t, "GET after DELETE", w.do("GET", "/v1/tasks/"+created.ID, "agent", nil), http.StatusOK); got.State != gateway.TaskDeleted {
		t.Errorf("GET after DELETE: state %q", got.State)
	}
	if a := w.exec("agent", map[string]any{"command": "pwd", "task": created.ID}); a.status != http.StatusConflict || a.errorCode() != gateway.CodeConflict {
		t.Errorf("POST /v1/exec in a deleted task = %d %s, want 409 CONFLICT", a.status, a.body)
	}
	// DELETE again answers the task as it is.
	if got := taskOf(t, "DELETE again", w.do("DELETE", "/v1/tasks/"+created.ID, "agent", nil), http.StatusOK); got.State != gateway.TaskDeleted {
		t.Errorf("DELETE again: state %q", got.State)
	}

	// No answer, no record holds the token.
	for _, path := range []string{"/v1/tasks/" + created.ID, "/v1/tasks"} {
		if b := w.do("GET", path, "admin", nil).body; bytes.Contains(b, []byte(w.token)) {
			t.Errorf("GET %s shows the token: %s", path, b)
		}
	}
	for _, r := range w.records() {
		if b, _ := json.Marshal(r); bytes.Contains(b, []byte(w.token)) {
			t.Errorf("audit record %s holds the token", r.ID)
		}
	}
}

// Who sees and controls a task: its agent lists, shows, runs in and deletes it;
// another agent neither sees it (404 on show, delete and exec, absent from its list)
// nor learns that it exists; an auditor lists and shows everyone's but may not create,
// run in or delete one; an approver has no access to tasks.
func TestTaskHTTPVisibility(t *testing.T) {
	w := newTaskWorld(t)
	task := taskOf(t, "POST /v1/tasks", w.do("POST", "/v1/tasks", "agent", []byte(`{"repo_url": "`+w.repo+`", "wait_ms": 300000}`)), http.StatusCreated)
	if task.State != gateway.TaskReady {
		t.Fatalf("task after wait_ms: %+v", task)
	}
	listOf := func(who string) []string {
		t.Helper()
		a := w.do("GET", "/v1/tasks", who, nil)
		var page struct{ Tasks []gateway.Task }
		if a.status != http.StatusOK {
			t.Fatalf("GET /v1/tasks as %s = %d %s", who, a.status, a.body)
		}
		a.decode(t, &page)
		var ids []string
		for _, x := range page.Tasks {
			ids = append(ids, x.ID)
		}
		return ids
	}
	for who, want := range map[string]int{"agent": 1, "auditor": 1, "admin": 1, "bob": 0} {
		if ids := listOf(who); len(ids) != want || want == 1 && ids[0] != task.ID {
			t.Errorf("GET /v1/tasks as %s lists %v, want %d task", who, ids, want)
		}
	}
	if ids := strings.Join(listOf("agent"), ""); ids != task.ID {
		t.Errorf("the agent's list: %v", ids)
	}
	// ?state filters.
	for state, want := range map[string]int{"ready": 1, "live": 1, "deleted": 0} {
		a := w.do("GET", "/v1/tasks?state="+state+"&limit=5", "auditor", nil)
		var page struct{ Tasks []gateway.Task }
		a.decode(t, &page)
		if a.status != http.StatusOK || len(page.Tasks) != want {
			t.Errorf("GET /v1/tasks?state=%s = %d %s, want %d tasks", state, a.status, a.body, want)
		}
	}

	cases := []struct {
		who, method, path string
		body              any
		status            int
		code              string
	}{
		{"bob", "GET", "/v1/tasks/" + task.ID, nil, 404, gateway.CodeNotFound},
		{"bob", "GET", "/v1/tasks/" + task.ID + "?wait_ms=10", nil, 404, gateway.CodeNotFound},
		{"bob", "DELETE", "/v1/tasks/" + task.ID, nil, 404, gateway.CodeNotFound},
		{"bob", "POST", "/v1/exec", map[string]any{"command": "pwd", "task": task.ID}, 404, gateway.CodeNotFound},
		{"auditor", "GET", "/v1/tasks/" + task.ID, nil, 200, ""},
		{"auditor", "DELETE", "/v1/tasks/" + task.ID, nil, 403, gateway.CodeForbidden},
		{"auditor", "POST", "/v1/exec", map[string]any{"command": "pwd", "task": task.ID}, 403, gateway.CodeForbidden},
		{"auditor", "POST", "/v1/tasks", map[string]any{"repo_url": w.repo}, 403, gateway.CodeForbidden},
		{"approver", "GET", "/v1/tasks", nil, 403, gateway.CodeForbidden},
		{"approver", "GET", "/v1/tasks/" + task.ID, nil, 403, gateway.CodeForbidden},
		{"none", "GET", "/v1/tasks/" + task.ID, nil, 401, gateway.CodeUnauthenticated},
		{"revoked", "DELETE", "/v1/tasks/" + task.ID, nil, 401, gateway.CodeUnauthenticated},
	}
	for _, c := range cases {
		var body []byte
		if c.body != nil {
			body = mustJSON(t, c.body)
		}
		a := w.do(c.method, c.path, c.who, body)
		if a.status != c.status || a.errorCode() != c.code {
			t.Errorf("%s %s as %s = %d %s, want %d %s", c.method, c.path, c.who, a.status, a.body, c.status, c.code)
		}
		if c.status == 404 && strings.Contains(string(a.body), w.repo) {
			t.Errorf("%s %s as %s tells of the task: %s", c.method, c.path, c.who, a.body)
		}
	}
	// Still there and ready: nothing bob or the auditor did touched it.
	if got := taskOf(t, "GET as the agent", w.do("GET", "/v1/tasks/"+task.ID, "agent", nil), http.StatusOK); got.State != gateway.TaskReady {
		t.Errorf("the task after the others' attempts: state %q", got.State)
	}
	if n := len(w.containers(t)); n != 1 {
		t.Errorf("%d containers of the test's image, want the task's one", n)
	}
	// An admin deletes anyone's task.
	if got := taskOf(t, "DELETE as admin", w.do("DELETE", "/v1/tasks/"+task.ID, "admin", nil), http.StatusOK); got.State != gateway.TaskDeleted {
		t.Errorf("DELETE as admin: state %q", got.State)
	}
	if names := w.containers(t); len(names) != 0 {
		t.Errorf("containers left after DELETE: %v", names)
	}
}

// Bad input to /v1/tasks is refused with 400 (413 for a body over the limit) and a
// message naming the problem, and creates nothing: no task in the store, no task
// record, no container of the test's image.
func TestTaskHTTPBadInput(t *testing.T) {
	w := newTaskWorld(t)
	withRepo := func(rest string) string { return `{"repo_url": "` + w.repo + `"` + rest + `}` }
	huge := `{"repo_url": "` + w.repo + `", "ref": "` + strings.Repeat("a", int(gateway.DefaultBodyLimit)) + `"}`
	cases := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"empty body", ``, 400, "empty"},
		{"malformed JSON", `{"repo_url": `, 400, "not JSON"},
		{"not an object", `["` + w.repo + `"]`, 400, "must be a JSON object"},
		{"two objects", withRepo("") + ` {}`, 400, "data after the JSON object"},
		{"unknown member", withRepo(`, "branch": "main"`), 400, `unknown field "branch"`},
		{"repeated member", withRepo(`, "repo_url": "` + w.repo + `"`), 400, "appears twice"},
		{"repo_url number", `{"repo_url": 42}`, 400, "field repo_url must be a string, got a number"},
		{"repo_url null", `{"repo_url": null}`, 400, "field repo_url must be a string, got null"},
		{"no repo_url", `{}`, 400, "repo_url is empty"},
		{"pull_request string", withRepo(`, "pull_request": "7"`), 400, "field pull_request must be an integer, got a string"},
		{"pull_request fraction", withRepo(`, "pull_request": 7.5`), 400, "must be an integer, got a non-integer number"},
		{"pull_request negative", withRepo(`, "pull_request": -1`), 400, "pull_request must be a positive number"},
		{"auto_install_deps string", withRepo(`, "auto_install_deps": "no"`), 400, "field auto_install_deps must be a boolean, got a string"},
		{"clone_depth negative", withRepo(`, "clone_depth": -1`), 400, "clone_depth must be 0"},
		{"wait_ms negative", withRepo(`, "wait_ms": -5`), 400, "wait_ms must not be negative"},
		{"limits array", withRepo(`, "limits": [1]`), 400, "field limits must be an object, got an array"},
		{"limits unknown member", withRepo(`, "limits": {"swap": "1g"}`), 400, `unknown field "swap"`},
		{"limits memory fraction", withRepo(`, "limits": {"memory": 1.5}`), 400, "field limits.memory must be a number of bytes or a size"},
		{"limits memory bool", withRepo(`, "limits": {"memory": true}`), 400, "field limits.memory must be a number of bytes or a size"},
		{"limits memory junk", withRepo(`, "limits": {"memory": "lots"}`), 400, "limits.memory"},
		{"limits memory tiny", withRepo(`, "limits": {"memory": "1k"}`), 400, "at least 6 MiB"},
		{"limits cpus string", withRepo(`, "limits": {"cpus": "2"}`), 400, "field limits.cpus must be a number, got a string"},
		{"limits cpus negative", withRepo(`, "limits": {"cpus": -1}`), 400, "must not be negative"},
		{"limits pids negative", withRepo(`, "limits": {"pids": -1}`), 400, "must not be negative"},
		{"limits pids tiny", withRepo(`, "limits": {"pids": 3}`), 400, "at least 16"},
		{"limits timeout too long", withRepo(`, "limits": {"timeout_seconds": 999999}`), 400, "more than the"},
		{"NUL in repo_url", `{"repo_url": "` + w.repo + `\u0000"}`, 400, "NUL"},
		{"NUL in ref", withRepo(`, "ref": "main\u0000"`), 400, "NUL"},
		{"unpaired surrogate", withRepo(`, "ref": "\ud800"`), 400, "unpaired"},
		{"invalid UTF-8", withRepo(`, "ref": "caf` + "\xe9" + `"`), 400, "not valid UTF-8"},
		{"credentials in repo_url", `{"repo_url": "http://user:secret@` + strings.TrimPrefix(w.repo, "http://") + `"}`, 400, "must not carry credentials"},
		{"token-only credentials", `{"repo_url": "https://ghp_x@github.com/o/r.git"}`, 400, "must not carry credentials"},
		{"file URL", `{"repo_url": "file:///etc"}`, 400, "must be an http or https URL"},
		{"ssh URL", `{"repo_url": "ssh://git@github.com/o/r.git"}`, 400, "must be an http or https URL"},
		{"scp-like URL", `{"repo_url": "git@github.com:o/r.git"}`, 400, "repo_url"},
		{"ext transport", `{"repo_url": "ext::sh%20-c%20touch%20/tmp/pwned"}`, 400, "must be an http or https URL"},
		{"URL with a space", `{"repo_url": "https://github.com/o/r.git --upload-pack=x"}`, 400, "space or a control character"},
		{"URL with a query", `{"repo_url": "https://github.com/o/r.git?x=1"}`, 400, "query"},
		{"option-looking ref", withRepo(`, "ref": "--upload-pack=touch /tmp/pwned"`), 400, "is not a branch, tag or commit name"},
		{"dash ref", withRepo(`, "ref": "-b"`), 400, "is not a branch, tag or commit name"},
		{"option-looking target", withRepo(`, "pull_request": 1, "target_branch": "--output=/tmp/x"`), 400, "target_branch"},
		{"ref and pull_request", withRepo(`, "ref": "main", "pull_request": 1`), 400, "either ref or pull_request"},
		{"target without pull_request", withRepo(`, "target_branch": "main"`), 400, "target_branch goes with pull_request"},
		{"network allowlist", withRepo(`, "network": "allowlist"`), 400, "allowlist mode is not available yet"},
		{"network host", withRepo(`, "network": "host"`), 400, "want external or none"},
		{"option-looking image", withRepo(`, "image": "--privileged"`), 400, "is not an image reference"},
		{"image with a space", withRepo(`, "image": "alpine --privileged"`), 400, "is not an image reference"},
		{"huge body", huge, 413, "too large"},
	}
	for _, c := range cases {
		a := w.do("POST", "/v1/tasks", "agent", []byte(c.body))
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(a.body, &e)
		wantCode := gateway.CodeInvalidArgument
		if c.status == 413 {
			wantCode = gateway.CodeTooLarge
		}
		if a.status != c.status || e.Error.Code != wantCode || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("%s: POST /v1/tasks = %d %s, want %d %s with %q", c.name, a.status, a.body, c.status, wantCode, c.msg)
		}
	}
	queries := []struct {
		method, path string
		status       int
		msg          string
	}{
		{"POST", "/v1/tasks?wait_ms=10", 400, "no query parameters"},
		{"GET", "/v1/tasks?limit=-1", 400, "limit must be an integer from 1 to 1000"},
		{"GET", "/v1/tasks?limit=0", 400, "limit must be an integer from 1 to 1000"},
		{"GET", "/v1/tasks?limit=lots", 400, "limit must be an integer from 1 to 1000"},
		{"GET", "/v1/tasks?limit=1&limit=2", 400, "given 2 times"},
		{"GET", "/v1/tasks?state=sleeping", 400, `state "sleeping"`},
		{"GET", "/v1/tasks?owner=bob", 400, `unknown parameter "owner"`},
		{"GET", "/v1/tasks/00000000-0000-4000-8000-000000000000?wait_ms=-1", 400, "wait_ms"},
		{"GET", "/v1/tasks/00000000-0000-4000-8000-000000000000?timeout=1", 400, "wait_ms"},
		{"GET", "/v1/tasks/not-a-task", 404, `no task "not-a-task"`},
		{"GET", "/v1/tasks/00000000-0000-4000-8000-000000000000", 404, "no task"},
		{"DELETE", "/v1/tasks/00000000-0000-4000-8000-000000000000", 404, "no task"},
		{"DELETE", "/v1/tasks/x?force=1", 400, "takes no parameters"},
	}
	for _, q := range queries {
		a := w.do(q.method, q.path, "agent", nil)
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(a.body, &e)
		if a.status != q.status || !strings.Contains(e.Error.Message, q.msg) {
			t.Errorf("%s %s = %d %s, want %d with %q", q.method, q.path, a.status, a.body, q.status, q.msg)
		}
	}

	// Nothing was created.
	if list, err := w.srv.Tasks(t.Context(), gateway.Caller{Name: "check", Role: gateway.RoleAdmin}, "", 1000); err != nil || len(list) != 0 {
		t.Errorf("tasks after the bad input: %+v %v", list, err)
	}
	if recs := w.recordsOf(audit.KindTask); len(recs) != 0 {
		t.Errorf("%d task records after the bad input, want none", len(recs))
	}
	if names := w.containers(t); len(names) != 0 {
		t.Errorf("containers of the test's image after the bad input: %v", names)
	}
}
