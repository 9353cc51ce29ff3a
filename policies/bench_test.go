package policies

import (
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/parse"
)

// benchInputs are the inputs of the speed requirement, run with cwd and
// workspace /workspace/proj.
var benchInputs = []struct {
	name, script string
}{
	{"short", `cd src && go test ./... 2>&1 | tail -n 50`},
	{"script10", strings.Join([]string{
		`cd /workspace/proj/src`,
		`go vet ./...`,
		`git status --short`,
		`ls -la ./internal`,
		`grep -rn "TODO" --include='*.go' . | head -n 30`,
		`mkdir -p /workspace/proj/build`,
		`cp ./README.md /workspace/proj/build/README.md`,
		`go test -run 'TestFoo' ./pkg/... > /workspace/proj/build/test.log 2>&1`,
		`wc -l ./cmd/main.go`,
	}, "\n")},
}

// BenchmarkDecide measures parse + decide with the default bundle, as the gateway runs
// them per request.
func BenchmarkDecide(b *testing.B) {
	e, err := New(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	opts := parse.Options{Cwd: "/workspace/proj", Workspace: "/workspace/proj"}
	for _, in := range benchInputs {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				doc := parse.Script(in.script, opts)
				d, err := e.Decide(b.Context(), doc)
				if err != nil || d.Action != ActionAllow {
					b.Fatalf("Decide(%q) = %+v, %v; want allow", in.script, d, err)
				}
			}
		})
	}
}
