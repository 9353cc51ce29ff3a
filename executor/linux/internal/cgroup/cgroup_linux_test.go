package cgroup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// The test binary doubles as the helper processes the tests run, chosen by helperEnv.
const helperEnv = "CGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "hog":
		hog()
	case "detect":
		d := Detect()
		json.NewEncoder(os.Stdout).Encode(map[string]any{"version": d.Version(), "unavailable": d.Unavailable()})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hog waits for a line on standard input, then touches up to 1 GiB of memory, keeping all
// of it, and exits 0 if it got there.
func hog() {
	bufio.NewReader(os.Stdin).ReadString('\n')
	var keep [][]byte
	for range 1024 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	fmt.Println("allocated", len(keep), "MiB")
	os.Exit(0)
}

// manager is the Detect of this machine, skipping (failing under CI) unless it can
// limit memory, pids and cpu.
func manager(t testing.TB) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "creating cgroups needs root (or a delegated cgroup, not tested)")
	}
	m := Detect()
	if u := m.Unavailable(); len(u) > 0 {
		testenv.Skip(t, "cgroup controllers unavailable: %v", u)
	}
	return m
}

// newGroup creates a group named after the test, removed when the test ends.
func newGroup(t *testing.T, m *Manager, l Limits) *Group {
	t.Helper()
	g, err := m.New(groupName(t), l)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", l, err)
	}
	t.Cleanup(func() {
		if err := g.Remove(); err != nil {
			t.Errorf("Remove() error = %v", err)
		}
	})
	return g
}

func groupName(t *testing.T) string {
	return fmt.Sprintf("test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))
}

// child is a process started by a test and moved into a group.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr syncBuffer
	done   chan struct{}
	err    error // of Wait, once done is closed
}

// syncBuffer is a bytes.Buffer that may be read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// start starts argv and moves it into g. The tests' commands wait for a line on standard
// input (release) before they do anything, so that they run entirely in the group.
func start(t *testing.T, g *Group, env []string, argv ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		// Its children too: they hold its stderr open, which Wait waits for.
		c.cmd.Process.Kill()
		g.Kill()
		<-c.done
	})
	if err := g.Add(c.cmd.Process.Pid); err != nil {
		t.Fatalf("Add(%d) error = %v", c.cmd.Process.Pid, err)
	}
	return c
}

func (c *child) release(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the child to exit, failing the test after timeout.
func (c *child) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(timeout):
		t.Fatalf("%v still running after %v", c.cmd.Args, timeout)
		return nil
	}
}

// killedBySIGKILL reports whether err, from Wait, says the process died of SIGKILL.
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// file reads a cgroup file of g, from whichever of its directories has it.
func file(t *testing.T, g *Group, name string) string {
	t.Helper()
	for _, dir := range g.Paths() {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("no %s in %v", name, g.Paths())
	return ""
}

// procs reads cgroup.procs of each of g's directories.
func procs(t *testing.T, g *Group) map[string][]int {
	t.Helper()
	all := map[string][]int{}
	for _, dir := range g.Paths() {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		all[dir] = []int{}
		for f := range strings.FieldsSeq(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			all[dir] = append(all[dir], pid)
		}
	}
	return all
}

// poll calls cond every 10 ms until it holds, failing the test after timeout.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, timeout)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	m := manager(t)
	if got, want := m.InForce(Limits{Memory: 1, Pids: 1, CPU: 1}), []string{Memory, Pids, CPU}; !slices.Equal(got, want) {
		t.Errorf("InForce() = %v, want %v", got, want)
	}
	if got := m.InForce(Limits{Pids: 5}); !slices.Equal(got, []string{Pids}) {
		t.Errorf("InForce(Pids only) = %v, want [pids]", got)
	}
	// A pure v2 host mounts the v2 hierarchy, with the controllers, at /sys/fs/cgroup; a
	// v1 or hybrid host does not.
	want := 1
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if f := strings.Fields(string(b)); slices.Contains(f, Memory) && slices.Contains(f, Pids) && slices.Contains(f, CPU) {
			want = 2
		}
	}
	if got := m.Version(); got != want {
		t.Errorf("Version() = %d, want %d", got, want)
	}
	t.Logf("cgroup v%d", m.Version())
}

// TestDetectUnprivileged runs Detect as nobody, who may create no cgroup here: it must
// say so for each controller, not fail later.
func TestDetectUnprivileged(t *testing.T) {
	t.Parallel()
	manager(t)
	// nobody must be able to run the test binary: a copy in a directory it can enter.
	dir := t.TempDir()
	exe := filepath.Join(dir, "cgroup.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	// A process forked meanwhile by a parallel test may hold the copy open for writing
	// until it execs (ETXTBSY).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), helperEnv+"=detect")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err = cmd.Output(); !errors.Is(err, syscall.ETXTBSY) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("detect as nobody: %v", err)
	}
	var got struct {
		Version     int
		Unavailable map[string]string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("detect as nobody: %v in %q", err, out)
	}
	if got.Version != 0 {
		t.Errorf("Version() as nobody = %d, want 0", got.Version)
	}
	for _, c := range []string{Memory, Pids, CPU} {
		if r := got.Unavailable[c]; !strings.Contains(r, "permission denied") {
			t.Errorf("Unavailable()[%q] as nobody = %q, want permission denied", c, r)
		}
	}
	t.Logf("as nobody: %v", got.Unavailable)
}

func TestNewLimits(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{Memory: 64 << 20, Pids: 10, CPU: 1.5})
	if len(g.Paths()) == 0 {
		t.Fatal("Paths() is empty")
	}
	for _, dir := range g.Paths() {
		if filepath.Base(dir) != groupName(t) || filepath.Base(filepath.Dir(dir)) != "cmdgate" {
			t.Errorf("path %s, want .../cmdgate/%s", dir, groupName(t))
		}
	}
	var want map[string]string
	if m.Version() == 2 {
		want = map[string]string{"memory.max": "67108864", "pids.max": "10", "cpu.max": "150000 100000"}
		if _, err := os.Stat(filepath.Join(g.Paths()[0], "memory.swap.max")); err == nil {
			want["memory.swap.max"] = "0"
		}
	} else {
		want = map[string]string{"memory.limit_in_bytes": "67108864", "pids.max": "10", "cpu.cfs_quota_us": "150000", "cpu.cfs_period_us": "100000"}
		if g.memory != "" {
			if _, err := os.Stat(filepath.Join(g.memory, "memory.memsw.limit_in_bytes")); err == nil {
				want["memory.memsw.limit_in_bytes"] = "67108864"
			}
		}
	}
	for f, v := range want {
		if got := file(t, g, f); got != v {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}
	if g.OOMKilled() {
		t.Error("OOMKilled() = true in a new group")
	}
}

func TestNewExisting(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{Pids: 10})
	if _, err := m.New(groupName(t), Limits{Pids: 10}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("New(%q) again: error = %v, want %v", groupName(t), err, fs.ErrExist)
	}
	for _, dir := range g.Paths() {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the first group: %v", err)
		}
	}
}

func TestNewInvalidNameNoTraversal(t *testing.T) {
	t.Parallel()
	m := manager(t)
	for _, name := range []string{"..", "../" + groupName(t), "a/b"} {
		if g, err := m.New(name, Limits{Pids: 1}); !errors.Is(err, ErrInvalidName) {
			g.Remove()
			t.Errorf("New(%q) error = %v, want %v", name, err, ErrInvalidName)
		}
	}
	for _, h := range m.hierarchies {
		if _, err := os.Stat(filepath.Join(filepath.Dir(h.dir), groupName(t))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a cgroup beside %s: %v", h.dir, err)
		}
	}
}

func TestAdd(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{Memory: 64 << 20, Pids: 10, CPU: 1})
	c := start(t, g, nil, "sleep", "30")
	pid := c.cmd.Process.Pid
	for dir, pids := range procs(t, g) {
		if !slices.Equal(pids, []int{pid}) {
			t.Errorf("%s/cgroup.procs = %v, want [%d]", dir, pids, pid)
		}
	}
	if !g.member(pid) {
		t.Errorf("member(%d) = false", pid)
	}
	if g.member(os.Getpid()) {
		t.Error("member(this process) = true")
	}
	if err := g.Add(1 << 30); err == nil {
		t.Error("Add(a pid that does not exist) = nil")
	}
}

func TestPidsLimit(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{Pids: 10})
	sh := testenv.NeedCommand(t, "sh")
	c := start(t, g, nil, sh, "-c", "read x; for i in $(seq 50); do sleep 5 & done; wait")
	c.release(t)
	poll(t, 10*time.Second, "fork failure in the shell's stderr", func() bool {
		return strings.Contains(c.stderr.String(), "fork")
	})
	if f := strings.Fields(file(t, g, "pids.events")); len(f) != 2 || f[1] == "0" {
		t.Errorf("pids.events = %q, want max > 0", f)
	}
	for dir, pids := range procs(t, g) {
		if len(pids) > 10 {
			t.Errorf("%s holds %d processes, want at most 10", dir, len(pids))
		}
	}
	if n, _ := strconv.Atoi(file(t, g, "pids.current")); n > 10 {
		t.Errorf("pids.current = %d, want at most 10", n)
	}
	t.Logf("the shell's stderr: %q", c.stderr.String())
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{Memory: 64 << 20})
	c := start(t, g, []string{helperEnv + "=hog"}, os.Args[0])
	c.release(t)
	err := c.wait(t, time.Minute)
	if !killedBySIGKILL(err) {
		t.Errorf("the memory hog: %v (stderr %q), want killed by SIGKILL", err, c.stderr.String())
	}
	if !g.OOMKilled() {
		t.Error("OOMKilled() = false")
	}
}

func TestCPULimit(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{CPU: 0.05})
	sh := testenv.NeedCommand(t, "sh")
	c := start(t, g, nil, sh, "-c", "read x; while :; do :; done")
	c.release(t)
	poll(t, 10*time.Second, "throttling", func() bool {
		b, err := os.ReadFile(filepath.Join(cpuDir(t, g), "cpu.stat"))
		return err == nil && counterOf(string(b), "nr_throttled") > 0
	})
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.wait(t, 10*time.Second); !killedBySIGKILL(err) {
		t.Errorf("the busy loop: %v, want killed by SIGKILL", err)
	}
}

// cpuDir is the directory of g with the cpu controller's files.
func cpuDir(t *testing.T, g *Group) string {
	for _, dir := range g.Paths() {
		for _, f := range []string{"cpu.max", "cpu.cfs_quota_us"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return dir
			}
		}
	}
	t.Fatalf("no cpu controller in %v", g.Paths())
	return ""
}

func counterOf(s, key string) int64 {
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

func TestKill(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{Pids: 20})
	sh := testenv.NeedCommand(t, "sh")
	c := start(t, g, nil, sh, "-c", "read x; sleep 30 & sleep 30 & sleep 30 & wait")
	c.release(t)
	poll(t, 10*time.Second, "4 processes", func() bool {
		for _, pids := range procs(t, g) {
			if len(pids) != 4 {
				return false
			}
		}
		return true
	})
	killAll(t, g, c)
	if g.freezer != "" {
		if s := file(t, g, "freezer.state"); m.Version() == 1 && s != "THAWED" {
			t.Errorf("freezer.state after Kill = %q, want THAWED", s)
		}
	}
	if err := g.Kill(); err != nil {
		t.Errorf("Kill() of an empty group: %v", err)
	}
}

// TestKillChurn kills a group whose processes keep forking.
func TestKillChurn(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{Pids: 40})
	sh := testenv.NeedCommand(t, "sh")
	c := start(t, g, nil, sh, "-c", "read x; for i in 1 2 3 4 5 6 7 8; do (while :; do sleep 0.01 & wait; done) & done; wait")
	c.release(t)
	poll(t, 10*time.Second, "9 processes", func() bool {
		for _, pids := range procs(t, g) {
			if len(pids) < 9 {
				return false
			}
		}
		return true
	})
	killAll(t, g, c)
}

func TestFreeze(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g := newGroup(t, m, Limits{})
	if g.freezer == "" {
		testenv.Skip(t, "no freezer: %v", g.Paths())
	}
	start(t, g, nil, "sleep", "30")
	state := func() string {
		if m.Version() == 2 {
			return "frozen " + strconv.FormatInt(counter(g.freezer, "cgroup.events", "frozen"), 10)
		}
		return file(t, g, "freezer.state")
	}
	frozen, thawed := "FROZEN", "THAWED"
	if m.Version() == 2 {
		frozen, thawed = "frozen 1", "frozen 0"
	}
	if !g.freeze() {
		t.Fatal("freeze() = false")
	}
	if s := state(); s != frozen {
		t.Errorf("after freeze: %s, want %s", s, frozen)
	}
	g.thaw()
	if s := state(); s != thawed {
		t.Errorf("after thaw: %s, want %s", s, thawed)
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	m := manager(t)
	g, err := m.New(groupName(t), Limits{Memory: 64 << 20, Pids: 10, CPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Remove() })
	c := start(t, g, nil, "sleep", "30")
	if err := g.Remove(); err != nil {
		t.Fatalf("Remove() error = %v", err)
	}
	for _, dir := range g.Paths() {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Remove: %v, want it gone", dir, err)
		}
	}
	if err := c.wait(t, 10*time.Second); !killedBySIGKILL(err) {
		t.Errorf("sleep: %v, want killed by SIGKILL", err)
	}
	if err := g.Remove(); err != nil {
		t.Errorf("Remove() again: %v", err)
	}
}

// TestConcurrent creates, fills and removes groups from several goroutines, and runs
// Detect (which creates the cmdgate directories) meanwhile.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	m := manager(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if d := Detect(); len(d.Unavailable()) > 0 {
				t.Errorf("Detect() meanwhile: %v", d.Unavailable())
			}
		})
		wg.Go(func() {
			g, err := m.New(fmt.Sprintf("%s-%d", groupName(t), i), Limits{Memory: 32 << 20, Pids: 5, CPU: 0.5})
			if err != nil {
				t.Error(err)
				return
			}
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			if err := g.Add(cmd.Process.Pid); err != nil {
				cmd.Process.Kill()
				t.Error(err)
			}
			if err := g.Remove(); err != nil {
				t.Error(err)
			}
			if err := cmd.Wait(); !killedBySIGKILL(err) {
				t.Errorf("sleep: %v, want killed by SIGKILL", err)
			}
			for _, dir := range g.Paths() {
				if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s after Remove: %v, want it gone", dir, err)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkGroup measures what each command pays on top of its sandbox: creating its
// group with every limit, and removing it once empty.
func BenchmarkGroup(b *testing.B) {
	m := manager(b)
	for i := 0; b.Loop(); i++ {
		g, err := m.New(fmt.Sprintf("bench-%d-%d", os.Getpid(), i), Limits{Memory: 64 << 20, Pids: 10, CPU: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Remove(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRemoveStale(t *testing.T) {
	t.Parallel()
	m := manager(t)
	groups := map[string]*Group{}
	for _, suffix := range []string{"-empty", "-busy", "-kept"} {
		g, err := m.New(groupName(t)+suffix, Limits{Pids: 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Remove() })
		groups[suffix] = g
	}
	start(t, groups["-busy"], nil, "sleep", "30")
	stale := func(name string) bool { return name == groupName(t)+"-empty" || name == groupName(t)+"-busy" }
	if err := m.RemoveStale(stale); err != nil {
		t.Fatalf("RemoveStale() error = %v", err)
	}
	for suffix, g := range groups {
		for _, dir := range g.Paths() {
			_, err := os.Stat(dir)
			if gone := errors.Is(err, fs.ErrNotExist); gone != (suffix == "-empty") {
				t.Errorf("%s after RemoveStale: %v; want only the stale empty group gone", dir, err)
			}
		}
	}
}

// killAll kills g and checks that it is empty and that c, its shell, died by SIGKILL.
func killAll(t *testing.T, g *Group, c *child) {
	t.Helper()
	if err := g.Kill(); err != nil {
		t.Fatalf("Kill() error = %v", err)
	}
	for dir, pids := range procs(t, g) {
		if len(pids) != 0 {
			t.Errorf("%s/cgroup.procs after Kill = %v, want none", dir, pids)
		}
	}
	if err := c.wait(t, 10*time.Second); !killedBySIGKILL(err) {
		t.Errorf("the shell: %v, want killed by SIGKILL", err)
	}
}
