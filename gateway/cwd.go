package gateway

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Workspace is the directory tree commands may run in. Its zero value is unusable;
// create one with NewWorkspace.
type Workspace struct {
	root string // absolute, symlinks resolved
}

// NewWorkspace resolves dir (absolute, symlinks evaluated) and checks that it is a
// directory.
func NewWorkspace(dir string) (Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Workspace{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Workspace{}, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return Workspace{}, err
	}
	if !fi.IsDir() {
		return Workspace{}, &fs.PathError{Op: "workspace", Path: dir, Err: errors.New("not a directory")}
	}
	return Workspace{root: real}, nil
}

// Root is the real path of the workspace.
func (w Workspace) Root() string { return w.root }

// maxCwdLen bounds the cwd a client may send.
const maxCwdLen = 4096

// Resolve turns a client's cwd into the real directory a command runs in (as exec_command specifies):
// both `/` and `\` separate components; a relative path is relative to the
// workspace; an empty one (absent from the request) is the workspace itself; symlinks
// are resolved and the result must still be inside the workspace. Errors are
// INVALID_ARGUMENT (malformed, or outside the workspace) or NOT_DIRECTORY (missing,
// or not a directory).
func (w Workspace) Resolve(cwd string) (string, error) {
	if w.root == "" {
		return "", Errorf(CodeInternal, "no workspace")
	}
	switch {
	case len(cwd) > maxCwdLen:
		return "", Errorf(CodeInvalidArgument, "cwd is longer than %d bytes", maxCwdLen)
	case strings.ContainsRune(cwd, 0):
		return "", Errorf(CodeInvalidArgument, "cwd contains a NUL byte")
	case !utf8.ValidString(cwd):
		return "", Errorf(CodeInvalidArgument, "cwd is not valid UTF-8")
	}
	p := filepath.FromSlash(strings.ReplaceAll(cwd, `\`, "/"))
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.root, p)
	}
	p = filepath.Clean(p)
	// Lexically outside: refuse before touching the file system, so the answer does
	// not reveal what exists outside the workspace.
	if !w.contains(p) {
		return "", Errorf(CodeInvalidArgument, "cwd %q is outside the workspace", cwd)
	}
	// Most requests name a directory reached without a symbolic link: it is its own
	// real path, which one system call proves.
	if noSymlinkDir(p) {
		return p, nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", Errorf(CodeNotDirectory, "cwd %q does not exist", cwd)
	}
	if !w.contains(real) {
		return "", Errorf(CodeInvalidArgument, "cwd %q leads outside the workspace through a symbolic link", cwd)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", Errorf(CodeNotDirectory, "cwd %q is not a directory", cwd)
	}
	return real, nil
}

// contains reports whether the clean absolute path p is the workspace or below it.
func (w Workspace) contains(p string) bool {
	if p == w.root {
		return true
	}
	prefix := w.root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}
