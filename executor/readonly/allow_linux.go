package readonly

import (
	"os"
	"strconv"
)

// sameName reports whether the kernel's name of the open file f, the link
// /proc/self/fd/N, is path: whatever symbolic links were swapped in and out of path's
// directories around the open, the file opened is the one path names. Without /proc
// (not mounted) the check is skipped: the generic ones remain.
func sameName(f *os.File, path string) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	var link string
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		link, lerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); err != nil || lerr != nil {
		return true
	}
	return link == path
}
