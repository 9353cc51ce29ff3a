package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// baseName is the directory, in each hierarchy, that holds every group.
const baseName = "cmdgate"

// freezer is the v1 controller Kill uses to stop a group's processes from forking while
// it kills them.
const freezer = "freezer"

// Detect finds where this process may create cgroups and which of memory, pids and cpu it
// can limit there; see the package documentation for the places it chooses. It creates
// the "cmdgate" directories and a probe cgroup in each (removed at once). It never fails:
// what it cannot use is in Unavailable.
func Detect() *Manager {
	mounts, errM := readMounts("/proc/self/mountinfo")
	own, errC := readOwn("/proc/self/cgroup")
	if err := errors.Join(errM, errC); err != nil {
		return none(fmt.Sprintf("read this process's cgroups: %v", err))
	}
	v2 := detectV2(mounts, own)
	if len(v2.unavailable) == 0 {
		return v2
	}
	v1 := detectV1(mounts, own)
	n1, n2 := len(limitControllers)-len(v1.unavailable), len(limitControllers)-len(v2.unavailable)
	switch {
	case n2 > 0 && n2 >= n1:
		return v2
	case n1 > 0:
		return v1
	}
	m := none("")
	for _, c := range limitControllers {
		m.unavailable[c] = "cgroup v2: " + v2.unavailable[c] + "; cgroup v1: " + v1.unavailable[c]
	}
	return m
}

// none is a Manager with no usable controller, each for reason.
func none(reason string) *Manager {
	m := &Manager{unavailable: map[string]string{}}
	for _, c := range limitControllers {
		m.unavailable[c] = reason
	}
	return m
}

type mount struct {
	root, point, fstype string
	options             []string // the super options: rw, the v1 controllers, name=...
}

// readMounts reads the cgroup and cgroup2 mounts of a mountinfo file.
func readMounts(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 6 || len(fields) < sep+4 {
			continue
		}
		fstype := fields[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		ms = append(ms, mount{
			root:    unescape(fields[3]),
			point:   unescape(fields[4]),
			fstype:  fstype,
			options: strings.Split(fields[sep+3], ","),
		})
	}
	return ms, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is one line of /proc/<pid>/cgroup.
type ownCgroup struct {
	id   string // "memory", "cpu,cpuacct", "name=systemd", or "" for v2
	path string
}

// readOwn reads a /proc/<pid>/cgroup file.
func readOwn(path string) ([]ownCgroup, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var own []ownCgroup
	for line := range strings.Lines(string(b)) {
		// hierarchy-id:controllers:path; the path may itself contain ':'.
		parts := strings.SplitN(strings.TrimSuffix(line, "\n"), ":", 3)
		if len(parts) == 3 {
			own = append(own, ownCgroup{id: parts[1], path: parts[2]})
		}
	}
	return own, nil
}

// dirOf is the directory of the cgroup at path (as /proc/self/cgroup shows it) under
// mount m, or "" when the mount does not show that cgroup.
func dirOf(m mount, path string) string {
	if m.root == "/" {
		return filepath.Join(m.point, path)
	}
	if path == m.root {
		return m.point
	}
	if rest, ok := strings.CutPrefix(path, m.root+"/"); ok {
		return filepath.Join(m.point, rest)
	}
	return ""
}

var probeSeq atomic.Int64

// probeName is a fresh name for a probe cgroup.
func probeName() string {
	return fmt.Sprintf(".probe-%d-%d", os.Getpid(), probeSeq.Add(1))
}

func detectV1(mounts []mount, own []ownCgroup) *Manager {
	m := &Manager{version: 1, unavailable: map[string]string{}}
	byDir := map[string]int{} // base directory -> index in m.hierarchies
	for _, c := range append(slices.Clone(limitControllers), freezer) {
		h, err := v1Hierarchy(mounts, own, c)
		if err != nil {
			if c != freezer {
				m.unavailable[c] = err.Error()
			}
			continue
		}
		if i, ok := byDir[h.dir]; ok {
			m.hierarchies[i].controllers = append(m.hierarchies[i].controllers, c)
			continue
		}
		byDir[h.dir] = len(m.hierarchies)
		m.hierarchies = append(m.hierarchies, h)
	}
	return m
}

// v1Hierarchy finds and probes the v1 hierarchy of controller c.
func v1Hierarchy(mounts []mount, own []ownCgroup, c string) (hierarchy, error) {
	i := slices.IndexFunc(own, func(o ownCgroup) bool {
		return o.id != "" && slices.Contains(strings.Split(o.id, ","), c)
	})
	if i < 0 {
		return hierarchy{}, fmt.Errorf("no cgroup v1 %s hierarchy in /proc/self/cgroup", c)
	}
	o := own[i]
	var dir string
	for _, mt := range mounts {
		if mt.fstype == "cgroup" && slices.Contains(mt.options, c) {
			if dir = dirOf(mt, o.path); dir != "" {
				break
			}
		}
	}
	if dir == "" {
		return hierarchy{}, fmt.Errorf("this process's cgroup v1 %s cgroup %s is not mounted", c, o.path)
	}
	h := hierarchy{
		dir:         filepath.Join(dir, baseName),
		rel:         joinRel(o.path, baseName),
		id:          o.id,
		controllers: []string{c},
	}
	if err := mkdir(h.dir); err != nil {
		return hierarchy{}, err
	}
	// A probe proves what a group needs: creating a cgroup, writing its limit and its
	// cgroup.procs.
	probe := filepath.Join(h.dir, probeName())
	if err := os.Mkdir(probe, 0o755); err != nil {
		return hierarchy{}, err
	}
	defer os.Remove(probe)
	var err error
	switch c {
	case Memory:
		err = write(probe, "memory.limit_in_bytes", "-1")
	case Pids:
		err = write(probe, "pids.max", "max")
	case CPU:
		err = write(probe, "cpu.cfs_quota_us", "-1")
	case freezer:
		err = write(probe, "freezer.state", "THAWED")
	}
	if err == nil {
		err = access(filepath.Join(probe, "cgroup.procs"))
	}
	// A thread may start the group's init from inside the group where it can move itself
	// in and back (Birth).
	if err == nil && access(filepath.Join(probe, "tasks")) == nil && access(filepath.Join(dir, "tasks")) == nil {
		h.home = dir
	}
	return h, err
}

func detectV2(mounts []mount, own []ownCgroup) *Manager {
	m := &Manager{version: 2, unavailable: map[string]string{}}
	fail := func(format string, args ...any) *Manager {
		for _, c := range limitControllers {
			if _, ok := m.unavailable[c]; !ok {
				m.unavailable[c] = fmt.Sprintf(format, args...)
			}
		}
		return m
	}
	i := slices.IndexFunc(own, func(o ownCgroup) bool { return o.id == "" })
	if i < 0 {
		return fail("this process is in no cgroup v2 cgroup (no 0:: line in /proc/self/cgroup)")
	}
	path := own[i].path
	var ownDir string
	var mt mount
	for _, mt = range mounts {
		if mt.fstype == "cgroup2" {
			if ownDir = dirOf(mt, path); ownDir != "" {
				break
			}
		}
	}
	if ownDir == "" {
		return fail("this process's cgroup v2 cgroup %s is not mounted", path)
	}
	avail, err := readList(ownDir, "cgroup.controllers")
	if err != nil {
		return fail("%v", err)
	}
	var want []string
	for _, c := range limitControllers {
		if slices.Contains(avail, c) {
			want = append(want, c)
		} else {
			m.unavailable[c] = fmt.Sprintf("controller not in %s (bound to a v1 hierarchy or not delegated)", filepath.Join(ownDir, "cgroup.controllers"))
		}
	}
	if len(want) == 0 {
		return m
	}

	// Where "cmdgate" goes: below this process's cgroup if its subtree can have the
	// controllers, else beside it (the no-internal-processes rule).
	parentDir, parentRel := ownDir, path
	var where string // why the groups go beside this process's cgroup, for reasons
	if err := enable(ownDir, want); err != nil {
		if ownDir == mt.point {
			return fail("cannot enable controllers below this process's cgroup %s, the top of the cgroup v2 hierarchy it can see, which holds processes (%v); run the gateway in a child cgroup of its own", ownDir, err)
		}
		parentDir, parentRel = filepath.Dir(ownDir), pathDir(path)
		where = fmt.Sprintf("cannot enable controllers below this process's cgroup (%v), nor beside it (for a non-root gateway under systemd: Delegate=yes with DelegateSubgroup=): ", err)
	}
	h := hierarchy{dir: filepath.Join(parentDir, baseName), rel: joinRel(parentRel, baseName)}
	if err := mkdir(h.dir); err != nil {
		return fail("%s%v", where, err)
	}
	// Moving a process between cgroups needs write access to cgroup.procs of their common
	// ancestor, parentDir.
	if err := access(filepath.Join(parentDir, "cgroup.procs")); err != nil {
		return fail("%s%v", where, err)
	}
	probe := filepath.Join(h.dir, probeName())
	for _, c := range want {
		if err := enable(h.dir, []string{c}); err != nil {
			m.unavailable[c] = err.Error()
		}
	}
	if err := os.Mkdir(probe, 0o755); err != nil {
		return fail("%v", err)
	}
	defer os.Remove(probe)
	if err := access(filepath.Join(probe, "cgroup.procs")); err != nil {
		return fail("%v", err)
	}
	for _, c := range want {
		if _, ok := m.unavailable[c]; ok {
			continue
		}
		if err := write(probe, c+".max", "max"); err != nil {
			m.unavailable[c] = err.Error()
			continue
		}
		h.controllers = append(h.controllers, c)
	}
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err == nil {
		m.hasKill = true
	}
	if len(h.controllers) > 0 {
		m.hierarchies = []hierarchy{h}
	}
	return m
}

// enable makes controllers cs available to the children of dir, unless they are.
func enable(dir string, cs []string) error {
	on, err := readList(dir, "cgroup.subtree_control")
	if err != nil {
		return err
	}
	for _, c := range cs {
		if !slices.Contains(on, c) {
			if err := write(dir, "cgroup.subtree_control", "+"+c); err != nil {
				return err
			}
		}
	}
	return nil
}

// readList reads a space-separated list file such as cgroup.controllers.
func readList(dir, file string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// mkdir creates dir, which may exist.
func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// access reports whether this process may write path.
func access(path string) error {
	if err := eintr(func() error { return unix.Access(path, unix.W_OK) }); err != nil {
		return &fs.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}

// write writes value to dir/file, a cgroup interface file.
func write(dir, file, value string) error {
	path := filepath.Join(dir, file)
	var fd int
	err := eintr(func() (err error) {
		fd, err = unix.Open(path, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// Some writes (memory.limit_in_bytes reclaiming) fail with EINTR when a signal
	// arrives, as the Go runtime's preemption signal does.
	err = eintr(func() error { _, err := unix.Write(fd, []byte(value)); return err })
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// eintr calls f until it does not fail with EINTR.
func eintr(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// joinRel joins cgroup paths as /proc/<pid>/cgroup shows them.
func joinRel(dir, name string) string {
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// pathDir is the parent of a cgroup path as /proc/<pid>/cgroup shows it.
func pathDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
