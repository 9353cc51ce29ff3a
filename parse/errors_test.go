package parse

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refused checks that doc is a refusal: an error at the given position (0 means any valid
// position), no commands, no assignments, no features.
func refused(t *testing.T, call string, doc *Document, msg string, line, col int) {
	t.Helper()
	if doc == nil {
		t.Fatalf("%s = nil, want a document", call)
	}
	if doc.Error == nil {
		t.Fatalf("%s: error = nil, want %q (commands %d)", call, msg, len(doc.Commands))
	}
	if !strings.Contains(doc.Error.Message, msg) {
		t.Errorf("%s: error %q, want it to contain %q", call, doc.Error.Message, msg)
	}
	if doc.Error.Line < 1 || doc.Error.Col < 1 {
		t.Errorf("%s: error at %d:%d, want a 1-based position", call, doc.Error.Line, doc.Error.Col)
	}
	if line > 0 && (doc.Error.Line != line || doc.Error.Col != col) {
		t.Errorf("%s: error at %d:%d, want %d:%d", call, doc.Error.Line, doc.Error.Col, line, col)
	}
	if doc.Commands == nil || len(doc.Commands) != 0 {
		t.Errorf("%s: commands = %v, want []", call, doc.Commands)
	}
	if doc.Assignments == nil || len(doc.Assignments) != 0 {
		t.Errorf("%s: assignments = %v, want []", call, doc.Assignments)
	}
	if doc.Features != (Features{}) {
		t.Errorf("%s: features = %+v, want none", call, doc.Features)
	}
}

func TestScriptRefusesBadInput(t *testing.T) {
	t.Parallel()
	nest := func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	tests := []struct {
		name      string
		src       string
		opts      Options
		msg       string
		line, col int
	}{
		{"nul byte", "echo a\nls \x00 b", Options{}, "NUL byte", 2, 4},
		{"nul in quotes", "echo 'a\x00'", Options{}, "NUL byte", 1, 8},
		{"invalid utf-8", "echo ok\necho \xff\xfe", Options{}, "not valid UTF-8", 2, 6},
		{"truncated utf-8", "echo \xe2\x82", Options{}, "not valid UTF-8", 1, 6},
		{"over the default size", "echo " + strings.Repeat("a", DefaultMaxBytes), Options{}, "larger than 65536 bytes", 1, DefaultMaxBytes + 1},
		{"over a given size", "echo 123456", Options{MaxBytes: 8}, "larger than 8 bytes", 1, 9},
		{"size past the parser's columns", strings.Repeat("x", 20000) + " \x00", Options{}, "NUL byte", 1, 20002},
		{"substitutions 1000 deep", "echo " + nest("$(", "x", ")", 1000), Options{}, "nesting deeper than 16 levels", 1, 38},
		{"subshells 1000 deep", nest("( ", "x", " )", 1000), Options{}, "nesting deeper than 16 levels", 1, 33},
		{"blocks 1000 deep", nest("{ ", "x;", " }", 1000), Options{}, "nesting deeper than 16 levels", 1, 33},
		{"if 1000 deep", nest("if a; then ", "x", "; fi", 1000), Options{}, "nesting deeper than 16", 0, 0},
		{"process substitution deep", "cat " + nest("<(cat ", "x", ")", 100), Options{}, "nesting deeper than 16", 0, 0},
		{"parameter defaults deep", "echo " + nest("${a:-$(", "x", ")}", 100), Options{}, "nesting deeper than 16", 0, 0},
		{"wrappers past the limit", strings.Repeat("sudo ", 17) + "ls", Options{}, "nesting deeper than 16", 1, 1},
		{"wrappers past a given limit", "nice nice nice ls", Options{MaxDepth: 2}, "nesting deeper than 2", 1, 1},
		{"wrappers 1000 deep", strings.Repeat("env ", 1000) + "ls", Options{}, "nesting deeper than 16", 1, 1},
		{"nested shells past the limit", nestedShells(5), Options{MaxDepth: 4}, "nesting deeper than 4", 1, 1},
		{"eval 1000 deep", strings.Repeat("eval ", 1000) + "ls", Options{}, "nesting deeper than 16", 1, 1},
		{"quoted evals past the limit", nestedEvals(5), Options{MaxDepth: 4}, "nesting deeper than 4", 1, 1},
		{"syntax error", "echo 'abc", Options{}, "without closing quote", 1, 6},
		{"syntax error line 3", "ls\nls\nfi", Options{}, "`fi` can only be used", 3, 1},
		{"unclosed heredoc", "cat <<EOF\nx", Options{}, "unclosed here-document", 1, 5},
		{"nested script syntax error", "ls; sh -c 'if'", Options{}, "sh script: line 1 col 1", 1, 5},
		{"invalid utf-8 after decoding", "echo ok; echo $'\\xc3'", Options{}, "not valid UTF-8", 1, 15},
		{"brace expansion too large", "echo {1..20}{1..20}{1..20}{1..20}", Options{}, "brace expansion", 1, 6},
		{"too many words", strings.Repeat("echo {1..9}{1..9}{1..9}{1..9};", 11), Options{}, "more than 65536 words", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := Script(tt.src, tt.opts)
			refused(t, "Script("+tt.name+")", doc, tt.msg, tt.line, tt.col)
			if doc.Request.Raw != tt.src || doc.Request.Source != "script" {
				t.Errorf("Script(%s): request %+v, want the raw script kept", tt.name, doc.Request)
			}
		})
	}
}

// nestedShells builds bash -c 'bash -c …' n levels deep with correct quoting (each level
// quadruples the quotes: keep n small).
func nestedShells(n int) string {
	s := "ls"
	for range n {
		s = "bash -c " + shellQuote(s)
	}
	return s
}

func nestedEvals(n int) string {
	s := "ls"
	for range n {
		s = "eval " + shellQuote(s)
	}
	return s
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func TestScriptNestedWithinLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		src   string
		depth int
	}{
		{"shells", nestedShells(4), 4},
		{"evals", strings.Repeat("eval ", 16) + "ls", 16},
		{"wrappers", strings.Repeat("nice ", 16) + "ls", 16},
	} {
		doc := Script(tt.src, Options{MaxDepth: tt.depth})
		if doc.Error != nil {
			t.Fatalf("Script(%s): error %+v", tt.name, *doc.Error)
		}
		last := doc.Commands[len(doc.Commands)-1]
		if last.Name != "ls" || len(last.Via) != tt.depth {
			t.Errorf("Script(%s): last command %q via %v, want ls via %d wrappers", tt.name, last.Name, last.Via, tt.depth)
		}
	}
}

func TestArgvRefusesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		argv      []string
		opts      Options
		msg       string
		line, col int
	}{
		{"nil", nil, Options{}, "argv is empty", 1, 1},
		{"empty", []string{}, Options{}, "argv is empty", 1, 1},
		{"nul byte", []string{"echo", "a\x00b"}, Options{}, "argv[1] contains a NUL byte", 1, 7},
		{"invalid utf-8", []string{"ls", "ok", "\xff"}, Options{}, "argv[2] is not valid UTF-8", 1, 7},
		{"too large", []string{"echo", strings.Repeat("a", 100)}, Options{MaxBytes: 50}, "larger than 50 bytes", 1, 51},
		{"wrappers past the limit", append(strings.Fields(strings.Repeat("sudo ", 20)), "ls"), Options{}, "nesting deeper than 16", 1, 1},
		{"nested script syntax error", []string{"sh", "-c", "echo 'x"}, Options{}, "sh script: line 1 col 6", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := Argv(tt.argv, tt.opts)
			refused(t, "Argv("+tt.name+")", doc, tt.msg, tt.line, tt.col)
			if doc.Request.Source != "argv" || doc.Request.ShellMode != "direct" {
				t.Errorf("Argv(%s): request %+v, want source argv, shell_mode direct", tt.name, doc.Request)
			}
		})
	}
}

func TestZeroOptions(t *testing.T) {
	t.Parallel()
	doc := Script("cat ../a /etc/b", Options{})
	if doc.Error != nil {
		t.Fatalf("Script with zero options: error %+v", *doc.Error)
	}
	want := Command{
		Index: 0, Name: "cat", Path: "cat", Argv: []string{"cat", "../a", "/etc/b"},
		Flags: []string{}, Options: []Option{},
		Operands: []Operand{
			{Text: "../a", Path: "", Argi: 1},
			{Text: "/etc/b", Path: "/etc/b", Argi: 2},
		},
		Redirects: []Redirect{}, Env: map[string]string{}, Via: []string{},
		Context: Context{PipelineID: -1}, Pos: Pos{Line: 1, Col: 1},
	}
	if diff := cmp.Diff([]Command{want}, doc.Commands); diff != "" {
		t.Errorf("Script with zero options (-want +got):\n%s", diff)
	}
	if doc.Request.ShellMode != "default" || doc.Request.Cwd != "" || doc.Request.Workspace != "" {
		t.Errorf("Script with zero options: request %+v", doc.Request)
	}
}
