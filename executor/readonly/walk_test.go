package readonly

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWalk checks that Allowlist.walk resolves names as filepath.EvalSymlinks does.
func TestWalk(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	mk("a/b/c.txt")
	mk("d/e.txt")
	ln("a/b", "rel")                      // relative
	ln(filepath.Join(root, "d"), "abs")   // absolute
	ln("../d", "a/up")                    // relative with ..
	ln("rel", "chain")                    // a link to a link
	ln("abs/../a/b/c.txt", "a/b/through") // .. after a link inside the target
	ln("loop2", "loop1")
	ln("loop1", "loop2")
	a, err := NewAllowlist([]string{root + "/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"a/b/c.txt", "rel/c.txt", "abs/e.txt", "a/up/e.txt", "chain/c.txt", "a/b/through",
		"rel/../b/c.txt", "abs/../a", "a/up/../a/b/./c.txt", "chain/../d/e.txt", "a//b///c.txt",
		"abs/missing/x", "loop1", "a/b/c.txt/x", "missing",
	} {
		p := root + string(filepath.Separator) + name // not cleaned: .. is the walk's
		want, werr := filepath.EvalSymlinks(p)
		got, ok, gerr := a.walk(p)
		if (werr == nil) != (gerr == nil) || werr == nil && (got != want || !ok) {
			t.Errorf("walk(%q) = %q, %v, %v; EvalSymlinks = %q, %v", name, got, ok, gerr, want, werr)
		}
	}
}
