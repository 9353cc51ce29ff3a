package readonly_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor/readonly"
	"github.com/google/go-cmp/cmp"
)

// FuzzExecute runs arbitrary command text, and opens arbitrary names, in a directory
// that holds allowed files, secrets (outside it, and secret-named inside it) and links
// and ".." paths to them. Properties: nothing panics; every error is an *Error; a
// parsed pipeline's String parses back to the same pipeline; an opened file's real
// path is allowed and no secret; no output ever holds a secret's marker.
func FuzzExecute(f *testing.F) {
	const marker = "SECRET-7f3a9e21"
	root, err := os.MkdirTemp("", "FuzzExecute")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(root) })
	if root, err = filepath.EvalSymlinks(root); err != nil {
		f.Fatal(err)
	}
	allowed := filepath.Join(root, "allowed")
	writeFile(f, allowed, "a.txt", "alpha\nbeta\n\ngamma TODO\ndelta")
	writeFile(f, allowed, "sub/b.txt", strings.Repeat("line TODO x\n", 50))
	writeFile(f, allowed, "c d.txt", "spaced name\n")
	writeFile(f, allowed, ".env", marker+"\n")
	writeFile(f, allowed, "sub/.git/config", "url = https://"+marker+"@example.com\n")
	writeFile(f, allowed, "key.pem", marker+"\n")
	secret := writeFile(f, root, "outside/secret.txt", marker+"\n")
	writeFile(f, root, "outside/dir/f.txt", marker+"\n")
	for target, link := range map[string]string{
		secret:                            "link-secret",
		filepath.Join(root, "outside"):    "link-outside",
		"../outside/dir":                  "sub/link-rel",
		"a.txt":                           "link-a",
		".env":                            "link-env",
		"/proc/self/root" + secret:        "link-proc",
		filepath.Join(allowed, "missing"): "link-dangling",
		"loop":                            "loop",
	} {
		if err := os.Symlink(target, filepath.Join(allowed, link)); err != nil {
			f.Skipf("no symbolic links here: %v", err)
		}
	}
	a := allowlist(f, allowed+"/")

	for _, seed := range []struct{ command, name string }{
		{"cat a.txt | nl | grep -n TODO", "a.txt"},
		{"head -n 3 sub/b.txt | sort -r", "sub/b.txt"},
		{"sed -n 2,4p 'c d.txt'", "c d.txt"},
		{"cat link-secret", "link-secret"},
		{"cat link-outside/secret.txt | wc -c", "link-outside/dir/f.txt"},
		{"tail -n1 ../outside/secret.txt", "sub/link-rel/f.txt"},
		{"cat .env", "link-env"},
		{"cat link-proc | head", "/proc/self/root" + secret},
		{"cat sub/.git/config", "sub/../../outside/secret.txt"},
		{"nl \"link-a\" | tail -n 2 | wc -l", "link-dangling"},
		{"cat 'a.txt' | grep '' | sed -n 1d", "loop"},
		{`cat a\.txt | head -n01`, "./a.txt"},
		{"cat " + secret, secret},
		{"cat a.txt | grep -n \"'\" | sort", "sub//b.txt"},
	} {
		f.Add(seed.command, seed.name)
	}

	f.Fuzz(func(t *testing.T, command, name string) {
		p, err := readonly.Parse(command)
		checkError(t, err)
		if err == nil {
			again, err := readonly.Parse(p.String())
			if err != nil || !cmp.Equal(again, p) {
				t.Fatalf("Parse(%q) = %#v, %v, want %#v (from %q)", p.String(), again, err, p, command)
			}
			check(t, a, allowed, p, p.File, marker, secret)
			name = p.File
		}
		p, err = readonly.Parse("cat a.txt | nl")
		if err != nil {
			t.Fatal(err)
		}
		check(t, a, allowed, p, name, marker, secret)
	})
}

// check opens name in dir and runs p on it, checking the properties of FuzzExecute.
func check(t *testing.T, a *readonly.Allowlist, dir string, p *readonly.Pipeline, name, marker, secret string) {
	t.Helper()
	f, err := a.Open(dir, name)
	checkError(t, err)
	if err != nil {
		return
	}
	defer f.Close()
	real := f.Path()
	rel, err := filepath.Rel(dir, real)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || real == secret {
		t.Fatalf("Open(%q) opened %s, outside the allowlist", name, real)
	}
	out, err := readonly.Run(context.Background(), p, f)
	checkError(t, err)
	if bytes.Contains(out, []byte(marker)) {
		t.Fatalf("Open(%q) then Run(%s) read the secret from %s", name, p, real)
	}
}

func checkError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *readonly.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is no *readonly.Error", err, err)
	}
	if !strings.HasPrefix(e.Message, e.Code+": ") || e.ExitCode() == 0 {
		t.Fatalf("error %q: code %q, exit %d", e.Message, e.Code, e.ExitCode())
	}
}
