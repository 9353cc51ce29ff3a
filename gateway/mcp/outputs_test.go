package mcp_test

import (
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func callTool(t testing.TB, s *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", name, args, err)
	}
	return res
}

// TestReadOutput: exec_command's cut result names its output and says how to read the
// rest; read_output pages through it to the last byte, for its owner only.
func TestReadOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.session(t, e.alice)
	res := call(t, s, map[string]any{"cwd": ".", "command": []string{"seq", "1", "20000"}, "max_output_chars": 1000})
	out := structured(t, res)
	id, _ := out["output_id"].(string)
	more, _ := out["more"].(string)
	if res.IsError || out["stdout_truncated"] != true || id == "" || !strings.Contains(more, "read_output") || !strings.Contains(more, id) {
		t.Fatalf("cut result %v: want stdout_truncated, an output_id and a hint naming read_output", out)
	}
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	var got strings.Builder
	for start := 0.0; ; {
		page := structured(t, callTool(t, s, "read_output", map[string]any{"output_id": id, "start": start}))
		text, _ := page["stdout_text"].(string)
		got.WriteString(text)
		if page["has_next_start"] != true {
			break
		}
		start = page["next_start"].(float64)
	}
	if got.String() != want.String() {
		t.Errorf("read_output pages give %d bytes, want the %d of seq 1 20000", got.Len(), want.Len())
	}

	// Not bob's to read, and bad arguments are tool errors naming the problem.
	bob := e.session(t, e.bob)
	if r := callTool(t, bob, "read_output", map[string]any{"output_id": id}); !r.IsError || !strings.Contains(text(r), "NOT_FOUND") {
		t.Errorf("bob reading alice's output: %v %q", r.IsError, text(r))
	}
	for name, args := range map[string]map[string]any{
		"negative start":  {"output_id": id, "start": -1},
		"fractional size": {"output_id": id, "size": 1.5},
		"unknown stream":  {"output_id": id, "stream": "stdin"},
		"no id":           {"start": 0},
		"id as number":    {"output_id": 7},
		"traversal":       {"output_id": "../../audit.db"},
		"past the end":    {"output_id": id, "start": 1e9},
	} {
		if r := callTool(t, s, "read_output", args); !r.IsError {
			t.Errorf("%s: read_output(%v) succeeded: %q", name, args, text(r))
		}
	}
}
