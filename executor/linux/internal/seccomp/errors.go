package seccomp

import "errors"

// ErrNoNewPrivs is returned by Install when the calling thread has not set no_new_privs
// (prctl PR_SET_NO_NEW_PRIVS): set it on the thread that calls Install, with that
// goroutine locked to its thread (runtime.LockOSThread) in between.
var ErrNoNewPrivs = errors.New("no_new_privs is not set on the calling thread")
