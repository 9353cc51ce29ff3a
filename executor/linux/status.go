package linux

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
}
