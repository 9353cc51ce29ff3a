//go:build unix

package gateway

import "syscall"

// detached starts a process in a session of its own: no terminal, no process group of
// the gateway's, so that it outlives the gateway (a job's supervisor).
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
