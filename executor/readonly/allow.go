package readonly

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxFileSize is the largest file Open and Run accept (1 MiB); a larger one is
// file_too_large.
const MaxFileSize = 1 << 20

// maxPath bounds a path's length in bytes (Linux's PATH_MAX).
const maxPath = 4096

// Allowlist says which files may be read: exact files, and directories whose files
// (at any depth) may be read except the secret-looking ones.
//
// Entries are canonicalised once, by NewAllowlist; a file is allowed by its real path
// (every symbolic link resolved), never by the name it was asked under, so that a link
// in an allowed directory does not lend its permission to its target.
//
// Secret-looking files, refused beneath a directory entry (an exact file entry allows
// them), compared without regard to case and to trailing dots and spaces (which
// Windows ignores):
//
//   - base names .env and .env.*; *.pem, *.key, *.p12, *.pfx, *.p8, *.jks, *.keystore,
//     *.ppk, *.kdbx; SSH private keys id_rsa*, id_dsa*, id_ecdsa*, id_ed25519*,
//     id_xmss* (their *.pub public halves are allowed); .netrc, _netrc,
//     .git-credentials, .pgpass, .npmrc, .pypirc, .htpasswd, .vault-token, credentials;
//   - anything named .ssh, .gnupg, .aws, .azure, .kube, .docker or .git below the
//     directory entry, and everything inside it. All of .git is refused, not only
//     .git/config (which may hold a remote's URL with its token): its other files are
//     compressed objects or logs of no use to cat, and some (FETCH_HEAD,
//     modules/*/config) repeat URLs. A worktree's .git file is refused with them;
//   - on Unix, everything under /proc, /sys and /dev: pseudo-files (a process's
//     environ) whose content is not a file's.
//
// The list is a safety net for directory entries, not a guarantee: a secret under an
// innocent name is readable when its directory is listed.
//
// The zero value and nil allow nothing. An Allowlist is immutable after NewAllowlist
// and safe for concurrent use.
type Allowlist struct {
	files map[string]bool // real paths of exact file entries
	dirs  []string        // real paths of directory entries
	trunk map[string]bool // the entries (real and as written) and their ancestors
}

// NewAllowlist returns the allowlist of entries, each an absolute path: a directory
// when it ends with a separator (/, or \ on Windows), an exact file otherwise (a
// directory listed without the separator allows nothing, as a directory cannot be
// read). An entry that exists is canonicalised with filepath.EvalSymlinks, so listing
// a symbolic link allows its target's real path; one that does not is kept cleaned,
// below the real path of its longest existing parent. The error is an *Error
// (invalid_path) for an entry that is not absolute or holds a NUL byte.
func NewAllowlist(entries []string) (*Allowlist, error) {
	a := &Allowlist{files: make(map[string]bool), trunk: make(map[string]bool)}
	for _, e := range entries {
		if strings.IndexByte(e, 0) >= 0 {
			return nil, errorf(CodeInvalidPath, "allowlist entry %q holds a NUL byte", e)
		}
		if !filepath.IsAbs(e) {
			return nil, errorf(CodeInvalidPath, "allowlist entry %q is not an absolute path", e)
		}
		real, ok, _ := resolve(filepath.Clean(e))
		if !ok {
			real = filepath.Clean(e)
		}
		addTrunk(a.trunk, real)
		addTrunk(a.trunk, filepath.Clean(e))
		if os.IsPathSeparator(e[len(e)-1]) {
			if !slices.Contains(a.dirs, real) {
				a.dirs = append(a.dirs, real)
			}
		} else {
			a.files[real] = true
		}
	}
	return a, nil
}

// allowed reports whether the file of real path real may be read.
func (a *Allowlist) allowed(real string) bool {
	if a == nil {
		return false
	}
	if a.files[real] {
		return true
	}
	for _, d := range a.dirs {
		if rel, ok := beneath(d, real); ok && !secret(real, rel) {
			return true
		}
	}
	return false
}

// addTrunk adds p and its ancestors to trunk.
func addTrunk(trunk map[string]bool, p string) {
	for {
		trunk[p] = true
		parent := filepath.Dir(p)
		if parent == p {
			return
		}
		p = parent
	}
}

// visible reports whether Open may look at path p (Lstat, Readlink) while resolving a
// name: p is an entry or one of its ancestors (as written or real), or lies below a
// directory entry outside the secret directories and pseudo-filesystems. What exists
// elsewhere is never looked at, so it cannot show in Open's answers.
func (a *Allowlist) visible(p string) bool {
	if a == nil {
		return false
	}
	if a.trunk[p] {
		return true
	}
	for _, d := range a.dirs {
		if rel, ok := beneath(d, p); ok && !hidden(p, rel) {
			return true
		}
	}
	return false
}

// beneath returns p relative to dir when p lies below dir (dir itself is not below).
func beneath(dir, p string) (string, bool) {
	if !strings.HasPrefix(p, dir) || len(p) == len(dir) {
		return "", false
	}
	if os.IsPathSeparator(dir[len(dir)-1]) { // the root, / or C:\
		return p[len(dir):], true
	}
	if !os.IsPathSeparator(p[len(dir)]) {
		return "", false // /repo-old is not below /repo
	}
	return p[len(dir)+1:], true
}

// secretDirs are the directories whose whole content is refused below a directory
// entry.
var secretDirs = []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".git"}

// secretNames and secretExts are the refused base names and extensions.
var (
	secretNames = []string{".env", ".netrc", "_netrc", ".git-credentials", ".pgpass", ".npmrc",
		".pypirc", ".htpasswd", ".vault-token", "credentials"}
	secretExts    = []string{".pem", ".key", ".p12", ".pfx", ".p8", ".jks", ".keystore", ".ppk", ".kdbx"}
	sshKeyPrefixs = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_xmss"}
)

// normName is a file name as the secret rules compare it: lower case, without the
// trailing dots and spaces that Windows ignores.
func normName(name string) string { return strings.ToLower(strings.TrimRight(name, ". ")) }

// hidden reports whether path p, rel below a directory entry, lies in a pseudo-
// filesystem or has a component named like a secret directory (see Allowlist).
func hidden(p, rel string) bool {
	for _, pseudo := range []string{"/proc", "/sys", "/dev"} {
		if strings.HasPrefix(p, pseudo) && (len(p) == len(pseudo) || p[len(pseudo)] == '/') {
			return true
		}
	}
	for _, c := range strings.FieldsFunc(rel, isSeparator) {
		if slices.Contains(secretDirs, normName(c)) {
			return true
		}
	}
	return false
}

// secret reports whether the file of real path real, rel below a directory entry,
// looks like a secret (see Allowlist).
func secret(real, rel string) bool {
	if hidden(real, rel) {
		return true
	}
	name := normName(filepath.Base(rel))
	if slices.Contains(secretNames, name) || strings.HasPrefix(name, ".env.") ||
		slices.Contains(secretExts, filepath.Ext(name)) {
		return true
	}
	for _, k := range sshKeyPrefixs {
		if strings.HasPrefix(name, k) && !strings.HasSuffix(name, ".pub") {
			return true
		}
	}
	return false
}

func isSeparator(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) }

// resolve returns the real path of an allowlist entry p, which must be absolute:
// filepath.EvalSymlinks(p) when p exists (err nil). Otherwise (err is EvalSymlinks's
// error) it is the real path of p's longest prefix that resolves, followed by the
// rest of p as is; ok is false when that rest holds "." or "..".
func resolve(p string) (real string, ok bool, err error) {
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r, true, nil
	}
	vol := filepath.VolumeName(p)
	parts := strings.FieldsFunc(p[len(vol):], isSeparator)
	prefix := func(n int) string {
		return vol + string(filepath.Separator) + strings.Join(parts[:n], string(filepath.Separator))
	}
	// EvalSymlinks walks the components in order and stops at the first failure, so a
	// prefix that fails makes every longer one fail: search the longest that resolves.
	lo, hi := 0, len(parts) // prefix(lo) resolves (the root), prefix(hi) does not
	var real0 string
	if r, err := filepath.EvalSymlinks(prefix(0)); err == nil {
		real0 = r
	} else {
		return "", false, err
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if r, err := filepath.EvalSymlinks(prefix(mid)); err == nil {
			lo, real0 = mid, r
		} else {
			hi = mid
		}
	}
	rest := parts[lo:]
	for _, c := range rest {
		if c == "." || c == ".." {
			return "", false, err
		}
	}
	return filepath.Join(append([]string{real0}, rest...)...), true, err
}

// maxLinks bounds the symbolic links one resolution follows, as in
// filepath.EvalSymlinks.
const maxLinks = 255

// walk resolves p, an absolute path, to its real path like filepath.EvalSymlinks (the
// same steps: ".." after a link is the parent of the link's target), but looks only at
// visible paths: at the first component that is not, it stops with ok false. When a
// component cannot be looked at (missing, not a directory, a loop), err says why and
// real is the path p would have: that component's real path, then the rest of p as
// is, unless the rest holds "." or ".." (whose meaning would depend on what is
// missing): then the component alone.
func (a *Allowlist) walk(p string) (real string, ok bool, err error) {
	vol := filepath.VolumeName(p)
	todo := strings.FieldsFunc(p[len(vol):], isSeparator)
	dest := vol + string(filepath.Separator)
	links := 0
	stop := func(at string, err error) (string, bool, error) {
		for _, c := range todo {
			if c == "." || c == ".." {
				return at, true, err
			}
		}
		return filepath.Join(append([]string{at}, todo...)...), true, err
	}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, c)
		if !a.visible(next) {
			return "", false, nil
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return stop(next, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && len(todo) > 0 {
				return stop(next, errNotDir)
			}
			dest = next
			continue
		}
		if links++; links > maxLinks {
			return stop(next, errLoop)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return stop(next, err)
		}
		tvol := filepath.VolumeName(target)
		switch {
		case tvol != "" || filepath.IsAbs(target):
			dest = tvol + string(filepath.Separator)
		case target != "" && os.IsPathSeparator(target[0]): // Windows: rooted, on the link's volume
			dest = filepath.VolumeName(dest) + string(filepath.Separator)
		}
		todo = append(strings.FieldsFunc(target[len(tvol):], isSeparator), todo...)
	}
	return dest, true, nil
}

var (
	errNotDir = errors.New("not a directory")
	errLoop   = errors.New("too many levels of symbolic links")
)

// File is a file Open checked and opened for reading. Its methods are safe for
// concurrent use; the zero value is no file (Run refuses it).
type File struct {
	f    *os.File
	path string
	size int64
}

// Path is the file's real path, the one checked against the allowlist.
func (f *File) Path() string { return f.path }

// Size is the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

// Close closes the file.
func (f *File) Close() error {
	if f.f == nil {
		return nil
	}
	return f.f.Close()
}

// Open resolves name (relative names against dir, which must be absolute), follows
// symlinks to the real path, checks the real path against the allowlist and opens it
// for reading. The error is an *Error:
//
//   - invalid_path: name empty, a NUL byte, dir not absolute (for a relative name), a
//     path longer than 4096 bytes; a directory or another file that is not regular
//     (FIFO, device, socket), when its path is allowed;
//   - file_not_allowed: the real path is not allowed, whether the file exists or not;
//   - io_error: the path is allowed but the file is missing or cannot be opened, or it
//     changed while being opened (a symbolic link swapped in);
//   - file_too_large: the file is larger than MaxFileSize.
//
// Open resolves name itself, component by component, as the kernel would: ".." after
// a symbolic link is the parent of the link's target, not lexically the link's
// directory. It looks only at paths on the way to the entries or below the directory
// entries (outside the secret directories): a name that leads anywhere else, even in
// passing (outside/../repo/a.txt, or through a link to outside), is file_not_allowed
// at that point, before the file system is asked. A missing file is io_error only
// when its path is allowed. So probing outside the allowlist gives file_not_allowed
// for everything and reveals nothing, not even whether a directory exists. dir must
// therefore lie on the way to an entry or below a directory entry (the workspace).
//
// The check and the read concern the same file: Open opens the real path without
// following a symbolic link in its last component (O_NOFOLLOW on Unix), and afterwards
// checks that the path still has no symbolic link and names the opened file (same
// device and inode), and on Linux that the kernel's own name of the open file
// (/proc/self/fd/N) is the real path. A link swapped in between the check and the
// open, in any component, is thus detected; the Linux check also catches a directory
// swapped for a link and back in the meantime, which the others alone cannot on
// macOS and Windows.
func (a *Allowlist) Open(dir, name string) (*File, error) {
	f, err := a.open(dir, name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (a *Allowlist) open(dir, name string) (*File, *Error) {
	switch {
	case name == "":
		return nil, errorf(CodeInvalidPath, "empty file name")
	case strings.IndexByte(name, 0) >= 0 || strings.IndexByte(dir, 0) >= 0:
		return nil, errorf(CodeInvalidPath, "the path holds a NUL byte")
	case len(name) > maxPath:
		return nil, errorf(CodeInvalidPath, "the path is longer than %d bytes", maxPath)
	}
	p := name
	if !filepath.IsAbs(name) {
		if !filepath.IsAbs(dir) {
			return nil, errorf(CodeInvalidPath, "the directory %q is not absolute", dir)
		}
		// Not filepath.Join, which would clean dir/link/.. lexically.
		p = dir + string(filepath.Separator) + name
		if len(p) > maxPath {
			return nil, errorf(CodeInvalidPath, "the path is longer than %d bytes", maxPath)
		}
	}
	real, ok, err := a.walk(p)
	if !ok || !a.allowed(real) {
		return nil, errorf(CodeNotAllowed, "%s is not on the allowlist", quote(name))
	}
	if err != nil {
		return nil, ioError(name, err) // e.g. "no such file or directory"
	}
	return openReal(real, name)
}

// openReal opens real, an allowed path without symbolic links, and checks that the
// opened file is still the one real names.
func openReal(real, name string) (*File, *Error) {
	changed := errorf(CodeIO, "%s changed while it was opened; try again", quote(name))
	fi, err := os.Lstat(real)
	if err != nil {
		return nil, ioError(name, err)
	}
	if err := regular(fi, name); err != nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, changed
		}
		return nil, err
	}
	f, err := openNoFollow(real)
	if err != nil {
		if isSymlinkError(err) {
			return nil, changed
		}
		return nil, ioError(name, err)
	}
	fail := func(e *Error) (*File, *Error) {
		f.Close()
		return nil, e
	}
	st, err := f.Stat()
	if err != nil {
		return fail(ioError(name, err))
	}
	if err := regular(st, name); err != nil {
		return fail(err)
	}
	again, err := os.Lstat(real)
	if err != nil || !os.SameFile(st, again) {
		return fail(changed)
	}
	if r, err := filepath.EvalSymlinks(real); err != nil || r != real {
		return fail(changed)
	}
	if !sameName(f, real) {
		return fail(changed)
	}
	if st.Size() > MaxFileSize {
		return fail(errorf(CodeTooLarge, "%s is %d bytes, more than %d", quote(name), st.Size(), MaxFileSize))
	}
	return &File{f: f, path: real, size: st.Size()}, nil
}

func regular(fi fs.FileInfo, name string) *Error {
	switch {
	case fi.IsDir():
		return errorf(CodeInvalidPath, "%s is a directory", quote(name))
	case !fi.Mode().IsRegular():
		return errorf(CodeInvalidPath, "%s is not a regular file", quote(name))
	}
	return nil
}

func ioError(name string, err error) *Error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the real path stays out of the message
	}
	return errorf(CodeIO, "%s: %v", quote(name), err)
}

// read reads the whole file, at most MaxFileSize bytes, from its start (ReadAt: the
// offset is not shared state).
func (f *File) read(ctx context.Context) ([]byte, *Error) {
	// One more byte than the size, so the first read already sees the end of the file.
	buf := make([]byte, 0, min(max(f.size, 0), MaxFileSize)+1)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > MaxFileSize {
				return nil, errorf(CodeTooLarge, "%s grew past %d bytes", quote(f.path), MaxFileSize)
			}
			buf = slices.Grow(buf, min(max(len(buf), 4096), MaxFileSize+1-len(buf)))
		}
		if err := ctx.Err(); err != nil {
			return nil, errorf(CodeIO, "%v", err)
		}
		n, err := f.f.ReadAt(buf[len(buf):cap(buf)], int64(len(buf)))
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, ioError(f.path, err)
		}
	}
	if len(buf) > MaxFileSize {
		return nil, errorf(CodeTooLarge, "%s grew past %d bytes", quote(f.path), MaxFileSize)
	}
	return buf, nil
}
