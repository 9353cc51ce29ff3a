package hostprobe

// CPUID executes the CPUID instruction for leaf and sub-leaf sub and returns EAX, EBX,
// ECX and EDX.
func CPUID(leaf, sub uint32) (a, b, c, d uint32)
