package policies

import (
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/cmdgate/cmdgate/parse"
)

// TestInputValueMatchesJSON holds the hand-written converter equal to the value the
// document's JSON encoding gives, for every corpus script (so a field added to the
// document and not to the converter fails here).
func TestInputValueMatchesJSON(t *testing.T) {
	t.Parallel()
	docs := []*parse.Document{
		{}, // nil slices and maps
		parse.Argv([]string{"git", "status"}, corpusOptions),
		parse.Script("echo 'unterminated", corpusOptions),
		parse.Script("A=1 B=$X env C=2 ls >out 2>&1 <in; x=1; for f in a b; do echo $f; done <<'EOF'\nbody\nEOF\n", corpusOptions),
	}
	for _, c := range loadCorpus(t) {
		docs = append(docs, parse.Script(c.script, corpusOptions))
	}
	for _, doc := range docs {
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var m any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		want, err := ast.InterfaceToValue(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := InputValue(doc); got.Compare(want) != 0 {
			t.Fatalf("InputValue(%q) =\n%v\nwant\n%v", doc.Request.Raw, got, want)
		}
	}
	if got := InputValue(nil); got.Compare(ast.NewObject()) != 0 {
		t.Errorf("InputValue(nil) = %v, want {}", got)
	}
}

func BenchmarkInputValue(b *testing.B) {
	for _, in := range benchInputs {
		doc := parse.Script(in.script, corpusOptions)
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				InputValue(doc)
			}
		})
	}
}
