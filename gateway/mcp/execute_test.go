package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/gateway"
)

// TestExecuteTool: execute reads allowlisted files through the read-only language,
// names them in its description, answers refusals as results with the language's exit
// code, and is all a reader token's session has.
func TestExecuteTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *gateway.Options) { o.Readonly.Allow = []string{"docs/"} })
	os.MkdirAll(filepath.Join(e.ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(e.ws, "docs", "guide.md"), []byte("intro\nTODO: write\nend\n"), 0o644)
	os.WriteFile(filepath.Join(e.ws, "secret.txt"), []byte("no"), 0o644)

	s := e.session(t, e.alice)
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	for _, tl := range tools.Tools {
		if tl.Name == "execute" {
			desc = tl.Description
		}
	}
	if !strings.Contains(desc, "docs/") || !strings.Contains(desc, "no shell") {
		t.Errorf("execute's description %q: want the language and the files it may read", desc)
	}
	out := structured(t, callTool(t, s, "execute", map[string]any{"command": "cat docs/guide.md | grep -n TODO"}))
	if out["exit_code"] != 0.0 || out["stdout_text"] != "2:TODO: write\n" || out["decision"] != "allow" {
		t.Errorf("execute = %v", out)
	}
	res := callTool(t, s, "execute", map[string]any{"command": "cat secret.txt"})
	out = structured(t, res)
	if res.IsError || out["exit_code"] != 3.0 || out["error_name"] != "file_not_allowed" {
		t.Errorf("execute of a file not allowed = %v (isError %v)", out, res.IsError)
	}
	for name, args := range map[string]map[string]any{
		"no command":       {},
		"number command":   {"command": 3},
		"fractional start": {"command": "cat docs/guide.md", "start": 0.5},
		"NUL":              {"command": "cat docs/guide.md\x00"},
	} {
		if r := callTool(t, s, "execute", args); !r.IsError {
			t.Errorf("%s: execute(%v) succeeded: %v", name, args, text(r))
		}
	}

	// A reader's session: the read-only tools, and nothing that runs.
	tokens, err := gateway.OpenTokens(e.data)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := tokens.Create("rita", gateway.RoleReader)
	if err != nil {
		t.Fatal(err)
	}
	rs := e.session(t, secret)
	rtools, err := rs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range rtools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "execute,read_output" {
		t.Errorf("a reader's tools = %v, want execute and read_output", names)
	}
	if in := rs.InitializeResult().Instructions; !strings.Contains(in, "read-only") || strings.Contains(in, "exec_command") {
		t.Errorf("a reader's instructions: %q", in)
	}
	if out := structured(t, callTool(t, rs, "execute", map[string]any{"command": "head -n 1 docs/guide.md"})); out["stdout_text"] != "intro\n" {
		t.Errorf("a reader's execute = %v", out)
	}
	if _, err := rs.CallTool(t.Context(), &sdk.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cwd": ".", "command": []string{"id"}}}); err == nil {
		t.Error("a reader called exec_command")
	}
}
