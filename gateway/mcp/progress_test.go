package mcp_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/mcp"
)

// A call that carries a progress token gets progress notifications while its command
// runs, with that token and increasing progress, and none after its result; a call
// without one gets none.
func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	got := map[any][]*sdk.ProgressNotificationParams{}
	c := sdk.NewClient(&sdk.Implementation{Name: "cmdgate-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got[req.Params.ProgressToken] = append(got[req.Params.ProgressToken], req.Params)
		},
	})
	s, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: e.url + mcp.Path, HTTPClient: &http.Client{Transport: bearer{e.alice}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	count := func(token any) int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[token])
	}

	for _, c := range []struct {
		tool  string
		args  map[string]any
		token any
	}{
		{"exec_command", map[string]any{"cwd": ".", "command": []string{"sleep", "2.5"}}, "exec-1"},
		{"shell_exec", map[string]any{"uri": ".", "cmd": "sleep 2.5"}, "shell-1"},
		{"execute_command", map[string]any{"command": "sleep 2.5"}, "execute-1"},
		{"exec_command", map[string]any{"cwd": ".", "command": []string{"sleep", "1.5"}}, nil},
	} {
		p := &sdk.CallToolParams{Name: c.tool, Arguments: c.args}
		if c.token != nil {
			p.SetProgressToken(c.token)
		}
		res, err := s.CallTool(t.Context(), p)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", c.tool, err, text(res))
		}
		if c.token == nil {
			continue
		}
		n := count(c.token)
		if n < 2 {
			t.Errorf("%s: %d progress notifications for a 2.5 s command, want 2 or more (one a second)", c.tool, n)
			continue
		}
		mu.Lock()
		for i, p := range got[c.token] {
			if p.Progress != float64(i+1) || !strings.HasPrefix(p.Message, "running for ") {
				t.Errorf("%s: notification %d: progress %v %q", c.tool, i, p.Progress, p.Message)
			}
		}
		mu.Unlock()
		// Nothing arrives once the result was sent.
		if _, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "system_info"}); err != nil {
			t.Fatal(err)
		}
		if m := count(c.token); m != n {
			t.Errorf("%s: %d notifications after the result", c.tool, m-n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for token := range got {
		if token == nil {
			t.Error("a call without a progress token got notifications")
		}
	}
	if len(got) != 3 {
		t.Errorf("notifications for %d tokens, want 3: %v", len(got), got)
	}
}

// After a policy reload, a new session's instructions are the new bundle's system
// prompt; a session opened before keeps its own.
func TestInstructionsFollowReload(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "policies", "bundle"))); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *gateway.Options) { o.PolicyDir, o.NoWatch = dir, true })
	before := e.session(t, e.alice)
	const added = "zzfrobnicate"
	if strings.Contains(before.InitializeResult().Instructions, added) {
		t.Fatalf("the instructions name %s before it was added", added)
	}
	lists := filepath.Join(dir, "cmdgate", "lists", "data.yaml")
	b, err := os.ReadFile(lists)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "dotnet]", "dotnet, "+added+"]", 1)
	if changed == string(b) {
		t.Fatal("the build category's list is not where the test expects it")
	}
	if err := os.WriteFile(lists, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.ReloadPolicy(t.Context()); err != nil {
		t.Fatal(err)
	}
	after := e.session(t, e.alice)
	if got := after.InitializeResult().Instructions; !strings.Contains(got, added) || got != e.srv.Prompt() {
		t.Errorf("a session opened after the reload has the old instructions (has %s: %v)", added, strings.Contains(got, added))
	}
	if strings.Contains(before.InitializeResult().Instructions, added) {
		t.Error("the older session's instructions changed")
	}
	// Both sessions go on working.
	for _, s := range []*sdk.ClientSession{before, after} {
		if res := call(t, s, map[string]any{"cwd": ".", "command": []string{"echo", "ok"}}); res.IsError {
			t.Errorf("after the reload: %s", text(res))
		}
	}
}
