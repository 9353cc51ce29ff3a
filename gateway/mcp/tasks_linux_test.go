package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/mcp"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// The task tools against the real Docker engine of the machine, with the repository
// served by a git smart-HTTP server in a network namespace that stands for the
// internet (testenv.Outside).

// taskEnv is a gateway with tasks on the real engine and a repository to clone; it
// skips (fails under CI=true) without an engine or the image.
func taskEnv(t *testing.T) (*env, *client.Client, string) {
	t.Helper()
	cli := testenv.DockerEngine(t)
	o := testenv.NewOutside(t)
	ln := o.Listen(t)
	g := testenv.NewGitServer(t, ln, "")
	repo := g.Repo(t, "app", map[string]string{"README": "hello over MCP\n"})
	e := newEnv(t, func(o *gateway.Options) {
		o.Tasks = gateway.TaskOptions{Enabled: true, Client: cli, Image: testenv.DockerImage(), GitHubHosts: []string{}, GitLabHosts: []string{}}
	})
	// Registered after the gateway's cleanup: it runs first.
	t.Cleanup(func() {
		admin := gateway.Caller{Name: "cleanup", Role: gateway.RoleAdmin}
		list, _ := e.srv.Tasks(context.Background(), admin, "live", 1000)
		for _, task := range list {
			e.srv.DeleteTask(context.Background(), admin, task.ID)
		}
	})
	return e, cli, repo
}

// taskTool calls a task tool and decodes its answer, checking that the text and the
// structured content are the same JSON object.
func taskTool(t *testing.T, s *sdk.ClientSession, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", tool, args, err)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("%s: text %q is not a JSON object: %v", tool, text(res), err)
	}
	if got := structured(t, res); !reflect.DeepEqual(got, fromText) {
		t.Errorf("%s: structured content %v differs from the text %v", tool, got, fromText)
	}
	if _, isErr := fromText["error"]; isErr != res.IsError {
		t.Errorf("%s: answer %v with IsError %v", tool, fromText, res.IsError)
	}
	return fromText, res.IsError
}

// A real MCP client creates a task and waits for it, runs execute_command in it (in
// /workspace/project of its container), shows and lists it, and deletes it: the
// container is gone, and the task's commands are refused after. Another agent neither
// sees the task nor runs in it; bad arguments are tool errors that create nothing.
func TestTaskTools(t *testing.T) {
	e, cli, repo := taskEnv(t)
	s := e.session(t, e.alice)

	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, name := range []string{"task_create", "task_show", "task_list", "task_delete", "exec_command"} {
		if byName[name] == nil {
			t.Errorf("tool %s missing", name)
		}
	}
	if ex := byName["execute_command"]; ex == nil || ex.Description != mcp.ExecuteCommandTaskDescription || !strings.Contains(schemaJSON(t, ex), `"task"`) {
		t.Errorf("execute_command on a gateway with tasks: %+v", ex)
	}
	var execSchema, want any
	json.Unmarshal([]byte(schemaJSON(t, byName["exec_command"])), &execSchema)
	json.Unmarshal([]byte(mcp.ExecCommandSchema), &want)
	if !reflect.DeepEqual(execSchema, want) {
		t.Errorf("exec_command's schema changed with tasks: %v", execSchema)
	}
	if in := s.InitializeResult().Instructions; !strings.Contains(in, "task_create") || !strings.Contains(in, "with `task` in /workspace/project") {
		t.Errorf("instructions do not offer the task tools:\n%s", in)
	}

	task, isErr := taskTool(t, s, "task_create", map[string]any{"repo_url": repo, "wait_ms": 300000})
	id, _ := task["task_id"].(string)
	if isErr || task["state"] != gateway.TaskReady || id == "" || task["workspace"] != docker.Project {
		t.Fatalf("task_create = %v", task)
	}
	ex, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "pwd && cat README", "task": id}})
	if err != nil || ex.IsError {
		t.Fatalf("execute_command in the task: %v %q %v", ex.IsError, text(ex), err)
	}
	if out := structured(t, ex); out["exit_code"] != 0.0 || out["stdout"] != docker.Project+"\nhello over MCP\n" {
		t.Errorf("execute_command in the task = %v", out)
	}
	// Without the task it runs at the workspace's root, on the host.
	ex, err = s.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "pwd"}})
	if err != nil || ex.IsError || structured(t, ex)["stdout"] != e.ws+"\n" {
		t.Errorf("execute_command without the task: %q %v", text(ex), err)
	}

	if got, isErr := taskTool(t, s, "task_show", map[string]any{"task_id": id}); isErr || got["state"] != gateway.TaskReady {
		t.Errorf("task_show = %v", got)
	}
	if got, isErr := taskTool(t, s, "task_list", map[string]any{"state": "live"}); isErr || len(got["tasks"].([]any)) != 1 {
		t.Errorf("task_list = %v", got)
	}

	// Bob: not his task.
	bob := e.session(t, e.bob)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"task_show", map[string]any{"task_id": id}},
		{"task_show", map[string]any{"task_id": id, "wait_ms": 10}},
		{"task_delete", map[string]any{"task_id": id}},
	} {
		if got, isErr := taskTool(t, bob, c.tool, c.args); !isErr || errorCode(got) != gateway.CodeNotFound {
			t.Errorf("bob's %s %v = %v, want NOT_FOUND", c.tool, c.args, got)
		}
	}
	if got, _ := taskTool(t, bob, "task_list", nil); len(got["tasks"].([]any)) != 0 {
		t.Errorf("bob's task_list = %v", got)
	}
	ex, err = bob.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "pwd", "task": id}})
	if err != nil || !ex.IsError || !strings.HasPrefix(text(ex), gateway.CodeNotFound) {
		t.Errorf("bob's execute_command in alice's task = %q %v, want NOT_FOUND", text(ex), err)
	}

	// Bad arguments: tool errors naming the problem.
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"task_create", map[string]any{}, "repo_url is empty"},
		{"task_create", map[string]any{"repo_url": repo, "colour": "red"}, `unknown field "colour"`},
		{"task_create", map[string]any{"repo_url": 7}, "field repo_url must be a string"},
		{"task_create", map[string]any{"repo_url": "file:///etc"}, "must be an http or https URL"},
		{"task_create", map[string]any{"repo_url": repo, "ref": "--upload-pack=touch /tmp/x"}, "is not a branch, tag or commit name"},
		{"task_create", map[string]any{"repo_url": repo, "network": "allowlist"}, "not available yet"},
		{"task_create", map[string]any{"repo_url": repo, "limits": map[string]any{"cpus": -1}}, "must not be negative"},
		{"task_show", map[string]any{}, "task_id is required"},
		{"task_show", map[string]any{"task_id": id, "extra": 1}, `unknown argument "extra"`},
		{"task_show", map[string]any{"task_id": 5}, "task_id"},
		{"task_show", map[string]any{"task_id": id, "wait_ms": -1}, "wait_ms must not be negative"},
		{"task_list", map[string]any{"limit": 0}, "limit must be an integer from 1 to 1000"},
		{"task_list", map[string]any{"state": "sleeping"}, `state "sleeping"`},
		{"task_delete", map[string]any{"task_id": "not-a-task"}, `no task "not-a-task"`},
	} {
		got, isErr := taskTool(t, s, c.tool, c.args)
		e, _ := got["error"].(map[string]any)
		if msg, _ := e["message"].(string); !isErr || !strings.Contains(msg, c.want) {
			t.Errorf("%s %v = %v, want a tool error with %q", c.tool, c.args, got, c.want)
		}
	}
	// A task id execute_command does not know is refused, never run on the host.
	ex, err = s.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "pwd", "task": "00000000-0000-4000-8000-000000000000"}})
	if err != nil || !ex.IsError || !strings.HasPrefix(text(ex), gateway.CodeNotFound) {
		t.Errorf("execute_command in an unknown task = %q %v, want NOT_FOUND", text(ex), err)
	}
	if got, _ := taskTool(t, s, "task_list", map[string]any{"limit": 1000}); len(got["tasks"].([]any)) != 1 {
		t.Errorf("the bad arguments created tasks: %v", got)
	}

	name := docker.NamePrefix + id
	if got, isErr := taskTool(t, s, "task_delete", map[string]any{"task_id": id}); isErr || got["state"] != gateway.TaskDeleted {
		t.Errorf("task_delete = %v", got)
	}
	if _, err := cli.ContainerInspect(t.Context(), name, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the container is still there after task_delete: %v", err)
	}
	ex, err = s.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "pwd", "task": id}})
	if err != nil || !ex.IsError || !strings.HasPrefix(text(ex), gateway.CodeConflict) {
		t.Errorf("execute_command in a deleted task = %q %v, want CONFLICT", text(ex), err)
	}
}
