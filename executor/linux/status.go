package linux

import (
	"fmt"
	"strings"
)

// Status says which protections and limits are in force.
type Status struct {
	// Helper is the init program.
	Helper string `json:"helper"`
	// Caches is the tool cache area bound read-write ("" when none).
	Caches string `json:"caches,omitempty"`
	// Uplink is the program that gives a command granted the network its own way out
	// (slirp4netns); "" when there is none, and Unavailable["network"] says why: such
	// a command is then refused.
	Uplink string `json:"uplink"`
	// Landlock is the Landlock ABI version the rules are enforced with (after Probe).
	Landlock int `json:"landlock"`
	// Rlimits names the rlimits applied to every command.
	Rlimits []string `json:"rlimits"`
	// Cgroup is the cgroup version used (0: none), Limits the cgroup limits in force,
	// Unavailable why the others are not (and, under "network", why there is no uplink).
	Cgroup      int               `json:"cgroup"`
	Limits      []string          `json:"limits"`
	Unavailable map[string]string `json:"unavailable,omitempty"`
	// Pool is how many sandboxes wait in the pool when it is full: Options.Pool after
	// its default, 0 for none. Its builders hold up to two more.
	Pool int `json:"pool"`
	// Build is how long the probe's sandbox took to build, step by step (after Probe):
	// where a sandbox's start goes on this host.
	Build *BuildTiming `json:"build,omitempty"`
}

// BuildTiming is how long one sandbox took to build, from the executor's first step to
// the init's report that it is ready, and each step of it in order, in microseconds.
// The steps, each starting where the one before ended:
//
//	cgroup      the command's cgroup made, or taken from those made ahead (none without cgroups)
//	spawn       the init started: the clone into its namespaces (born in its cgroup
//	            where it can be: on cgroup v1 the starting thread moves in and back
//	            out) and the exec, until its starter (the spawner, or this process)
//	            has it running, or the init's own code began if that came first (a
//	            busy machine); the probe's also starts the spawner
//	start       the init's Go runtime and the package initialisers before the init's
//	            own, from there
//	layout      the rest of the init's start, the init moved into its cgroup where it was
//	            not born there, the uplink attached for a command granted the network,
//	            and the layout sent and read
//	namespaces  the cgroup namespace, the host name, the loopback (and, granted the
//	            network, the routes that close off the host's addresses)
//	root        the new root: the binds, /tmp, /proc, /dev, the pivot, the host's root detached
//	privileges  capabilities, securebits, no_new_privs, not dumpable
//	landlock    the Landlock ruleset built and enforced on every thread
//	seccomp     the seccomp filter built and installed on every thread
//	home        HOME created
//
// TotalUS also holds what no step covers: the pipes made before, the ready report's way
// back after.
type BuildTiming struct {
	TotalUS int64       `json:"total_us"`
	Steps   []BuildStep `json:"steps"`
}

// String is the steps' microseconds in order, then the total: "cgroup=59 spawn=1500 …
// total=3600".
func (t BuildTiming) String() string {
	var b strings.Builder
	for _, st := range t.Steps {
		fmt.Fprintf(&b, "%s=%d ", st.Step, st.US)
	}
	fmt.Fprintf(&b, "total=%d", t.TotalUS)
	return b.String()
}

// BuildStep is one step of a BuildTiming.
type BuildStep struct {
	Step string `json:"step"`
	US   int64  `json:"us"`
}
