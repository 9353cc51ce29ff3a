package policies

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/cmdgate/cmdgate/parse"
)

// TestInputValueMatchesJSON holds the hand-written converter equal to the value the
// document's JSON encoding gives (plus "contained"), for every corpus script (so a
// field added to the document and not to the converter fails here).
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
	sandboxed := parse.Script("cat ~/.npmrc > /tmp/x", corpusOptions)
	sandboxed.Sandbox = parse.Sandbox{Backend: "linux", Isolated: true, PrivateTmp: true, Home: "/data/caches/ws-1/home"}
	docs = append(docs, sandboxed)
	read := parse.Script("cat /srv/ws/docs/a.md | grep -n TODO", corpusOptions)
	read.Request.Profile, read.Request.Source = "readonly", "execute"
	read.Readonly = &parse.Readonly{Command: "cat docs/a.md | grep -n TODO", File: "docs/a.md", Path: "/srv/ws/docs/a.md"}
	docs = append(docs, read)
	for _, doc := range docs {
		m := jsonInput(t, doc)
		m["words"] = Words(doc)
		if cmds, ok := m["commands"].([]any); ok {
			for i, c := range cmds {
				c.(map[string]any)["contained"] = Contained(&doc.Commands[i])
			}
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

func TestContained(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		want   []bool
	}{
		{"ls", []bool{true}},
		{"ls src ./README.md /workspace/proj/x", []bool{true}},
		{"go test ./... 2>&1 | tail -n 50", []bool{true, true}},
		{"cat > notes.md <<'EOF'\nhi\nEOF", []bool{true}},
		{"grep x <<< 'text' >&2", []bool{true}},
		{"cd src && ls ../x", []bool{true, true}},
		{"ls /etc", []bool{false}},
		{"ls ..", []bool{false}},
		{"ls ~/x", []bool{false}},
		{"ls $X", []bool{false}},
		{"$CMD", []bool{false}},
		{"/bin/l?", []bool{false}},
		{"A=1 ls", []bool{false}},
		{"ls .git/config", []bool{false}},
		{"ls sub/.git", []bool{false}},
		{"ls .gitignore", []bool{true}},
		{"echo x > /tmp/x", []bool{false}},
		{"echo x 2>/dev/null", []bool{false}},
		{"echo x > $F", []bool{false}},
		{"echo x >> .git/hooks/pre-commit", []bool{false}},
		{"cat <<EOF\n$X\nEOF", []bool{false}},
		{"cat < input.txt", []bool{true}},
		{"cat < /etc/shadow", []bool{false}},
		{"cd $D && ls x", []bool{false, false}},
		{"find . -exec rm {} +", []bool{true, false}},
		{"grep --file=/etc/x y", []bool{false}},
		{"grep -f/etc/x y", []bool{false}},
		{"gcc -I../include x.c", []bool{false}},
		{"curl --netrc-file=~/.netrc x", []bool{false}},
		{"grep --include='*.go' -rn x .", []bool{true}},
		{"go test -coverprofile=cover.out ./...", []bool{true}},
		{"echo -- --file=/etc/x", []bool{true}},
		{"make -fsub/../../x.mk", []bool{false}},
		{"make --file=sub/..", []bool{false}},
		{"go test ./...", []bool{true}},
		{"go test -modfile=/tmp/go.mod ./...", []bool{false}},
		{"go test -run=TestX ./...", []bool{true}},
	} {
		doc := parse.Script(tc.script, corpusOptions)
		var got []bool
		for i := range doc.Commands {
			got = append(got, Contained(&doc.Commands[i]))
		}
		if !cmp.Equal(got, tc.want) {
			t.Errorf("Contained(%q) = %v, want %v", tc.script, got, tc.want)
		}
	}
}

// TestContainedChangesNoDecision: the decisions with the derived fields "contained"
// and "words" (the fast paths) equal those without them (every rule runs, lib.words is
// built by the bundle), for every corpus script.
func TestContainedChangesNoDecision(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	for _, c := range loadCorpus(t) {
		doc := parse.Script(c.script, corpusOptions)
		fast, err := e.Decide(t.Context(), doc)
		if err != nil {
			t.Fatal(err)
		}
		m := jsonInput(t, doc)
		full, err := e.DecideInput(t.Context(), m)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(full, fast); diff != "" {
			t.Errorf("%s:%d: %q: decision with contained differs (-without +with):\n%s", c.file, c.line, c.script, diff)
		}
	}
}

// TestWordsMatchesRego holds Words equal to what the bundle builds for a document
// without the field (lib.words), for every corpus script and a few shapes of their own.
func TestWordsMatchesRego(t *testing.T) {
	t.Parallel()
	b, err := loadBundle(embedded, embeddedRoot, "embedded", "policies/bundle")
	if err != nil {
		t.Fatal(err)
	}
	pq, err := rego.New(rego.Query("data.cmdgate.lib.words"), rego.Compiler(b.compiler)).PrepareForEval(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	scripts := []string{
		"",
		"echo 'unterminated",
		"curl --unix-socket /var/run/docker.sock http://x/ > out.txt 2>&1 < /run/in",
		"cat <<EOF > f\nbody\nEOF\nls 'a\nb' $X",
	}
	for _, c := range loadCorpus(t) {
		scripts = append(scripts, c.script)
	}
	for _, s := range scripts {
		doc := parse.Script(s, corpusOptions)
		m := jsonInput(t, doc)
		rs, err := pq.Eval(t.Context(), rego.EvalInput(m))
		if err != nil || len(rs) != 1 {
			t.Fatalf("lib.words on %q: %v, %v", s, rs, err)
		}
		if got, want := Words(doc), rs[0].Expressions[0].Value; got != want {
			t.Errorf("Words(%q) = %q, lib.words = %q", s, got, want)
		}
	}
}

// jsonInput is doc as a raw JSON input document: its JSON encoding decoded into a map,
// without the fields the engine derives (contained, words).
func jsonInput(t testing.TB, doc *parse.Document) map[string]any {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
