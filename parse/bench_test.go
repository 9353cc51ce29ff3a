package parse

import (
	"strings"
	"testing"
)

// The inputs of the decision benchmark (parse + policy); parse must be a small part of it.
var benchInputs = []struct{ name, src string }{
	{"short", "cd src && go test ./... 2>&1 | tail -n 50"},
	{"script10", strings.Join([]string{
		"cd /workspace/proj/src",
		"go vet ./...",
		"git status --short",
		"ls -la ./internal",
		`grep -rn "TODO" --include='*.go' . | head -n 30`,
		"mkdir -p /workspace/proj/build",
		"cp ./README.md /workspace/proj/build/README.md",
		"go test -run 'TestFoo' ./pkg/... > /workspace/proj/build/test.log 2>&1",
		"wc -l ./cmd/main.go",
	}, "\n")},
}

func BenchmarkScript(b *testing.B) {
	opts := Options{Cwd: "/workspace/proj", Workspace: "/workspace/proj"}
	for _, in := range benchInputs {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if doc := Script(in.src, opts); doc.Error != nil {
					b.Fatal(doc.Error.Message)
				}
			}
		})
	}
}

// BenchmarkSyntaxParse measures mvdan/sh's parser alone on the same inputs: the part of
// BenchmarkScript that is not this package's.
func BenchmarkSyntaxParse(b *testing.B) {
	for _, in := range benchInputs {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseText(in.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
