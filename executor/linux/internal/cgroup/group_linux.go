package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of Kill and Remove: processes dying of SIGKILL leave a cgroup within
// milliseconds, unless blocked in the kernel (an uninterruptible sleep on a dead NFS
// server), which no signal can hurry.
const (
	killTimeout   = 5 * time.Second
	removeTimeout = 2 * time.Second
	freezeTimeout = 100 * time.Millisecond
)

// New creates the group called name in each hierarchy that carries a limit of l or the
// freezer (on v1, not in the others: each costs a mkdir and an rmdir) and writes the limits
// whose controller is usable (see InForce; the others are left out, not an error). It fails if
// a limit cannot be written, if name is not a plain file name, or if the group exists:
// a group is never shared. The group is empty: move the sandbox's init process into it
// with Add before it starts the command.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	if len(m.hierarchies) == 0 {
		return nil, ErrUnavailable
	}
	g := &Group{name: name, version: m.version, hasKill: m.hasKill}
	for _, h := range m.hierarchies {
		// Each hierarchy costs a mkdir and an rmdir: only those carrying a limit of l
		// are used, and the freezer, which makes Kill atomic on v1.
		if !h.has(freezer) && !slices.ContainsFunc(limitControllers, func(c string) bool { return h.has(c) && l.set(c) }) {
			continue
		}
		dir := filepath.Join(h.dir, name)
		if err := m.mkdirGroup(h, dir); err != nil {
			g.rmdirs()
			return nil, fmt.Errorf("create cgroup %s: %w", name, err)
		}
		g.dirs = append(g.dirs, dir)
		g.rels = append(g.rels, joinRel(h.rel, name))
		g.ids = append(g.ids, h.id)
		g.homes = append(g.homes, h.home)
		if h.has(Memory) {
			g.memory = dir
		}
		if h.has(freezer) || m.version == 2 {
			g.freezer = dir
		}
		if err := m.setLimits(h, dir, l); err != nil {
			g.rmdirs()
			return nil, fmt.Errorf("create cgroup %s: %w", name, err)
		}
	}
	return g, nil
}

// mkdirGroup creates dir, a group of h, and h.dir first if someone removed it.
func (m *Manager) mkdirGroup(h hierarchy, dir string) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrNotExist) {
		if err = mkdir(h.dir); err == nil && m.version == 2 {
			err = enable(h.dir, h.controllers)
		}
		if err == nil {
			err = os.Mkdir(dir, 0o755)
		}
	}
	return err
}

func (m *Manager) setLimits(h hierarchy, dir string, l Limits) error {
	var err error
	if h.has(Memory) && l.Memory > 0 {
		mem := strconv.FormatInt(l.Memory, 10)
		if m.version == 2 {
			err = errors.Join(write(dir, "memory.max", mem), writeIfExists(dir, "memory.swap.max", "0"))
		} else {
			// memsw (memory plus swap) may not be below the memory limit: memory first.
			err = write(dir, "memory.limit_in_bytes", mem)
			if err == nil {
				err = writeIfExists(dir, "memory.memsw.limit_in_bytes", mem)
			}
		}
		if err != nil {
			return err
		}
	}
	if h.has(Pids) && l.Pids > 0 {
		if err := write(dir, "pids.max", strconv.FormatInt(l.Pids, 10)); err != nil {
			return err
		}
	}
	if h.has(CPU) && l.CPU > 0 {
		q := cpuQuota(l.CPU)
		if m.version == 2 {
			err = write(dir, "cpu.max", fmt.Sprintf("%d %d", q, cpuPeriod))
		} else {
			// A new cgroup's cpu.cfs_period_us is the kernel's default, cpuPeriod.
			err = write(dir, "cpu.cfs_quota_us", strconv.FormatInt(q, 10))
		}
	}
	return err
}

// writeIfExists writes value to dir/file where the kernel has that file.
func writeIfExists(dir, file, value string) error {
	if err := write(dir, file, value); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Add moves process pid, all its threads, into the group in every hierarchy. Its future
// children are born there.
func (g *Group) Add(pid int) error {
	for _, dir := range g.dirs {
		if err := write(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("add process %d to cgroup %s: %w", pid, g.name, err)
		}
	}
	return nil
}

// Birth says where a process can be started so that it is in the group from its start
// rather than moved in once started (Add); Start starts it there.
//
// Moving a process takes the kernel's cgroup_threadgroup_rwsem for writing, and taking
// that after a pause waits for an RCU grace period: measured on a 2-core VM, 8 to 10 ms
// for a command started after an idle moment (every `cmdgate sandbox run`) with cgroup
// v1, and 4.5 to 20 ms (median 5.9) for a process moved into a cgroup of the same VM's
// cgroup2 mount after a 300 ms pause (the lock is global; only the favordynmods mount
// option spares it). A process born in its cgroup takes no such lock:
//
//   - v1 (Into, Home): a thread that moves itself into the group's directories starts
//     it, then moves back to its own process's cgroups (StartIn); 0.1 to 0.3 ms for the
//     way in and back. Only where this process may move a thread back (its own cgroup's
//     tasks file is writable).
//   - v2 (Dir): the process is cloned into the group's directory (clone3 with
//     CLONE_INTO_CGROUP, Linux 5.7; StartInto). A thread may not leave its process's
//     cgroup on v2.
//
// The zero Birth starts the process where its starter is: move it in with Add.
type Birth struct {
	// Into are the group's directories, one per hierarchy, and Home this process's own
	// in the same order: v1.
	Into, Home []string
	// Dir is the group's directory: v2.
	Dir string
}

// Birth is where a process is born in the group (see the type), or the zero Birth.
func (g *Group) Birth() Birth {
	switch {
	case g.version == 2 && len(g.dirs) == 1:
		return Birth{Dir: g.dirs[0]}
	case g.version == 1 && !slices.Contains(g.homes, ""):
		return Birth{Into: slices.Clone(g.dirs), Home: slices.Clone(g.homes)}
	}
	return Birth{}
}

// Start starts a process by calling start where b says: from the calling thread moved
// into b.Into (StartIn), cloned into b.Dir (StartInto), else as it is. start is passed
// the descriptor of a cgroup directory to clone the process into
// (syscall.SysProcAttr's UseCgroupFD and CgroupFD), or -1; it must start the process
// from the calling thread, which the caller holds (runtime.LockOSThread) when b.Into is
// set, and it may be called twice (see StartInto). The error wraps ErrStranded as
// StartIn's does.
func (b Birth) Start(start func(cgroupFD int) error) error {
	switch {
	case len(b.Into) > 0:
		return StartIn(b.Into, b.Home, func() error { return start(-1) })
	case b.Dir != "":
		return StartInto(b.Dir, start)
	}
	return start(-1)
}

// ErrStranded is StartIn's error when the calling thread could not move back to its own
// cgroups: it is still in the group it moved into and must run nothing more.
var ErrStranded = errors.New("the starting thread could not move back to its own cgroup")

// StartIn calls start from the calling thread while that thread is in the cgroup
// directories into (Birth, v1), so that the process start starts is born in them, and
// moves the thread back to home afterwards. The caller must hold its OS thread
// (runtime.LockOSThread) and start must start the process from it (os/exec does, from
// the calling thread). start is not called when the thread cannot move in; when it cannot
// move back, the error wraps ErrStranded, and the caller must stop whatever start
// started and keep the thread from running anything else.
func StartIn(into, home []string, start func() error) error {
	if len(into) != len(home) {
		return fmt.Errorf("start in cgroups: %d directories to move into, %d to move back to", len(into), len(home))
	}
	moved := 0
	var err error
	for _, dir := range into {
		if err = write(dir, "tasks", "0"); err != nil {
			break
		}
		moved++
	}
	if err == nil {
		err = start()
	} else {
		err = fmt.Errorf("move the starting thread into its cgroup: %w", err)
	}
	for i := range moved {
		if berr := write(home[i], "tasks", "0"); berr != nil {
			return fmt.Errorf("%w: %w", ErrStranded, berr)
		}
	}
	return err
}

// StartInto calls start with a descriptor of the cgroup v2 directory dir, for the process
// it starts to be cloned into it (Birth, v2). When that fails (a kernel before 5.7, dir
// not a cgroup v2 directory, a start error of any kind: they cannot be told apart),
// start is called once more with -1, to start the process where its starter is, and
// its error is returned; likewise when dir cannot be opened. Where the process ends up
// is for the caller to check (Holds) and correct (Add): this never fails closed by
// itself.
func StartInto(dir string, start func(cgroupFD int) error) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return start(-1)
	}
	err = start(fd)
	unix.Close(fd)
	if err != nil {
		return start(-1)
	}
	return nil
}

// Holds reports whether process pid is in the group in every hierarchy of it (not below
// it): whether it was born there or moved in.
func (g *Group) Holds(pid int) bool {
	own, err := readOwn("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for i, rel := range g.rels {
		if !slices.ContainsFunc(own, func(o ownCgroup) bool { return o.id == g.ids[i] && o.path == rel }) {
			return false
		}
	}
	return true
}

// Empty reports whether no process is left in the group: a group whose command is over
// may take the next one (its limits are the same, and reusing it spares the kernel a
// memory cgroup that dies with pages still charged to it).
func (g *Group) Empty() (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pids, err := g.procs()
	return err == nil && len(pids) == 0, err
}

// OOMKilled reports whether the kernel's OOM killer killed a process of the group because
// of its memory limit: memory.events' oom_kill on v2, memory.oom_control's oom_kill on v1
// (Linux 4.13); on older v1 kernels, whether the group ever hit its limit
// (memory.failcnt), which may also count hits that reclaim resolved.
func (g *Group) OOMKilled() bool {
	if g.memory == "" {
		return false
	}
	if g.version == 2 {
		return counter(g.memory, "memory.events", "oom_kill") > 0
	}
	if n := counter(g.memory, "memory.oom_control", "oom_kill"); n >= 0 {
		return n > 0
	}
	b, err := os.ReadFile(filepath.Join(g.memory, "memory.failcnt"))
	if err != nil {
		return false
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n > 0
}

// counter reads the value of key in a flat keyed file ("key value" lines), or -1.
func counter(dir, file, key string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == key {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// Kill kills every process in the group and returns once none is left, or fails after a
// few seconds. On v2 it writes cgroup.kill (Linux 5.14); otherwise it freezes the group
// where it can, so that nothing forks meanwhile, sends SIGKILL to each process listed in
// cgroup.procs (through a pidfd, after checking the process is still in the group, so a
// recycled pid is never hit), and thaws it so the signals take effect, in rounds until
// the group is empty.
func (g *Group) Kill() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.kill()
}

func (g *Group) kill() error {
	deadline := time.Now().Add(killTimeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 50*time.Millisecond) {
		pids, err := g.procs()
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.name, err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: %d processes left after %v", g.name, len(pids), killTimeout)
		}
		if g.hasKill {
			err = write(g.dirs[0], "cgroup.kill", "1")
		} else {
			err = g.signalAll(pids)
		}
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.name, err)
		}
		time.Sleep(delay)
	}
}

// signalAll sends SIGKILL to the group's processes with the group frozen, where it can
// be: pids is a list read before freezing, to know whether there is anything to do, and
// is read again once frozen.
func (g *Group) signalAll(pids []int) error {
	if g.freeze() {
		defer g.thaw()
		var err error
		if pids, err = g.procs(); err != nil {
			return err
		}
	}
	for _, pid := range pids {
		if err := g.signal(pid); err != nil {
			return err
		}
	}
	return nil
}

// freeze freezes the group and reports whether it did, or began to: a group that does
// not freeze within freezeTimeout (a process in an uninterruptible sleep) is left
// freezing, which stops the rest, and thaw undoes that too.
func (g *Group) freeze() bool {
	if g.freezer == "" {
		return false
	}
	file, value, frozen := "freezer.state", "FROZEN", func() bool {
		b, err := os.ReadFile(filepath.Join(g.freezer, "freezer.state"))
		return err == nil && strings.TrimSpace(string(b)) == "FROZEN"
	}
	if g.version == 2 {
		file, value, frozen = "cgroup.freeze", "1", func() bool {
			return counter(g.freezer, "cgroup.events", "frozen") == 1
		}
	}
	if write(g.freezer, file, value) != nil {
		return false
	}
	deadline := time.Now().Add(freezeTimeout)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		if frozen() {
			return true
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(delay)
	}
}

func (g *Group) thaw() {
	if g.version == 2 {
		write(g.freezer, "cgroup.freeze", "0")
	} else {
		write(g.freezer, "freezer.state", "THAWED")
	}
}

// procs lists the processes in the group, in any hierarchy.
func (g *Group) procs() ([]int, error) {
	var pids []int
	seen := map[int]bool{}
	for _, dir := range g.dirs {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed already
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			pid, err := strconv.Atoi(sc.Text())
			if err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// signal sends SIGKILL to pid if it is in the group. The pidfd pins the process the
// check is about: if pid was recycled, the check sees a process outside the group, or
// the pidfd a dead one.
func (g *Group) signal(pid int) error {
	var fd int
	err := eintr(func() (err error) { fd, err = unix.PidfdOpen(pid, 0); return err })
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case errors.Is(err, unix.ENOSYS): // before Linux 5.3
		if g.member(pid) {
			err = unix.Kill(pid, unix.SIGKILL)
		}
	case err == nil:
		if g.member(pid) {
			err = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process %d: %w", pid, err)
	}
	return nil
}

// member reports whether process pid is in the group, or in a cgroup below it, in one
// of its hierarchies.
func (g *Group) member(pid int) bool {
	own, err := readOwn("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, o := range own {
		for i, rel := range g.rels {
			if o.id == g.ids[i] && (o.path == rel || strings.HasPrefix(o.path, rel+"/")) {
				return true
			}
		}
	}
	return false
}

// Remove kills what is left in the group (see Kill) and removes its directories. Removing
// a group that is gone is not an error.
func (g *Group) Remove() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.kill(); err != nil {
		return err
	}
	return g.rmdirs()
}

// rmdirs removes the group's directories, retrying while the last processes leave.
func (g *Group) rmdirs() error {
	var errs []error
	deadline := time.Now().Add(removeTimeout)
	for _, dir := range g.dirs {
		for delay := 100 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
			err := eintr(func() error { return unix.Rmdir(dir) })
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
				break
			}
			time.Sleep(delay)
		}
	}
	return errors.Join(errs...)
}

// RemoveStale removes the empty groups that stale reports stale by name: those a
// crashed gateway left behind. A group that still holds processes is left alone.
func (m *Manager) RemoveStale(stale func(name string) bool) error {
	var errs []error
	for _, h := range m.hierarchies {
		entries, err := os.ReadDir(h.dir)
		if err != nil {
			continue // no group was ever made here
		}
		for _, ent := range entries {
			if !ent.IsDir() || validName(ent.Name()) != nil || !stale(ent.Name()) {
				continue
			}
			err := os.Remove(filepath.Join(h.dir, ent.Name()))
			if err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
