package policies

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/cmdgate/cmdgate/parse"
)

func BenchmarkZZEval(b *testing.B) {
	e, err := New(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	s := e.state.Load()
	for _, in := range benchInputs {
		doc := parse.Script(in.script, corpusOptions)
		v := s.routes.input(doc)
		has := ast.NewObject()
		v.(ast.Object).Get(ast.StringTerm("routed")).Value.(ast.Object).Foreach(func(k, _ *ast.Term) { has.Insert(k, ast.BooleanTerm(true)) })
		v.(ast.Object).Insert(ast.StringTerm("has"), ast.NewTerm(has))
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rs, err := s.query.Eval(b.Context(), rego.EvalParsedInput(v), rego.EvalMetrics(noMetrics))
				if err != nil || len(rs) == 0 {
					b.Fatal(err, rs)
				}
			}
		})
	}
}
