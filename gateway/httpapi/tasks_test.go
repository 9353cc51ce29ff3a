package httpapi

import (
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"
)

// On a gateway without tasks, /v1/tasks answers 404 NOT_FOUND with the core's message
// (after authentication and the role check, as every endpoint), whatever the body, and
// the system prompt does not speak of tasks.
func TestTaskHTTPDisabled(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const msg = "tasks are not enabled on this gateway"
	for _, c := range []struct {
		method, path, who, body string
		status                  int
	}{
		{"POST", "/v1/tasks", "agent", `{"repo_url": "https://github.com/o/r.git"}`, 404},
		{"POST", "/v1/tasks", "agent", `{"repo_url": 5`, 404},
		{"POST", "/v1/tasks", "admin", ``, 404},
		{"GET", "/v1/tasks", "agent", ``, 404},
		{"GET", "/v1/tasks?limit=-1", "auditor", ``, 404},
		{"GET", "/v1/tasks/00000000-0000-4000-8000-000000000000?wait_ms=1000", "agent", ``, 404},
		{"DELETE", "/v1/tasks/00000000-0000-4000-8000-000000000000", "agent", ``, 404},
		{"POST", "/v1/tasks", "approver", `{}`, 403},
		{"POST", "/v1/tasks", "auditor", `{}`, 403},
		{"GET", "/v1/tasks", "none", ``, 401},
	} {
		var body []byte
		if c.body != "" || c.method == "POST" {
			body = []byte(c.body)
		}
		a := env.do(c.method, c.path, c.who, body)
		if a.status != c.status || c.status == 404 && (a.errorCode() != gateway.CodeNotFound || !strings.Contains(string(a.body), msg)) {
			t.Errorf("%s %s as %s = %d %s, want %d", c.method, c.path, c.who, a.status, a.body, c.status)
		}
	}
	var pr struct{ Prompt string }
	env.do("GET", "/v1/policy/prompt", "agent", nil).decode(t, &pr)
	if strings.Contains(pr.Prompt, "/v1/tasks") {
		t.Errorf("the prompt of a gateway without tasks speaks of /v1/tasks:\n%s", pr.Prompt)
	}
	if !strings.Contains(pr.Prompt, "`POST /v1/exec`") {
		t.Errorf("the prompt lacks the HTTP API's tools:\n%s", pr.Prompt)
	}
}

// The system prompt of a gateway with tasks tells of /v1/tasks.
func TestTaskHTTPPrompt(t *testing.T) {
	t.Parallel()
	// The core connects to the engine when it starts (a warning when none answers):
	// the prompt does not need one.
	env := newEnv(t, func(o *gateway.Options) { o.Tasks.Enabled = true })
	var pr struct{ Prompt string }
	env.do("GET", "/v1/policy/prompt", "agent", nil).decode(t, &pr)
	if !strings.Contains(pr.Prompt, TaskPromptTools[0]) {
		t.Errorf("the prompt of a gateway with tasks lacks the tasks API:\n%s", pr.Prompt)
	}
}
