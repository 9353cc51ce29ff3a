package cgroup

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
)

// The controllers whose limits this package applies, in the order InForce lists them.
const (
	Memory = "memory"
	Pids   = "pids"
	CPU    = "cpu"
)

var limitControllers = []string{Memory, Pids, CPU}

// Limits are the limits of one group. A zero field means no limit from this package (the
// parent cgroup's limits still apply); the zero Limits limits nothing.
type Limits struct {
	// Memory is the most memory, in bytes, the group's processes may use together, swap
	// included; beyond it the kernel's OOM killer kills one of them.
	Memory int64
	// Pids is the most processes (threads included) the group may hold at once; fork and
	// clone fail beyond it.
	Pids int64
	// CPU is the CPU time the group may use, in CPUs: 1.5 is 150 ms per 100 ms period.
	// The kernel's minimum is 0.01.
	CPU float64
}

func (l Limits) set(controller string) bool {
	switch controller {
	case Memory:
		return l.Memory != 0
	case Pids:
		return l.Pids != 0
	case CPU:
		return l.CPU != 0
	}
	return false
}

func (l Limits) validate() error {
	if l.Memory < 0 || l.Pids < 0 || l.CPU < 0 || math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0) {
		return fmt.Errorf("%w: %+v", ErrInvalidLimits, l)
	}
	return nil
}

// cpuPeriod is the CFS period, in microseconds, both versions' CPU limit is expressed in:
// the kernel's default.
const cpuPeriod = 100000

// cpuQuota is the quota per cpuPeriod for cpus CPUs, never below the kernel's 1 ms minimum.
func cpuQuota(cpus float64) int64 {
	return max(int64(math.Round(cpus*cpuPeriod)), 1000)
}

func validName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 255 || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	return nil
}

// hierarchy is one place where groups are created: a v1 hierarchy or the v2 one.
type hierarchy struct {
	// dir is the "cmdgate" directory, parent of every group.
	dir string
	// rel is dir as /proc/<pid>/cgroup shows cgroup paths: from the root of the hierarchy
	// as this process's cgroup namespace sees it.
	rel string
	// id is the hierarchy's controller list as /proc/<pid>/cgroup shows it: "memory" or
	// "cpu,cpuacct" for v1, "" for v2.
	id string
	// controllers are the usable controllers of interest it carries (memory, pids, cpu,
	// and freezer on v1).
	controllers []string
	// home is this process's own cgroup directory in the hierarchy where a thread of it
	// may move itself back there (v1, its tasks file writable), else "": see Birth.
	home string
}

func (h *hierarchy) has(controller string) bool {
	for _, c := range h.controllers {
		if c == controller {
			return true
		}
	}
	return false
}

// Manager creates groups where Detect found it could. The zero Manager has no usable
// controller. A Manager is not changed after Detect and is safe for concurrent use.
type Manager struct {
	version     int
	hierarchies []hierarchy
	unavailable map[string]string
	// hasKill: the v2 cgroup.kill file exists.
	hasKill bool
}

// Version is the cgroup version groups are created with: 2 or 1, or 0 when none.
func (m *Manager) Version() int { return m.version }

func (m *Manager) usable(controller string) bool {
	for i := range m.hierarchies {
		if m.hierarchies[i].has(controller) {
			return true
		}
	}
	return false
}

// InForce lists which of "memory", "pids" and "cpu" New applies for l: those with a
// nonzero limit in l whose controller is usable. A limit on an unusable controller is
// not applied: report it with Unavailable.
func (m *Manager) InForce(l Limits) []string {
	var in []string
	for _, c := range limitControllers {
		if l.set(c) && m.usable(c) {
			in = append(in, c)
		}
	}
	return in
}

// Unavailable maps each of "memory", "pids" and "cpu" that cannot be used to the reason,
// for /healthz and the logs. It is empty when all three are usable. The map is a copy.
func (m *Manager) Unavailable() map[string]string {
	if m.unavailable == nil && m.version == 0 {
		r := make(map[string]string, len(limitControllers))
		for _, c := range limitControllers {
			r[c] = "cgroups not detected"
		}
		return r
	}
	return maps.Clone(m.unavailable)
}

// Group is one command's cgroup, a directory in each hierarchy the Manager uses. Its
// methods are safe for concurrent use; Kill and Remove run one at a time.
type Group struct {
	name    string
	version int
	dirs    []string // the group's directory in each hierarchy, parallel to m.hierarchies
	rels    []string // the same as /proc/<pid>/cgroup shows them
	ids     []string // the hierarchies' ids
	homes   []string // this process's own cgroup directory in each hierarchy, or "" (hierarchy.home)
	memory  string   // the directory holding the memory controller's files, or ""
	freezer string   // the directory holding the freezer's files, or ""
	hasKill bool
	mu      sync.Mutex // Kill and Remove
}

// Paths are the group's directories, one per hierarchy.
func (g *Group) Paths() []string { return append([]string(nil), g.dirs...) }
