package gateway

import "golang.org/x/sys/unix"

// noSymlinkDir reports whether the absolute path p is a directory reached without
// following a symbolic link anywhere along it (openat2 with RESOLVE_NO_SYMLINKS): then p
// is its own real path. False means "not proven": an error, a link, an older kernel.
func noSymlinkDir(p string) bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}
