package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
)

// sampleInput returns a realistic policy input (contract 1 of docs/architecture.md) for request n.
func sampleInput(n int) json.RawMessage {
	doc := map[string]any{
		"principal": map[string]any{"name": fmt.Sprintf("agent-%d", n%7), "role": "agent"},
		"request": map[string]any{
			"id": fmt.Sprintf("req-%08d", n), "source": "script", "shell_mode": "default",
			"profile": "default", "raw": fmt.Sprintf("rm -rf build-%d && make -j4 test", n),
			"cwd": "/srv/ws/app", "workspace": "/srv/ws", "task": "default",
		},
		"commands": []any{
			map[string]any{
				"index": 0, "name": "rm", "path": "rm", "argv": []any{"rm", "-rf", fmt.Sprintf("build-%d", n)},
				"flags":     []any{"-r", "-f"},
				"operands":  []any{map[string]any{"text": fmt.Sprintf("build-%d", n), "path": fmt.Sprintf("/srv/ws/app/build-%d", n), "inside_workspace": true}},
				"redirects": []any{}, "env": map[string]any{}, "dynamic": false, "dynamic_name": false, "glob": false,
				"via":     []any{},
				"context": map[string]any{"pipeline": false, "subshell": false, "substitution": false, "background": false, "condition": false, "function": false},
				"pos":     map[string]any{"line": 1, "col": 1},
			},
			map[string]any{
				"index": 1, "name": "make", "path": "make", "argv": []any{"make", "-j4", "test"},
				"flags": []any{"-j4"}, "operands": []any{map[string]any{"text": "test", "path": "/srv/ws/app/test", "inside_workspace": true}},
				"redirects": []any{}, "env": map[string]any{}, "dynamic": false, "dynamic_name": false, "glob": false,
				"via":     []any{},
				"context": map[string]any{"pipeline": false, "subshell": false, "substitution": false, "background": false, "condition": true, "function": false},
				"pos":     map[string]any{"line": 1, "col": 19},
			},
		},
		"features": map[string]any{"command_substitution": false, "process_substitution": false, "background": false,
			"heredoc": false, "function_definition": false, "eval": false, "nested_shell": false},
		"error": nil,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// sampleDecision returns a decision record for request n.
func sampleDecision(n int) Record {
	cmd := 0
	decision := []string{"allow", "deny", "ask"}[n%3]
	r := Record{
		Kind:      KindDecision,
		Principal: Principal{Name: fmt.Sprintf("agent-%d", n%7), Role: "agent"},
		RequestID: fmt.Sprintf("req-%08d", n),
		Input:     sampleInput(n),
		Decision:  decision,
		Revision:  "rev-1",
	}
	if decision != "allow" {
		r.Reasons = []Reason{{Rule: fmt.Sprintf("forbidden.rule_%d", n%50), Message: "rm -rf is forbidden", Command: &cmd}}
	}
	return r
}

func openTest(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s) = %v", dir, err)
	}
	return s
}

// execSQL runs statements on a SQLite file directly, as an attacker with write access
// to the data directory would.
func execSQL(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("exec %q: %v", s, err)
		}
	}
}

func makeSQLite(t testing.TB, path string, stmts ...string) {
	t.Helper()
	execSQL(t, path, stmts...)
}
