package parse

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// staticWords are words that need no run-time state: what the parser computes for them must
// be exactly the fields bash produces.
var staticWords = []string{
	// quotes
	`plain`, `'a b'`, `"a b"`, `a'b'c`, `"a"'b'c`, `''`, `""`, `"'"`, `'"'`, `r''m`, `"rm"`,
	`'a\nb'`, `'\'`, `a""b`, `"a'b"`,
	// backslashes outside quotes
	`\rm`, `\a`, `\\`, `\'`, `\"`, `\$`, `a\ b`, `\{a,b}`, `\*`, `\\\\x`, `\é`,
	// backslashes inside double quotes
	`"\a"`, `"\\"`, `"\""`, `"\$"`, "\"\\`\"", `"a\bc"`, `"\'"`, `"\é"`,
	// line continuations
	"a\\\nb", "\"a\\\nb\"", "'a\\\nb'", "r\\\nm",
	// ANSI-C strings: every escape kind
	`$'\a\b\e\E\f\n\r\t\v'`, `$'\\'`, `$'\''`, `$'\"'`, `$'\?'`, `$'\x72m'`,
	`$'\101'`, `$'\0101'`, `$'\1'`, `$'\18'`, `$'\177'`, `$'\04'`, `$'\047x'`,
	`$'\x41'`, `$'\x4'`, `$'\x4g'`, `$'\xg'`, `$'\x'`, `$'\x7A7'`,
	`$'\u00e9'`, `$'\u263A'`, `$'\u41'`, `$'\u'`, `$'\ug'`, `$'\u0041B'`,
	`$'\U0001F600'`, `$'\U41'`, `$'\U'`, `$'\U000000E9'`,
	`$'\cA'`, `$'\ca'`, `$'\c?'`, `$'\c['`, `$'\c\\'`, `$'\c_x'`, `$'\cz'`,
	`$'\q'`, `$'\%'`, `$'a\0b'c`, `$'\x00'x`, `$'\c@'y`, `$'\u0000'z`, `$'\0'`,
	`$'a'$'b'`, `"$'x'"`, `$''`,
	// locale strings
	`$"x y"`, `$"a\$b"`,
	// brace expansion
	`{a,b}`, `{a,b,c}d`, `x{a,b}y`, `{a,{b,c}}`, `{a,b}{c,d}`, `{1..3}`, `{3..1}`, `{a..e}`,
	`{e..a}`, `{1..10..3}`, `{10..1..4}`, `{01..10}`, `{-3..3}`, `{a..e..2}`, `{1..3}{a..b}`,
	`{}`, `{a}`, `{a,}`, `{,a}`, `{,}`, `a{b`, `a}b`, `{a..}`, `{1..a}`, `{a,b`, `{"a,b"}`,
	`{'a','b'}`, `"{a,b}"`, `{a\,b,c}`, `{Z..a}`, `{1..3..0}`, `{1..2..-1}`, `{a..c}{1..2}`,
	`{rm,-rf,/}`, `r{m,}`, `{a,b}$'\x41'`, `{1..2}{,}`, `{x,y}.{go,c}`, `{-1..-3}`, `{a..C}`,
	`{1...3}`, `{1..3..2..1}`, `-{a,b}=`, `{a,"b c"}`, `{a,'}'}`, `{a,\}}`,
	// globs that match nothing (bash runs in an empty directory) stay as written
	`*`, `a*b`, `?`, `[ab]`, `*.go`, `'*'`, `"[a]"`, `[`, `]`, `a[b`,
	// mixtures
	`a"b"'c'\d$'e'`, `-rf`, `--opt=val`, `--`, `-`, `=x`, `a=b`, `%s`, `@`, `+`, `:`,
	`'it'"'"'s'`, `"a"b"c"`, `é`, `日本`, `"日\本"`,
}

// fragments build random static words: each is valid on its own and after any other.
var fragments = []string{
	"a", "b", "-", "=", ":", ".", "/", "@", "%", "+", ",", "}", "{", "..",
	"'x y'", "\"q z\"", "\\ ", "\\\\", "\\'", "\\\"", "\\{", "\\}", "\\,", "''", "\"\"",
	"\"\\$\"", "\"\\\\\"", "$'\\x41'", "$'\\n'", "$'\\u00e9'", "$'\\cB'", "$'\\101'", "$'\\''",
	"{a,b}", "{1..3}", "{x,{y,z}}", "{a..c..2}", "{,}", "{01..2}", "\"{a,b}\"", "'{1..2}'",
	"1", "2", "z", "é",
}

func randomWords(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, n)
	for i := range words {
		var b strings.Builder
		for k := 1 + r.IntN(5); k > 0; k-- {
			b.WriteString(fragments[r.IntN(len(fragments))])
		}
		words[i] = b.String()
	}
	return words
}

// TestBashDifferential checks static word evaluation against real bash: for every word, the
// argv the parser computes equals what `printf '%s\0' @ WORD` prints in bash.
func TestBashDifferential(t *testing.T) {
	bash := testenv.NeedCommand(t, "bash")
	words := append(append([]string{}, staticWords...), randomWords(3000)...)
	const batch = 400
	for start := 0; start < len(words); start += batch {
		ws := words[start:min(start+batch, len(words))]
		t.Run(fmt.Sprintf("words%d", start), func(t *testing.T) {
			t.Parallel()
			var script strings.Builder
			for _, w := range ws {
				// "@" first: printf without arguments would still print one empty field
				script.WriteString(`printf '%s\0' @ ` + w + "\nprintf '\\036\\0'\n")
			}
			got := parsedFields(t, script.String(), len(ws))
			want := bashFields(t, bash, script.String(), len(ws))
			for i, w := range ws {
				if diff := cmp.Diff(want[i], got[i]); diff != "" {
					t.Errorf("Script(%q) fields differ from bash (-bash +parse):\n%s", w, diff)
				}
			}
		})
	}
}

// parsedFields returns, for each `printf '%s\0' @ WORD` command, "@" and the fields of WORD.
func parsedFields(t *testing.T, script string, n int) [][]string {
	t.Helper()
	doc := Script(script, Options{MaxBytes: 1 << 20})
	if doc.Error != nil {
		t.Fatalf("Script: error %+v", *doc.Error)
	}
	if len(doc.Commands) != 2*n {
		t.Fatalf("Script: %d commands, want %d", len(doc.Commands), 2*n)
	}
	out := make([][]string, n)
	for i := range out {
		c := doc.Commands[2*i]
		if c.Dynamic {
			t.Errorf("Script: %q is dynamic", c.Argv)
		}
		out[i] = c.Argv[2:]
	}
	return out
}

// bashFields runs the script in bash, in an empty directory so that globs match nothing,
// and splits what each printf printed.
func bashFields(t *testing.T, bash, script string, n int) [][]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bash, "--norc", "--noprofile", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v: %s", err, stderr.String())
	}
	var groups [][]string
	cur := []string{}
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f == "\x1e" {
			groups = append(groups, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, f)
	}
	if len(groups) != n {
		t.Fatalf("bash printed %d groups, want %d (stderr %s)", len(groups), n, stderr.String())
	}
	return groups
}

// TestBashHeredocBodies checks here-document and here-string bodies against what bash feeds
// to cat: escapes in unquoted bodies, literal quoted bodies, tabs stripped by <<-.
func TestBashHeredocBodies(t *testing.T) {
	bash := testenv.NeedCommand(t, "bash")
	t.Parallel()
	bodies := []string{
		"plain text\n", "a\\$b \\`c\\` \\\\ \\x \\\"q\\\"\n", "line \\\ncontinued\n",
		"'single' \"double\" {a,b} * ~\n", "\ttab\n\t\ttwo\n  spaces\n", "\n\nblank\n",
		"é ü 日本\n",
	}
	var script strings.Builder
	var want []string // Body as the parser should report it, for each redirect in order
	for _, b := range bodies {
		for _, form := range []string{"<<EOF", "<<'EOF'", "<<-EOF", "<<\\EOF"} {
			script.WriteString("cat " + form + "\n" + b + "EOF\nprintf '\\036'\n")
			want = append(want, form)
		}
	}
	for _, w := range []string{`plain`, `'a b'`, `"x\$y"`, `$'\x41\n'`, `a\ b`} {
		script.WriteString("cat <<< " + w + "\nprintf '\\036'\n")
	}
	doc := Script(script.String(), Options{MaxBytes: 1 << 20})
	if doc.Error != nil {
		t.Fatalf("Script: error %+v", *doc.Error)
	}
	var got []string
	for _, c := range doc.Commands {
		if c.Name != "cat" {
			continue
		}
		if len(c.Redirects) != 1 || c.Redirects[0].Dynamic {
			t.Fatalf("Script: cat redirects %+v, want one static", c.Redirects)
		}
		body := c.Redirects[0].Body
		if c.Redirects[0].Op == "<<<" {
			body += "\n" // bash adds the newline of a here-string
		}
		got = append(got, body)
	}
	cmd := exec.CommandContext(t.Context(), bash, "--norc", "--noprofile", "-c", script.String())
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	bashBodies := strings.Split(strings.TrimSuffix(string(out), "\x1e"), "\x1e")
	if len(bashBodies) != len(got) {
		t.Fatalf("bash printed %d bodies, the parser found %d", len(bashBodies), len(got))
	}
	for i := range got {
		if got[i] != bashBodies[i] {
			form := "<<<"
			if i < len(want) {
				form = want[i]
			}
			t.Errorf("body %d (%s): parser %q, bash %q", i, form, got[i], bashBodies[i])
		}
	}
}
