package readonly_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cmdgate/cmdgate/executor/readonly"
)

// execute does what the gateway does: Parse, Open the pipeline's file in dir, Run.
func execute(ctx context.Context, a *readonly.Allowlist, dir, command string) ([]byte, error) {
	p, err := readonly.Parse(command)
	if err != nil {
		return nil, err
	}
	f, err := a.Open(dir, p.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readonly.Run(ctx, p, f)
}

// code is err's Code, "" for nil; it fails the test when err is no *readonly.Error.
func code(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var e *readonly.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *readonly.Error", err, err)
	}
	return e.Code
}

// writeFile writes a file (and its directories) below root.
func writeFile(t testing.TB, root, name, content string) string {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// realDir is t.TempDir with its symbolic links resolved (macOS's /var is /private/var).
func realDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func allowlist(t testing.TB, entries ...string) *readonly.Allowlist {
	t.Helper()
	a, err := readonly.NewAllowlist(entries)
	if err != nil {
		t.Fatalf("NewAllowlist(%q) = %v", entries, err)
	}
	return a
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
}
