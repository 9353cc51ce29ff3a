//go:build unix

package jobs

import (
	"errors"
	"os"
	"syscall"
)

// holdLock takes an exclusive lock on path, which must be free.
func holdLock(path string) (func(), error) {
	unlock, held, err := TryLock(path)
	if err == nil && !held {
		err = errors.New("another job host holds it")
	}
	return unlock, err
}

// TryLock takes an exclusive lock on path (created 0600) if it is free: held false
// when another process holds it. The lock goes with the process.
func TryLock(path string) (unlock func(), held bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}

// lockHeld reports whether some process holds the lock on path.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
