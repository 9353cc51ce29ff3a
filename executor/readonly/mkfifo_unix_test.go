//go:build unix

package readonly_test

import (
	"syscall"
	"testing"
)

// mkfifo makes a FIFO at path.
func mkfifo(t testing.TB, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
