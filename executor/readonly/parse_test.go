package readonly_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor/readonly"
	"github.com/google/go-cmp/cmp"
)

func TestSeedExamples(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	var lines []string
	for i := 1; i <= 300; i++ {
		l := fmt.Sprintf("line %d", i)
		if i%37 == 0 {
			l += " // TODO: fix"
		}
		lines = append(lines, l)
	}
	writeFile(t, dir, "path/to/file", strings.Join(lines, "\n")+"\n")
	a := allowlist(t, dir+"/")

	first := func(n int) string { return strings.Join(lines[:n], "\n") + "\n" }
	var todo strings.Builder
	for i, l := range lines {
		if strings.Contains(l, "TODO") {
			fmt.Fprintf(&todo, "%d:%6d\t%s\n", i+1, i+1, l)
		}
	}
	tests := []struct {
		command, normal, want string
	}{
		{"cat path/to/file | head -n 200", "cat path/to/file | head -n 200", first(200)},
		{"cat path/to/file | nl | grep -n TODO", "cat path/to/file | nl | grep -n TODO", todo.String()},
		{"cat path/to/file | sed -n '1,200p'", "cat path/to/file | sed -n 1,200p", first(200)},
		{"head -n 20 path/to/file", "cat path/to/file | head -n 20", first(20)},
		{"sed -n 1,200p path/to/file", "cat path/to/file | sed -n 1,200p", first(200)},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			p, err := readonly.Parse(tt.command)
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tt.command, err)
			}
			if got := p.String(); got != tt.normal {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.command, got, tt.normal)
			}
			out, err := execute(context.Background(), a, dir, tt.command)
			if err != nil {
				t.Fatalf("execute(%q) = %v", tt.command, err)
			}
			if diff := cmp.Diff(tt.want, string(out)); diff != "" {
				t.Errorf("execute(%q) output (-want +got):\n%s", tt.command, diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		want    *readonly.Pipeline
		normal  string
	}{
		{"cat f", &readonly.Pipeline{File: "f"}, "cat f"},
		{"  cat\tf  ", &readonly.Pipeline{File: "f"}, "cat f"},
		{"cat 'a b.txt' | head -n 20", &readonly.Pipeline{File: "a b.txt", Stages: []readonly.Stage{{"head", []string{"-n", "20"}}}}, "cat 'a b.txt' | head -n 20"},
		{`cat "a\"b" | grep "x\\y"`, &readonly.Pipeline{File: `a"b`, Stages: []readonly.Stage{{"grep", []string{`x\y`}}}}, `cat 'a"b' | grep 'x\y'`},
		{`cat 'it'\''s'`, &readonly.Pipeline{File: "it's"}, `cat 'it'\''s'`},
		{`cat a\ b`, &readonly.Pipeline{File: "a b"}, `cat 'a b'`},
		{`cat 'a\b'`, &readonly.Pipeline{File: `a\b`}, `cat 'a\b'`},
		{"cat f|nl|grep -n ''", &readonly.Pipeline{File: "f", Stages: []readonly.Stage{{"nl", nil}, {"grep", []string{"-n", ""}}}}, "cat f | nl | grep -n ''"},
		{"cat -- f", &readonly.Pipeline{File: "f"}, "cat f"},
		{"head -n5 f", &readonly.Pipeline{File: "f", Stages: []readonly.Stage{{"head", []string{"-n", "5"}}}}, "cat f | head -n 5"},
		{"tail f | sort -r", &readonly.Pipeline{File: "f", Stages: []readonly.Stage{{"tail", nil}, {"sort", []string{"-r"}}}}, "cat f | tail | sort -r"},
		{"nl 'my file'", &readonly.Pipeline{File: "my file", Stages: []readonly.Stage{{"nl", nil}}}, "cat 'my file' | nl"},
		{"sed -n 3d f | wc -l", &readonly.Pipeline{File: "f", Stages: []readonly.Stage{{"sed", []string{"-n", "3d"}}, {"wc", []string{"-l"}}}}, "cat f | sed -n 3d | wc -l"},
		{"cat ./-x | wc -c", &readonly.Pipeline{File: "./-x", Stages: []readonly.Stage{{"wc", []string{"-c"}}}}, "cat ./-x | wc -c"},
		{"cat 'é*?[~#' | grep 日本", &readonly.Pipeline{File: "é*?[~#", Stages: []readonly.Stage{{"grep", []string{"日本"}}}}, "cat 'é*?[~#' | grep '日本'"},
		{"cat ''", &readonly.Pipeline{File: ""}, "cat ''"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			p, err := readonly.Parse(tt.command)
			if err != nil {
				t.Fatalf("Parse(%q) = %v, want %v", tt.command, err, tt.want)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.command, diff)
			}
			if got := p.String(); got != tt.normal {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.command, got, tt.normal)
			}
			again, err := readonly.Parse(p.String())
			if err != nil || !cmp.Equal(again, p) {
				t.Errorf("Parse(%q) = %v, %v, want %v", p.String(), again, err, p)
			}
		})
	}
}

// TestErrors checks every error code and its exit status.
func TestErrors(t *testing.T) {
	t.Parallel()
	root := realDir(t)
	allowed := filepath.Join(root, "allowed")
	writeFile(t, allowed, "a.txt", "hello\n")
	writeFile(t, allowed, "exact.pem", "an exact entry\n")
	writeFile(t, allowed, ".env", "SECRET=1\n")
	writeFile(t, allowed, "big.txt", strings.Repeat("x", readonly.MaxFileSize)+"\n")
	writeFile(t, allowed, "max.txt", strings.Repeat("x", readonly.MaxFileSize-1)+"\n")
	if err := os.Mkdir(filepath.Join(allowed, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := writeFile(t, root, "outside/secret.txt", "SECRET\n")
	symlink(t, secret, filepath.Join(allowed, "link-secret"))
	symlink(t, filepath.Join(root, "outside"), filepath.Join(allowed, "link-dir"))
	fifo := mkfifo(t, filepath.Join(allowed, "fifo"))
	a := allowlist(t, allowed+"/", filepath.Join(allowed, "exact.pem"))

	long := strings.Repeat("d/", 2100) + "f"
	tests := []struct {
		name    string
		command string
		dir     string // for Open, default allowed
		file    string // Open this name instead of the pipeline's file
		cancel  bool   // Run with a cancelled context
		code    string
		exit    int
	}{
		{name: "ok", command: "cat a.txt | head -n 1", code: "", exit: 0},
		{name: "ok/exact-entry", command: "cat exact.pem", code: ""},
		{name: "ok/max-size", command: "cat max.txt | wc -c", code: ""},
		{name: "ok/eight-stages", command: "cat a.txt" + strings.Repeat(" | head", 7), code: ""},
		{name: "ok/dropped-dashes", command: "cat a.txt | grep -n -- -- -- -- -- -- -- h", code: ""},
		{name: "unsupported/eight-args", command: "cat a.txt | grep a b c d e f g", code: readonly.CodeUnsupported, exit: 2},

		{name: "parse/single-quote", command: "cat 'a.txt", code: readonly.CodeParse, exit: 2},
		{name: "parse/double-quote", command: `cat "a.txt`, code: readonly.CodeParse, exit: 2},
		{name: "parse/double-quote-backslash", command: `cat "a.txt\"`, code: readonly.CodeParse, exit: 2},
		{name: "parse/trailing-backslash", command: `cat a.txt\`, code: readonly.CodeParse, exit: 2},
		{name: "parse/trailing-pipe", command: "cat a.txt |", code: readonly.CodeParse, exit: 2},
		{name: "parse/leading-pipe", command: "| head", code: readonly.CodeParse, exit: 2},
		{name: "parse/double-pipe", command: "cat a.txt || head", code: readonly.CodeParse, exit: 2},
		{name: "parse/only-dashes", command: "cat a.txt | --", code: readonly.CodeParse, exit: 2},
		{name: "parse/utf8", command: "cat a\xff.txt", code: readonly.CodeParse, exit: 2},

		{name: "empty/nothing", command: "", code: readonly.CodeEmpty, exit: 2},
		{name: "empty/blanks", command: " \t ", code: readonly.CodeEmpty, exit: 2},

		{name: "forbidden/newline", command: "cat a.txt\nhead", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/newline-quoted", command: "cat 'a\n.txt'", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/carriage-return", command: "cat a.txt\r", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/nul", command: "cat a.txt\x00", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/awk", command: "cat a.txt | awk '{print}'", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/cut", command: "cat a.txt | cut -c1", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/first", command: "awk 1 a.txt", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/sh", command: "sh -c 'cat a.txt'", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/rg", command: "cat a.txt | rg x", code: readonly.CodeForbidden, exit: 2},
		{name: "forbidden/path", command: "/bin/cat a.txt", code: readonly.CodeForbidden, exit: 2},

		{name: "too_many_stages", command: "cat a.txt" + strings.Repeat(" | head", 8), code: readonly.CodeTooManyStages, exit: 2},
		{name: "too_many_args", command: "cat a.txt | grep -n a b c d e f g", code: readonly.CodeTooManyArgs, exit: 2},

		{name: "requires/grep", command: "grep X a.txt", code: readonly.CodeRequires, exit: 2},
		{name: "requires/sort", command: "sort a.txt", code: readonly.CodeRequires, exit: 2},
		{name: "requires/wc", command: "wc -l a.txt", code: readonly.CodeRequires, exit: 2},
		{name: "requires/head-no-file", command: "head -n 5", code: readonly.CodeRequires, exit: 2},
		{name: "requires/sed-no-file", command: "sed -n 1p | head", code: readonly.CodeRequires, exit: 2},
		{name: "requires/nl", command: "nl", code: readonly.CodeRequires, exit: 2},

		{name: "unsupported/sed-s", command: "cat a.txt | sed s/a/b/", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/sed-s-first", command: "sed s/a/b/ a.txt", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/sed-n-s", command: "cat a.txt | sed -n s/a/b/p", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/sed-zero", command: "cat a.txt | sed -n 0p", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/sed-backwards", command: "cat a.txt | sed -n 3,1p", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/sed-dollar-range", command: "cat a.txt | sed -n 1,p", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/grep-E", command: "cat a.txt | grep -E 'a|b'", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/grep-no-pattern", command: "cat a.txt | grep -n", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/head-c", command: "cat a.txt | head -c 5", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/head-plus", command: "cat a.txt | head -n +5", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/head-negative", command: "cat a.txt | head -n -5", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/head-dash-number", command: "cat a.txt | head -5", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/tail-garbage", command: "cat a.txt | tail -n1x", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/wc", command: "cat a.txt | wc", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/wc-w", command: "cat a.txt | wc -w", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/sort-n", command: "cat a.txt | sort -n", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/nl-ba", command: "cat a.txt | nl -ba", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/cat-later", command: "cat a.txt | cat", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/cat-no-file", command: "cat", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/cat-two-files", command: "cat a.txt a.txt", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/cat-flag", command: "cat -n a.txt", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/cat-stdin", command: "cat -", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/head-two-files", command: "head a.txt a.txt", code: readonly.CodeUnsupported, exit: 2},
		{name: "unsupported/file-later", command: "cat a.txt | head -n 1 a.txt", code: readonly.CodeUnsupported, exit: 2},

		{name: "invalid_path/empty", command: "cat ''", code: readonly.CodeInvalidPath, exit: 2},
		{name: "invalid_path/directory", command: "cat dir", code: readonly.CodeInvalidPath, exit: 2},
		{name: "invalid_path/long", command: "cat " + long, code: readonly.CodeInvalidPath, exit: 2},
		{name: "invalid_path/long-joined", command: "cat " + strings.Repeat("n", 4090), code: readonly.CodeInvalidPath, exit: 2},
		{name: "invalid_path/nul", command: "cat a.txt", file: "a.txt\x00", code: readonly.CodeInvalidPath, exit: 2},
		{name: "invalid_path/relative-dir", command: "cat a.txt", dir: "relative", code: readonly.CodeInvalidPath, exit: 2},
		{name: "invalid_path/fifo", command: "cat " + fifo, code: readonly.CodeInvalidPath, exit: 2},

		{name: "file_not_allowed/outside", command: "cat " + secret, code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/dotdot", command: "cat ../outside/secret.txt", code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/dotdot-missing", command: "cat ../outside/missing.txt", code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/symlink", command: "cat link-secret", code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/symlink-dir", command: "cat link-dir/secret.txt", code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/symlink-dir-missing", command: "cat link-dir/missing.txt", code: readonly.CodeNotAllowed, exit: 3},
		// link-dir/.. is outside's parent, root, as for the kernel; lexically it would be
		// allowed, and allowed/outside/secret.txt a missing allowed file (io_error).
		{name: "file_not_allowed/symlink-dotdot", command: "cat link-dir/../outside/secret.txt", code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/symlink-dotdot-twice", command: "cat link-dir/../allowed/../outside/secret.txt", code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/proc-self-root", command: "cat /proc/self/root" + secret, code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/secret-name", command: "cat .env", code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/root-dir", command: "cat " + allowed, code: readonly.CodeNotAllowed, exit: 3},
		{name: "file_not_allowed/etc-passwd", command: "cat /etc/passwd", code: readonly.CodeNotAllowed, exit: 3},

		{name: "file_too_large", command: "cat big.txt | head -n 1", code: readonly.CodeTooLarge, exit: 4},

		{name: "io_error/missing", command: "cat missing.txt", code: readonly.CodeIO, exit: 1},
		{name: "io_error/not-a-directory", command: "cat a.txt/x", code: readonly.CodeIO, exit: 1},
		{name: "io_error/cancelled", command: "cat a.txt | nl", cancel: true, code: readonly.CodeIO, exit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := func() error {
				p, err := readonly.Parse(tt.command)
				if err != nil {
					return err
				}
				dir, name := allowed, p.File
				if tt.dir != "" {
					dir = tt.dir
				}
				if tt.file != "" {
					name = tt.file
				}
				f, err := a.Open(dir, name)
				if err != nil {
					return err
				}
				defer f.Close()
				ctx, cancel := context.WithCancel(context.Background())
				if tt.cancel {
					cancel()
				}
				defer cancel()
				_, err = readonly.Run(ctx, p, f)
				return err
			}()
			if got := code(t, err); got != tt.code {
				t.Fatalf("execute(%q) = %v, want code %q", tt.command, err, tt.code)
			}
			if err == nil {
				return
			}
			e := err.(*readonly.Error)
			if got := e.ExitCode(); got != tt.exit {
				t.Errorf("execute(%q) = %v with exit code %d, want %d", tt.command, err, got, tt.exit)
			}
			if !strings.HasPrefix(e.Message, e.Code+": ") || e.Error() != e.Message {
				t.Errorf("execute(%q): message %q does not start with its code %q", tt.command, e.Message, e.Code)
			}
			if strings.Contains(e.Message, "outside") && e.Code == readonly.CodeNotAllowed && !strings.Contains(tt.command, "outside") {
				t.Errorf("execute(%q) = %q reveals the real path", tt.command, e.Message)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct{ command, want string }{
		{"cat a; ls", "forbidden: character ';' is not allowed"},
		{"cat 'a&b'", "forbidden: character '&' is not allowed"},
		{`cat "a>b"`, "forbidden: character '>' is not allowed"},
		{"cat a<b", "forbidden: character '<' is not allowed"},
		{"cat '$HOME'", "forbidden: character '$' is not allowed"},
		{"cat \"`id`\"", "forbidden: character '`' is not allowed"},
		{"cat a\nb", `forbidden: character '\n' is not allowed`},
		{"cat a\rb", `forbidden: character '\r' is not allowed`},
		{"cat a\x00b", `forbidden: character '\x00' is not allowed`},
		{"grep TODO f", "mvp_requires: cat <FILE> (or head/tail/nl/sed ... <FILE>)"},
		{"head -n 5", "mvp_requires: cat <FILE> (or head/tail/nl/sed ... <FILE>)"},
	}
	for _, tt := range tests {
		_, err := readonly.Parse(tt.command)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v, want %v", tt.command, err, tt.want)
		}
	}
}
