package readonly_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor/readonly"
)

func TestNewAllowlistErrors(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{"relative/file", "", "./x/", "/a\x00b"} {
		if runtime.GOOS == "windows" && strings.HasPrefix(entry, "/") {
			continue
		}
		a, err := readonly.NewAllowlist([]string{entry})
		if code(t, err) != readonly.CodeInvalidPath || a != nil {
			t.Errorf("NewAllowlist(%q) = %v, %v, want invalid_path", entry, a, err)
		}
	}
}

// TestAllowlist checks which files an allowlist lets Open.
func TestAllowlist(t *testing.T) {
	t.Parallel()
	root := realDir(t)
	repo := filepath.Join(root, "repo")
	names := []string{
		"README.md", "src/main.go", "deep/a/b/c/d.txt", ".envrc", "environment.txt",
		"id_generator.go", ".ssh.md", "docs/credentials.md", "pem.txt", ".gitignore",
		"keys/id_ed25519.pub",
		// refused
		".env", ".git", // a worktree's .git file too ".env.local", "config/.ENV.production", "certs/server.pem", "tls.KEY", "x.p12",
		"x.pfx", "vault.kdbx", "keys/id_rsa", "keys/id_ed25519", "keys/id_rsa_work", ".netrc",
		".git-credentials", ".pgpass", ".npmrc", ".pypirc", "credentials", "srv/.htpasswd",
		"home/.ssh/config", "home/.gnupg/pubring.kbx", "home/.aws/config", "home/.kube/config",
		"home/.docker/config.json", "sub/.git/config", "sub/.git/HEAD", "trailing.pem.",
	}
	refusedFrom := names[slicesIndex(names, ".env")]
	for _, n := range names {
		writeFile(t, repo, n, "content of "+n+"\n")
	}
	writeFile(t, root, "listed/.env", "listed exactly\n")
	writeFile(t, root, "listed/other.txt", "not listed\n")
	writeFile(t, root, "target/real.txt", "the link's target\n")
	symlink(t, filepath.Join(root, "target/real.txt"), filepath.Join(root, "listed/link"))
	writeFile(t, root, "repo-old/x.txt", "a sibling with the same prefix\n")
	a := allowlist(t, repo+"/", filepath.Join(root, "listed/.env"), filepath.Join(root, "listed/link"),
		filepath.Join(root, "missing/later.txt"))

	refused := false
	for _, n := range names {
		if n == refusedFrom {
			refused = true
		}
		want := ""
		if refused {
			want = readonly.CodeNotAllowed
		}
		f, err := a.Open(repo, n)
		if got := code(t, err); got != want {
			t.Errorf("Open(repo, %q) = %v, want %q", n, err, want)
		}
		if err == nil {
			f.Close()
		}
	}
	for _, tt := range []struct{ name, code string }{
		{filepath.Join(root, "listed/.env"), ""},
		{filepath.Join(root, "listed/other.txt"), readonly.CodeNotAllowed},
		{filepath.Join(root, "listed/link"), ""},     // resolves to target/real.txt
		{filepath.Join(root, "target/real.txt"), ""}, // the entry's real path
		{filepath.Join(root, "repo-old/x.txt"), readonly.CodeNotAllowed},
		{filepath.Join(root, "missing/later.txt"), readonly.CodeIO}, // allowed, missing
		{filepath.Join(root, "missing/other.txt"), readonly.CodeNotAllowed},
		{repo, readonly.CodeNotAllowed},
		{filepath.Join(repo, "src"), readonly.CodeInvalidPath},
	} {
		f, err := a.Open("/", tt.name)
		if got := code(t, err); got != tt.code {
			t.Errorf("Open(%q) = %v, want %q", tt.name, err, tt.code)
		}
		if err == nil {
			if want := filepath.Join(root, "target/real.txt"); strings.HasSuffix(tt.name, "link") && f.Path() != want {
				t.Errorf("Open(%q).Path() = %q, want %q", tt.name, f.Path(), want)
			}
			f.Close()
		}
	}

	// A file created after NewAllowlist where an entry named a missing one is allowed.
	writeFile(t, root, "missing/later.txt", "now here\n")
	out, err := execute(context.Background(), a, "/", "cat "+filepath.Join(root, "missing/later.txt"))
	if err != nil || string(out) != "now here\n" {
		t.Errorf("cat missing/later.txt = %q, %v, want its content", out, err)
	}

	// nil and zero allowlists allow nothing.
	for _, a := range []*readonly.Allowlist{nil, {}} {
		if _, err := a.Open(repo, "README.md"); code(t, err) != readonly.CodeNotAllowed {
			t.Errorf("%#v.Open(README.md) = %v, want file_not_allowed", a, err)
		}
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	panic(v)
}

// TestAllowedSymlinkInside: a link inside the allowed directory to another file inside
// it reads that file; the File's Path is the real one.
func TestAllowedSymlinkInside(t *testing.T) {
	t.Parallel()
	root := realDir(t)
	writeFile(t, root, "a.txt", "A\n")
	symlink(t, "a.txt", filepath.Join(root, "link"))
	a := allowlist(t, root+"/")
	f, err := a.Open(root, "link")
	if err != nil {
		t.Fatalf("Open(link) = %v", err)
	}
	defer f.Close()
	if f.Path() != filepath.Join(root, "a.txt") || f.Size() != 2 {
		t.Errorf("Open(link) = %q (%d bytes), want %q (2 bytes)", f.Path(), f.Size(), filepath.Join(root, "a.txt"))
	}
	p, _ := readonly.Parse("cat link | wc -c")
	for range 2 { // Run reads from the start every time
		if out, err := readonly.Run(context.Background(), p, f); err != nil || string(out) != "2\n" {
			t.Errorf("Run(cat link | wc -c) = %q, %v, want 2", out, err)
		}
	}
}

// TestGrowth: a file that grows past MaxFileSize between Open and Run is
// file_too_large; one that grows less is read whole.
func TestGrowth(t *testing.T) {
	t.Parallel()
	root := realDir(t)
	path := writeFile(t, root, "f", "small\n")
	a := allowlist(t, root+"/")
	p, _ := readonly.Parse("cat f | wc -c")
	for _, tt := range []struct {
		grow int
		want string
		code string
	}{
		{10000, "10006\n", ""},
		{readonly.MaxFileSize, "", readonly.CodeTooLarge},
	} {
		if err := os.WriteFile(path, []byte("small\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := a.Open(root, "f")
		if err != nil {
			t.Fatal(err)
		}
		fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(make([]byte, tt.grow))
		fh.Close()
		out, err := readonly.Run(context.Background(), p, f)
		f.Close()
		if code(t, err) != tt.code || string(out) != tt.want {
			t.Errorf("grown by %d: Run = %q, %v, want %q, code %q", tt.grow, out, err, tt.want, tt.code)
		}
	}
}

// TestRunHandBuilt: Run checks a Pipeline built by hand like Parse would.
func TestRunHandBuilt(t *testing.T) {
	t.Parallel()
	root := realDir(t)
	writeFile(t, root, "f", "b\na\n")
	a := allowlist(t, root+"/")
	f, err := a.Open(root, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tt := range []struct {
		stages []readonly.Stage
		code   string
		want   string
	}{
		{[]readonly.Stage{{Name: "sort"}}, "", "a\nb\n"},
		{[]readonly.Stage{{Name: "awk", Args: []string{"1"}}}, readonly.CodeForbidden, ""},
		{[]readonly.Stage{{Name: "cat"}}, readonly.CodeUnsupported, ""},
		{[]readonly.Stage{{Name: "head", Args: []string{"/etc/passwd"}}}, readonly.CodeUnsupported, ""},
		{[]readonly.Stage{{Name: "grep", Args: []string{"a\nb"}}}, "", ""},
	} {
		out, err := readonly.Run(context.Background(), &readonly.Pipeline{File: "f", Stages: tt.stages}, f)
		if code(t, err) != tt.code || string(out) != tt.want {
			t.Errorf("Run(%v) = %q, %v, want %q, code %q", tt.stages, out, err, tt.want, tt.code)
		}
	}
	if _, err := readonly.Run(context.Background(), &readonly.Pipeline{}, &readonly.File{}); code(t, err) != readonly.CodeIO {
		t.Errorf("Run(zero File) = %v, want io_error", err)
	}
}

// TestNoProbe: a name that passes outside the allowlist, even to come back into it,
// gets the same answer whether what it passes exists or not.
func TestNoProbe(t *testing.T) {
	t.Parallel()
	root := realDir(t)
	allowed := filepath.Join(root, "allowed")
	writeFile(t, allowed, "a.txt", "A\n")
	writeFile(t, root, "outside/exists/f.txt", "secret\n")
	symlink(t, filepath.Join(root, "outside"), filepath.Join(allowed, "link-out"))
	if err := os.Mkdir(filepath.Join(allowed, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := allowlist(t, allowed+"/")
	for _, pair := range [][2]string{
		{"../outside/exists/../../allowed/a.txt", "../outside/missing/../../allowed/a.txt"},
		{"link-out/exists/../../allowed/a.txt", "link-out/missing/../../allowed/a.txt"},
		{"link-out/exists/f.txt", "link-out/missing/f.txt"},
		{"link-out/exists", "link-out/missing"},
		{"../outside/exists/f.txt", "../outside/exists/g.txt"},
		{".git/../a.txt", ".gnupg/../a.txt"},
		{"/proc/self/../self/root" + allowed + "/a.txt", "/proc/nosuchpid/root" + allowed + "/a.txt"},
	} {
		_, err1 := a.Open(allowed, pair[0])
		_, err2 := a.Open(allowed, pair[1])
		if code(t, err1) != readonly.CodeNotAllowed || code(t, err2) != readonly.CodeNotAllowed {
			t.Errorf("Open(%q) = %v and Open(%q) = %v, want file_not_allowed for both", pair[0], err1, pair[1], err2)
		}
	}
	// Inside the allowed directory, .. after a directory works as for the kernel.
	if f, err := a.Open(allowed, "./sub/../a.txt"); code(t, err) != readonly.CodeIO {
		t.Errorf("Open(./sub/../a.txt) = %v, want io_error (sub is missing)", err)
	} else if err == nil {
		f.Close()
	}
	if err := os.Mkdir(filepath.Join(allowed, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := a.Open(allowed, "./sub/../a.txt")
	if err != nil {
		t.Fatalf("Open(./sub/../a.txt) = %v", err)
	}
	f.Close()
}
