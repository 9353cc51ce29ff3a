//go:build !linux

package gateway

// noSymlinkDir reports false: Resolve evaluates the path's links itself.
func noSymlinkDir(string) bool { return false }
