package parse

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzScript: any input gives a document (never a panic or a hang), the same document
// twice, and a document that survives a JSON round trip unchanged (no string the policy
// would see differently from what runs), with bounded nesting and size. The corpus is in
// testdata/fuzz/FuzzScript; crashers found are committed there too.
func FuzzScript(f *testing.F) {
	for _, s := range []string{"ls -la", "sudo bash -c 'rm -rf /'", "echo $(date) > f",
		"f() { ls; } && f; unset -f g; eval 'h() { :; }'; h | f; trap f EXIT",
		`x='\140id\140'; echo ${x@P} ${!x} $((x[i]+1)); [[ $y -eq 1 ]]; declare -n r=$z`,
		"tar cIf p a.tgz d --use-c=x; git -c a=b clone -uprog r; find . -exec sh {} + -o -name x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		opts := Options{Cwd: "/ws/p", Workspace: "/ws", MaxDepth: 8}
		doc := Script(src, opts)
		checkDocument(t, src, doc, opts)
		if diff := cmp.Diff(doc, Script(src, opts)); diff != "" {
			t.Fatalf("Script(%q) is not deterministic (-first +second):\n%s", src, diff)
		}
		argv := strings.Fields(src)
		adoc := Argv(argv, opts)
		checkDocument(t, src, adoc, opts)
		if len(adoc.Commands) > 0 && adoc.Commands[0].FunctionCall {
			t.Fatalf("Argv(%q): the program is a function call", argv)
		}
	})
}

func checkDocument(t *testing.T, src string, doc *Document, opts Options) {
	t.Helper()
	if doc == nil {
		t.Fatalf("Script(%q) = nil", src)
	}
	if doc.Commands == nil || doc.Assignments == nil || doc.Evaluations == nil {
		t.Fatalf("Script(%q): nil commands, assignments or evaluations", src)
	}
	for _, e := range doc.Evaluations {
		if e.Command < -1 || e.Command >= len(doc.Commands) || e.Names == nil || e.Values == nil || e.Via == nil {
			t.Fatalf("Script(%q): evaluation %+v", src, e)
		}
	}
	if doc.Error != nil {
		if len(doc.Commands) != 0 || len(doc.Assignments) != 0 || len(doc.Evaluations) != 0 || doc.Features != (Features{}) {
			t.Fatalf("Script(%q): error %+v with commands, assignments or features", src, *doc.Error)
		}
		if doc.Error.Line < 1 || doc.Error.Col < 1 {
			t.Fatalf("Script(%q): error position %d:%d", src, doc.Error.Line, doc.Error.Col)
		}
		return
	}
	if len(doc.Commands) > maxWords {
		t.Fatalf("Script(%q): %d commands", src, len(doc.Commands))
	}
	for i, c := range doc.Commands {
		if c.Index != i {
			t.Fatalf("Script(%q): command %d has index %d", src, i, c.Index)
		}
		if len(c.Via) > opts.MaxDepth {
			t.Fatalf("Script(%q): command %d via %d wrappers, past MaxDepth %d", src, i, len(c.Via), opts.MaxDepth)
		}
		if c.Argv == nil || c.Flags == nil || c.Options == nil || c.Operands == nil || c.Redirects == nil || c.Env == nil || c.Via == nil {
			t.Fatalf("Script(%q): command %d has a nil list or map", src, i)
		}
		for _, o := range c.Options {
			if o.Argi < 1 || o.Argi >= len(c.Argv) || o.Name == "" {
				t.Fatalf("Script(%q): option %+v does not match argv %q", src, o, c.Argv)
			}
		}
		if len(c.Argv) > 0 && c.Path != c.Argv[0] {
			t.Fatalf("Script(%q): command %d path %q, argv[0] %q", src, i, c.Path, c.Argv[0])
		}
		for _, o := range c.Operands {
			if o.InsideWorkspace && (o.Path == "" || !strings.HasPrefix(o.Path, "/ws")) {
				t.Fatalf("Script(%q): operand %+v inside the workspace", src, o)
			}
			if o.Argi < 1 || o.Argi >= len(c.Argv) || c.Argv[o.Argi] != o.Text {
				t.Fatalf("Script(%q): operand %+v does not match argv %q", src, o, c.Argv)
			}
		}
		if c.FunctionCall && (c.DynamicName || len(c.Argv) == 0 || c.Path != c.Name || !funcName(c.Name)) {
			t.Fatalf("Script(%q): command %d %q is a function call", src, i, c.Argv)
		}
		if c.Context.PipelineID < -1 || (c.Context.PipelineID == -1) == c.Context.Pipeline {
			t.Fatalf("Script(%q): command %d context %+v", src, i, c.Context)
		}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("Script(%q): marshal: %v", src, err)
	}
	var back Document
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("Script(%q): unmarshal: %v", src, err)
	}
	if diff := cmp.Diff(*doc, back); diff != "" {
		t.Fatalf("Script(%q): the JSON form differs from the document (-doc +json):\n%s", src, diff)
	}
}
