// Package hostprobe measures what a host charges for the instructions every program
// start executes but a benchmark of cmdgate does not choose: CPUID above all. A
// dynamically linked program's loader runs CPUID dozens of times to learn the CPU's
// features and caches; on bare metal each costs tens of nanoseconds, but a hypervisor
// traps it, and under nested virtualization one costs microseconds. bwrap and the
// command it runs are two such starts, a sandbox built ahead starts only the command,
// and a Go program's runtime runs far fewer: the sandbox benchmarks' ratios to
// bubblewrap move from host to host with this price, which BenchmarkHost reports.
//
// CPUID exists on amd64 only, CountCPUIDs on linux/amd64 only.
package hostprobe
