package parse

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected documents of testdata/*.txtar")

// goldenOptions are the options of a golden case unless its NAME.opts file says otherwise.
var goldenOptions = Options{Cwd: "/workspace/proj", Workspace: "/workspace/proj"}

// TestGolden runs the cases of testdata/*.txtar. A case NAME is a file NAME.sh (a script;
// its final newline is not part of it) or NAME.argv (a JSON array of words), optionally
// NAME.opts (JSON Options), and NAME.json, the exact document expected, one command or
// assignment per line. With -update the NAME.json files are rewritten (review them: they
// are the specification).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files in testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var out []txtar.File
			cases := 0
			for i := 0; i < len(ar.Files); i++ {
				f := ar.Files[i]
				name, ext := splitExt(f.Name)
				if ext != ".sh" && ext != ".argv" {
					if ext != ".json" || !*update {
						out = append(out, f)
					}
					continue
				}
				cases++
				out = append(out, f)
				opts := goldenOptions
				var want []byte
				for _, g := range ar.Files {
					switch g.Name {
					case name + ".opts":
						opts = Options{}
						if err := json.Unmarshal(g.Data, &opts); err != nil {
							t.Fatalf("%s: %v", g.Name, err)
						}
					case name + ".json":
						want = g.Data
					}
				}
				var doc *Document
				if ext == ".sh" {
					doc = Script(strings.TrimSuffix(string(f.Data), "\n"), opts)
				} else {
					var argv []string
					if err := json.Unmarshal(f.Data, &argv); err != nil {
						t.Fatalf("%s: %v", f.Name, err)
					}
					doc = Argv(argv, opts)
				}
				got := formatDocument(t, doc)
				if *update {
					// keep NAME.opts right after the input, then the document
					if i+1 < len(ar.Files) && ar.Files[i+1].Name == name+".opts" {
						out = append(out, ar.Files[i+1])
						i++
					}
					out = append(out, txtar.File{Name: name + ".json", Data: got})
					continue
				}
				if want == nil {
					t.Errorf("%s: no %s.json (run go test -run TestGolden -update)", name, name)
					continue
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
			}
			if cases == 0 {
				t.Errorf("%s has no cases", file)
			}
			if *update {
				ar.Files = out
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func splitExt(name string) (string, string) {
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext), ext
}

// formatDocument renders a document as indented JSON with one command, assignment or
// object per line, so that golden files can be read and diffed.
func formatDocument(t *testing.T, d *Document) []byte {
	t.Helper()
	line := func(v any) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	var b strings.Builder
	b.WriteString("{\n")
	b.WriteString(`  "principal": ` + line(d.Principal) + ",\n")
	b.WriteString(`  "request": ` + line(d.Request) + ",\n")
	list := func(key string, n int, item func(int) any) {
		b.WriteString(`  "` + key + `": [`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    " + line(item(i)))
		}
		if n > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString("],\n")
	}
	list("commands", len(d.Commands), func(i int) any { return d.Commands[i] })
	list("assignments", len(d.Assignments), func(i int) any { return d.Assignments[i] })
	list("evaluations", len(d.Evaluations), func(i int) any { return d.Evaluations[i] })
	b.WriteString(`  "features": ` + line(d.Features) + ",\n")
	b.WriteString(`  "error": ` + line(d.Error) + "\n}\n")
	// The rendering must stay the document's JSON.
	var fromLines, fromDoc any
	if err := json.Unmarshal([]byte(b.String()), &fromLines); err != nil {
		t.Fatalf("golden rendering is not JSON: %v", err)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &fromDoc); err != nil {
		t.Fatal(err)
	}
	// The sandbox is the caller's to fill: parsing leaves it zero, and the golden files
	// leave it out.
	if d.Sandbox != (Sandbox{}) {
		t.Fatalf("parse filled the sandbox: %+v", d.Sandbox)
	}
	delete(fromDoc.(map[string]any), "sandbox")
	if diff := cmp.Diff(fromDoc, fromLines); diff != "" {
		t.Fatalf("golden rendering differs from json.Marshal (-marshal +rendering):\n%s", diff)
	}
	return []byte(b.String())
}
