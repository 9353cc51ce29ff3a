//go:build unix

package readonly

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a symbolic link in its last
// component, and without blocking on a FIFO swapped in since the check (O_NONBLOCK
// changes nothing for regular files) or taking it as controlling terminal.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

// isSymlinkError reports whether err is O_NOFOLLOW's refusal of a symbolic link.
func isSymlinkError(err error) bool { return errors.Is(err, syscall.ELOOP) }
