// Package cgroup confines each sandboxed command in a cgroup of its own with memory, pids
// and CPU limits, using cgroup v2 where the host offers the controllers there and the v1
// hierarchies otherwise.
//
// Detect runs once, at gateway start: it reads /proc/self/mountinfo and /proc/self/cgroup,
// prepares a "cmdgate" directory per hierarchy and proves it can use each controller by
// creating, configuring and removing a probe cgroup. It never fails; Unavailable says why
// a controller cannot be used, for /healthz and the logs. Manager.New then creates one
// cgroup per command, and the sandbox's init process is in it before it starts the
// command, so everything the command forks is inside: it is born there where it can be
// (Group.Birth: on v1 the thread that starts it moves itself into the group for the start
// and back, on v2 it is cloned into the group), else moved in once started (Group.Add).
// Group.Remove kills what is left and removes the cgroup.
//
// Choice of version: the one that makes more of memory, pids and cpu usable, v2 on a tie.
// The two are never mixed. On a hybrid host (v1 controllers plus an empty cgroup2 mount)
// that is v1.
//
// cgroup v1: each controller (memory, pids, cpu, and freezer for Kill) has its own
// hierarchy; a group is <own cgroup>/cmdgate/<name> in every one of them, where <own
// cgroup> is this process's cgroup in that hierarchy. v1 has no rule against processes in
// inner cgroups, so the child of the gateway's own cgroup always works where it is
// writable. The memory limit is also written to memory.memsw.limit_in_bytes where swap
// accounting exists, so swap cannot bypass it.
//
// cgroup v2: the "no internal processes" rule forbids enabling controllers in the
// subtree_control of a cgroup that holds processes, other than the root, and the gateway
// is in its own cgroup. So the "cmdgate" directory is placed:
//
//   - below the gateway's own cgroup when that cgroup already delegates the controllers
//     (its cgroup.subtree_control lists them) or they can be enabled there (it is the root);
//   - otherwise beside it, as a sibling in the parent cgroup, whose subtree_control
//     necessarily lists the controllers the gateway's cgroup has. For root that is any
//     parent; for a non-root gateway the parent must be delegated to it, which is what
//     systemd's Delegate=yes with DelegateSubgroup= (systemd 254 or later) arranges: the
//     gateway runs in <unit>/<subgroup> and its groups go to <unit>/cmdgate.
//
// When the gateway's cgroup is the top of the hierarchy it can see (a container with a
// private cgroup namespace) and holds processes, no cgroup can get the controllers and
// Unavailable says so. The package never moves the gateway or any other process out of
// its cgroup to make room: that would change the cgroup the service manager accounts and
// stops the gateway by, and any other process left there would block it anyway. Groups
// placed beside the gateway are not counted in the gateway's own cgroup limits; each has
// its own. memory.swap.max is set to 0 where it exists, so swap cannot bypass the memory
// limit. Kill uses cgroup.kill (Linux 5.14) where present.
//
// Group names must be unique among all cmdgate processes sharing a hierarchy (a name in
// use is an error, never a shared cgroup): include the gateway's pid. The "cmdgate"
// directories are left in place when their groups are removed: several gateways and
// goroutines share them.
//
// On systems other than Linux, Detect reports no usable controller and New refuses.
package cgroup
