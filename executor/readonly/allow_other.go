//go:build !unix

package readonly

import "os"

// openNoFollow opens path for reading. Windows follows a reparse point swapped in since
// the check; openReal's checks after the open catch it.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }

func isSymlinkError(error) bool { return false }
