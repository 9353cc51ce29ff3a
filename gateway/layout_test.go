package gateway

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The core knows no transport: none of its files imports net/http, echo, the MCP SDK
// or a front of its own (gateway/...). The fronts import the core, never the other way.
func TestCoreImportsNoFront(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case path == "net/http", strings.HasPrefix(path, "net/http/"),
				strings.HasPrefix(path, "github.com/labstack/echo"),
				strings.HasPrefix(path, "github.com/modelcontextprotocol/"),
				strings.HasPrefix(path, "github.com/cmdgate/cmdgate/gateway/"):
				t.Errorf("%s imports %s: the core must not know its fronts or their transports", name, path)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d files of the core were checked", checked)
	}
}
