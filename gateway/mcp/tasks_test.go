package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/mcp"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// Without tasks the server has no task tools, execute_command keeps its definition
// without task (and refuses one rather than run the command on the host), and the
// instructions do not speak of tasks.
func TestNoTaskTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if strings.HasPrefix(tl.Name, "task_") {
			t.Errorf("tool %s offered with tasks disabled", tl.Name)
		}
		if tl.Name != "execute_command" {
			continue
		}
		var got, want any
		json.Unmarshal([]byte(schemaJSON(t, tl)), &got)
		json.Unmarshal([]byte(mcp.ExecuteCommandSchema), &want)
		if tl.Description != mcp.ExecuteCommandDescription || !reflect.DeepEqual(got, want) {
			t.Errorf("execute_command without tasks: %q %v", tl.Description, got)
		}
	}
	if in := s.InitializeResult().Instructions; strings.Contains(in, "task_create") || strings.Contains(in, "/v1/tasks") || strings.Contains(in, "with `task`") {
		t.Errorf("instructions offer tasks with tasks disabled:\n%s", in)
	}
	ex, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "pwd", "task": "00000000-0000-4000-8000-000000000000"}})
	if err != nil || !ex.IsError || !strings.Contains(text(ex), "NOT_FOUND: tasks are not enabled on this gateway") {
		t.Errorf("execute_command with a task on a gateway without tasks = %q %v", text(ex), err)
	}
	// The task tools are not there to call.
	if res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "task_list", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("task_list answered on a gateway without tasks: %q", text(res))
	}
}

// On a gateway with tasks there are the task tools, execute_command takes task and the
// instructions offer them; on one that runs commands in tasks only, execute_command
// requires task.
func TestTaskToolDefinitions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sandbox, description string
		required             []any
	}{
		{gateway.SandboxProcess, mcp.ExecuteCommandTaskDescription, []any{"command"}},
		{gateway.SandboxDocker, mcp.ExecuteCommandTaskOnlyDescription, []any{"command", "task"}},
	} {
		t.Run(c.sandbox, func(t *testing.T) {
			t.Parallel()
			if c.sandbox == gateway.SandboxDocker {
				needEngine(t) // sandbox docker refuses to start without one
			}
			// Under sandbox process the core warns when no engine answers: the
			// definitions do not need one.
			e := newEnv(t, func(o *gateway.Options) { o.Sandbox, o.Tasks.Enabled = c.sandbox, true })
			s := e.session(t, e.alice)
			tools, err := s.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]*sdk.Tool{}
			for _, tl := range tools.Tools {
				names[tl.Name] = tl
			}
			for _, n := range []string{"task_create", "task_show", "task_list", "task_delete"} {
				if names[n] == nil {
					t.Errorf("sandbox %s: tool %s missing", c.sandbox, n)
				}
			}
			ex := names["execute_command"]
			var schema struct {
				Properties map[string]any
				Required   []any
			}
			json.Unmarshal([]byte(schemaJSON(t, ex)), &schema)
			if ex.Description != c.description || schema.Properties["task"] == nil || !reflect.DeepEqual(schema.Required, c.required) {
				t.Errorf("sandbox %s: execute_command %q %s", c.sandbox, ex.Description, schemaJSON(t, ex))
			}
			// Under sandbox docker the prompt is the per-task container text, which names
			// no tools.
			if in := s.InitializeResult().Instructions; c.sandbox != gateway.SandboxDocker && !strings.Contains(in, mcp.TaskPromptTools[0]) {
				t.Errorf("sandbox %s: instructions lack the task tools:\n%s", c.sandbox, in)
			}
		})
	}
}

// needEngine skips (fails under CI=true) when no Docker engine answers.
func needEngine(t *testing.T) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		testenv.Skip(t, "docker client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		testenv.Skip(t, "no Docker engine answers (start dockerd): %v", err)
	}
}

// schemaJSON is a tool's input schema as JSON.
func schemaJSON(t *testing.T, tool *sdk.Tool) string {
	t.Helper()
	b, err := json.Marshal(tool.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
