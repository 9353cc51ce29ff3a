package executor_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor"
)

func TestCacheDir(t *testing.T) {
	t.Parallel()
	a := executor.CacheDir("/data/caches", "/srv/ws/app")
	b := executor.CacheDir("/data/caches", "/home/x/app")
	if a == b {
		t.Errorf("CacheDir gives two workspaces one area: %s", a)
	}
	if filepath.Dir(a) != "/data/caches" || !strings.HasPrefix(filepath.Base(a), "app-") {
		t.Errorf("CacheDir = %s, want /data/caches/app-HASH", a)
	}
	if a != executor.CacheDir("/data/caches", "/srv/ws/app") {
		t.Errorf("CacheDir is not stable")
	}
	for _, ws := range []string{"/", "/srv/a b/..x", "/srv/" + strings.Repeat("é", 50)} {
		d := executor.CacheDir("/c", ws)
		if filepath.Dir(d) != "/c" || strings.ContainsAny(filepath.Base(d), " /é") {
			t.Errorf("CacheDir(%q) = %q, want one plain name under /c", ws, d)
		}
	}
}

// A real Go module cache is read-only; ClearCaches removes it all the same, and does
// not follow a link out of the area.
func TestClearCaches(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := executor.Caches{Dir: filepath.Join(root, "area")}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(c.Dir, "go-mod", "example.com", "m@v1.0.0")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module m\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(c.Dir, "home", "link")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{mod, filepath.Dir(mod)} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := executor.ClearCaches(c.Dir); err != nil {
		t.Fatalf("ClearCaches: %v", err)
	}
	if entries, err := os.ReadDir(c.Dir); err != nil || len(entries) != 0 {
		t.Errorf("the area after ClearCaches holds %d entries (%v), want it empty", len(entries), err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("ClearCaches followed a link out of the area: %v", err)
	}
	// The next command's Prepare refills the emptied area.
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Env() {
		v := strings.TrimPrefix(kv[strings.IndexByte(kv, '=')+1:], "-Dmaven.repo.local=")
		if fi, err := os.Stat(v); err != nil || !fi.IsDir() {
			t.Errorf("after ClearCaches and Prepare, %s is not a directory: %v", kv, err)
		}
	}
	if err := executor.ClearCaches(filepath.Join(root, "missing")); err != nil {
		t.Errorf("ClearCaches(missing) = %v, want nil", err)
	}
	for _, bad := range []string{"", "/", "relative"} {
		if err := executor.ClearCaches(bad); err == nil {
			t.Errorf("ClearCaches(%q) = nil, want an error", bad)
		}
	}
}

func TestCachesEnv(t *testing.T) {
	t.Parallel()
	if env := (executor.Caches{}).Env(); env != nil {
		t.Errorf("Caches{}.Env() = %q, want none", env)
	}
	c := executor.Caches{Dir: t.TempDir()}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Env() {
		name, v, _ := strings.Cut(kv, "=")
		if name == "MAVEN_OPTS" {
			v = strings.TrimPrefix(v, "-Dmaven.repo.local=")
		}
		if fi, err := os.Stat(v); err != nil || !fi.IsDir() || !strings.HasPrefix(v, c.Dir+"/") {
			t.Errorf("%s = %s: want a directory Prepare made in the area (%v)", name, v, err)
		}
	}
}
