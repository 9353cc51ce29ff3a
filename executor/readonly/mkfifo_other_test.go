//go:build !unix

package readonly_test

import (
	"os"
	"testing"
)

// mkfifo makes a directory at path where FIFOs do not exist, so that the FIFO test
// still expects invalid_path.
func mkfifo(t testing.TB, path string) string {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
