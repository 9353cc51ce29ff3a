//go:build linux && !amd64 && !arm64

package seccomp

// auditArch zero marks an architecture the filter has no table for: Filter refuses.
const auditArch uint32 = 0

const x32Bit uint32 = 0

var sysnum map[string]uint32
