package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/parse"
)

// TestParsedDocInput: the input assembled from a remembered document's parts is, byte
// for byte, the JSON of the whole document, for documents that use every part.
func TestParsedDocInput(t *testing.T) {
	t.Parallel()
	// The parts name the document's fields one by one: a new field must be added there.
	if n := reflect.TypeFor[parse.Document]().NumField(); n != 9 {
		t.Fatalf("parse.Document has %d fields; parsedDoc assembles 9: update newParsedDoc and appendInput", n)
	}
	opts := parse.Options{Cwd: "/ws/sub", Workspace: "/ws", ShellMode: "bash"}
	docs := []*parse.Document{
		parse.Script(`FOO=1 BAR="<&>" env X=y grep -rn "TODO" src > out.txt 2>&1 | head -20 && go test ./... &`, opts),
		parse.Script(`x=$(cat <<EOF
body
EOF
); f() { rm -r "$1"; }; f build`, opts),
		parse.Script("echo 'unterminated", opts),                                     // a parse error
		parse.Script(`n=$(nproc); echo $((n+1)); x='\140id\140'; echo ${x@P}`, opts), // evaluations
		parse.Argv([]string{"git", "log", "--format=%H <%ae>", "--", "a b"}, opts),
	}
	docs[0].Readonly = &parse.Readonly{Command: "cat a | head", File: "a", Path: "/ws/a"}
	for _, doc := range docs {
		doc.Principal = parse.Principal{Name: "agent \"1\" <a>", Role: "agent"}
		doc.Request.Task, doc.Request.Profile = "t-1", "default"
		doc.Sandbox = parse.Sandbox{Backend: "linux", Isolated: true, PrivateTmp: true, Home: "/data/caches/ws-1/home"}
		p, err := newParsedDoc(doc, [32]byte{})
		if err != nil {
			t.Fatal(err)
		}
		withID := *doc
		withID.Request.ID = "req-\u2028-1"
		want, _ := json.Marshal(&withID)
		got, err := p.appendInput(nil, withID.Principal, withID.Request)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%q: appendInput =\n%s\nwant\n%s (err %v)", doc.Request.Raw, got, want, err)
		}
		cmds, _ := json.Marshal(doc.Commands)
		if !bytes.Equal(p.commands, cmds) {
			t.Errorf("%q: commands = %s, want %s", doc.Request.Raw, p.commands, cmds)
		}
	}
}

// TestShape: every part of what a document depends on changes the shape.
func TestShape(t *testing.T) {
	t.Parallel()
	base := func() (*Request, parse.Options, parse.Principal, string) {
		return &Request{Script: "ls -la", ShellMode: executor.ShellDefault, Task: "t"},
			parse.Options{Cwd: "/ws", Workspace: "/ws", ShellMode: "bash", MaxBytes: 100},
			parse.Principal{Name: "a", Role: "agent"}, "default"
	}
	r, o, p, prof := base()
	want, ok := shape(r, o, p, prof)
	if !ok {
		t.Fatal("a short command has no shape")
	}
	if again, _ := shape(r, o, p, prof); again != want {
		t.Fatal("the shape is not a function of the request")
	}
	for name, change := range map[string]func(*Request, *parse.Options, *parse.Principal, *string){
		"script": func(r *Request, _ *parse.Options, _ *parse.Principal, _ *string) { r.Script = "ls -l" },
		"argv": func(r *Request, _ *parse.Options, _ *parse.Principal, _ *string) {
			r.Script, r.Argv = "", []string{"ls -la"}
		},
		"shell mode": func(_ *Request, o *parse.Options, _ *parse.Principal, _ *string) { o.ShellMode = "sh" },
		"cwd":        func(_ *Request, o *parse.Options, _ *parse.Principal, _ *string) { o.Cwd = "/ws/sub" },
		"workspace":  func(_ *Request, o *parse.Options, _ *parse.Principal, _ *string) { o.Workspace = "/other" },
		"max bytes":  func(_ *Request, o *parse.Options, _ *parse.Principal, _ *string) { o.MaxBytes = 5 },
		"name":       func(_ *Request, _ *parse.Options, p *parse.Principal, _ *string) { p.Name = "b" },
		"role":       func(_ *Request, _ *parse.Options, p *parse.Principal, _ *string) { p.Role = "admin" },
		"profile":    func(_ *Request, _ *parse.Options, _ *parse.Principal, prof *string) { *prof = "readonly" },
		"task":       func(r *Request, _ *parse.Options, _ *parse.Principal, _ *string) { r.Task = "u" },
		"fields":     func(r *Request, _ *parse.Options, p *parse.Principal, _ *string) { p.Name, p.Role = "ag", "ent" },
	} {
		r, o, p, prof := base()
		change(r, &o, &p, &prof)
		if got, _ := shape(r, o, p, prof); got == want {
			t.Errorf("changing the %s keeps the shape", name)
		}
	}
	split := []*Request{{Argv: []string{"a b", "c"}}, {Argv: []string{"a", "b c"}}}
	k1, _ := shape(split[0], o, p, prof)
	k2, _ := shape(split[1], o, p, prof)
	if k1 == k2 {
		t.Error("argv words split differently share a shape")
	}
	if _, ok := shape(&Request{Script: strings.Repeat("x", maxShapeBytes+1)}, o, p, prof); ok {
		t.Error("a huge script is remembered")
	}
}

// TestParsedDocsBounded: what is remembered stays within its memory budget, the least
// recently used documents leaving first.
func TestParsedDocsBounded(t *testing.T) {
	t.Parallel()
	p := newParsedDocs(maxParsedDocs)
	big := func() *parsedDoc { return &parsedDoc{input: make([]byte, 1<<20)} } // about 5 MB
	for i := range 20 {
		p.add([32]byte{byte(i)}, big())
		if i == 1 {
			p.get([32]byte{0}) // 0 is used again: 1 is the older
		}
		if p.bytes > maxParsedBytes {
			t.Fatalf("after %d documents: %d bytes remembered, more than %d", i+1, p.bytes, maxParsedBytes)
		}
	}
	if _, ok := p.get([32]byte{19}); !ok {
		t.Error("the newest document was evicted")
	}
	if _, ok := p.get([32]byte{1}); ok {
		t.Error("an old document is still remembered")
	}
	if n := p.lru.Len(); n < 2 || n*big().size() > maxParsedBytes {
		t.Errorf("%d documents remembered", n)
	}
	if newParsedDocs(0) != nil || newParsedDocs(-1) != nil {
		t.Error("a zero or negative size remembers documents")
	}
}
