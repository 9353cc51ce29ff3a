package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Caches is a workspace's tool cache area: a directory on the host, kept between
// commands, that holds the caches of the common build tools and a persistent HOME for
// the tools that insist on one. Without it every linux-sandbox command starts with an
// empty HOME in its private /tmp, and a second build downloads and compiles everything
// again. The zero value is no cache area.
//
// The area holds only what the workspace's own commands put there: one area is never
// shared between workspaces (see CacheDir).
type Caches struct {
	// Dir is the area's absolute path on the host; "" is none.
	Dir string
}

// cacheVars are the tools' cache variables and their directories under Caches.Dir.
var cacheVars = []struct{ name, dir string }{
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"GOPATH", "go"},
	{"npm_config_cache", "npm"},
	{"YARN_CACHE_FOLDER", "yarn"},
	{"PIP_CACHE_DIR", "pip"},
	{"CARGO_HOME", "cargo"},
	{"GRADLE_USER_HOME", "gradle"},
	{"XDG_CACHE_HOME", "xdg-cache"},
}

// mavenRepo is the Maven repository's directory under Caches.Dir; Maven takes it from
// MAVEN_OPTS (-Dmaven.repo.local).
const mavenRepo = "m2"

// Home is the persistent HOME of the area's commands ("" without an area).
func (c Caches) Home() string {
	if c.Dir == "" {
		return ""
	}
	return filepath.Join(c.Dir, "home")
}

// Env is the area's variables, "NAME=value": HOME, the Go, npm, yarn, pip, cargo,
// Gradle and XDG caches, and Maven's local repository (MAVEN_OPTS). Nil without an
// area.
func (c Caches) Env() []string {
	if c.Dir == "" {
		return nil
	}
	env := []string{"HOME=" + c.Home()}
	for _, v := range cacheVars {
		env = append(env, v.name+"="+filepath.Join(c.Dir, v.dir))
	}
	return append(env, "MAVEN_OPTS=-Dmaven.repo.local="+filepath.Join(c.Dir, mavenRepo))
}

// Prepare creates the area and its directories (mode 0700), as needed. It runs before
// every command (ClearCaches empties the area), so it is cheap when they exist: one
// stat of the directory it makes last.
func (c Caches) Prepare() error {
	if c.Dir == "" {
		return nil
	}
	if !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("cache area %q is not an absolute path", c.Dir)
	}
	dirs := []string{c.Home(), filepath.Join(c.Dir, mavenRepo)}
	for _, v := range cacheVars {
		dirs = append(dirs, filepath.Join(c.Dir, v.dir))
	}
	if fi, err := os.Stat(dirs[len(dirs)-1]); err == nil && fi.IsDir() {
		return nil
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create cache area: %w", err)
		}
	}
	return nil
}

// CacheDir is the cache area of workspace (a resolved absolute path) under root: a
// directory named after the workspace's base name and the hash of its whole path, so
// that two workspaces never share an area and a person can tell them apart.
func CacheDir(root, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, filepath.Base(workspace))
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" || base == "." || base == ".." || base == "_" {
		base = "workspace"
	}
	return filepath.Join(root, base+"-"+hex.EncodeToString(sum[:8]))
}

// ClearCaches empties a cache area: everything in it goes, the directory itself stays
// (sandboxes built ahead have it bound, and see the emptied area). Go's module cache
// makes its files and directories read-only, so directories are made writable on the
// way down; symbolic links are removed, never followed. A missing area is not an error.
// The backends recreate the area's directories before each command (Prepare).
func ClearCaches(dir string) error {
	if dir == "" || !filepath.IsAbs(dir) || filepath.Clean(dir) == "/" {
		return fmt.Errorf("clear cache area %q: not an absolute path below /", dir)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			// A directory that cannot be read yet: make it readable and try again.
			if d != nil && d.IsDir() {
				if cerr := os.Chmod(p, 0o700); cerr == nil {
					return nil
				}
			}
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o700)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear cache area %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clear cache area %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("clear cache area %s: %w", dir, err)
		}
	}
	return nil
}
