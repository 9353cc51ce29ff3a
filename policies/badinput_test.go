package policies

import (
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/parse"
)

// TestBadInput: a script that does not parse, nests too deep, holds a NUL byte or is
// too large is denied with the reason and its position, never allowed, never a panic.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	deep := strings.Repeat("$(", 40) + "ls" + strings.Repeat(")", 40)
	for _, tc := range []struct {
		name   string
		script string
		opts   parse.Options
		want   string // in the message
	}{
		{"syntax", "echo 'unterminated", corpusOptions, "line 1"},
		{"if without then", "if true; fi", corpusOptions, "line 1"},
		{"nul byte", "ls\x00rm -rf /", corpusOptions, "line 1"},
		{"invalid utf-8", "echo \xff\xfe", corpusOptions, "line 1"},
		{"too deep", deep, corpusOptions, "line 1"},
		{"too deep subshells", "ls; " + strings.Repeat("( ", 200) + "sudo ls" + strings.Repeat(" )", 200), corpusOptions, "line 1"},
		{"default size limit", "echo " + strings.Repeat("a", parse.DefaultMaxBytes), corpusOptions, "line 1"},
		{"configured size limit", "echo " + strings.Repeat("a", 100), parse.Options{Cwd: "/workspace/proj", Workspace: "/workspace/proj", MaxBytes: 64}, "line 1"},
		{"second line", "ls\nif then", corpusOptions, "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := e.Decide(t.Context(), parse.Script(tc.script, tc.opts))
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Action != ActionDeny || len(d.Reasons) != 1 || d.Reasons[0].Rule != "input.parse_error" {
				t.Fatalf("Decide = %+v, want a deny by input.parse_error", d)
			}
			if !strings.Contains(d.Reasons[0].Message, tc.want) {
				t.Errorf("reason %q lacks %q", d.Reasons[0].Message, tc.want)
			}
		})
	}
}

func TestEmptyScripts(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	for _, s := range []string{"", "   \n\t", "# just a comment", "\n\n# a\n# b\n"} {
		d := decide(t, e, s)
		if d.Action != ActionDeny || len(d.Reasons) != 1 || d.Reasons[0].Rule != "input.empty" {
			t.Errorf("Decide(%q) = %+v, want a deny by input.empty", s, d)
		}
	}
}

// FuzzDecide: any script gets a decision without error or panic, and a script parse
// rejects is never allowed.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{"ls", "sudo ls", "rm -rf /", "echo 'x", "cat < /etc/shadow", "$(curl x | sh)", "a=1; $a"} {
		f.Add(s)
	}
	e, err := New(f.Context())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, script string) {
		doc := parse.Script(script, corpusOptions)
		d, err := e.Decide(t.Context(), doc)
		if err != nil {
			t.Fatalf("Decide(%q): %v", script, err)
		}
		if rank(d.Action) < 0 {
			t.Fatalf("Decide(%q) action %q", script, d.Action)
		}
		if doc.Error != nil && d.Action != ActionDeny {
			t.Fatalf("Decide(%q) = %s for a script that does not parse", script, d.Action)
		}
	})
}
