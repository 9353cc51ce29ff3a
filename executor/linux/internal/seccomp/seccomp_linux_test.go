package seccomp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// The test binary doubles as the process under the filter: TestMain runs a child mode
// when childEnv names one.
const childEnv = "CMDGATE_SECCOMP_CHILD"

const (
	modeFiltered = "filtered" // install the filter, then run the probes and the checks
	modeControl  = "control"  // run the probes without the filter
	modeInherit  = "inherit"  // started by a filtered child: run the probes under what it inherited
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// Arguments that make the kernel refuse a call harmlessly, even for root.
const (
	fdNone   = ^uintptr(0) // -1: EBADF, or EINVAL where a negative fd is checked first
	badAddr  = 1           // below mmap_min_addr, never mapped: EFAULT
	badFlags = 0xffffffff  // unknown flag bits: EINVAL
	noPid    = 0x3fffffff  // above PID_MAX_LIMIT: ESRCH
)

// Personality flags (linux/personality.h) that x/sys/unix does not define.
const (
	addrNoRandomize = 0x0040000
	mmapPageZero    = 0x0100000
	readImpliesExec = 0x0400000
)

// denyArgs holds, for every system call in Denied, arguments with which the kernel
// alone refuses the call with something other than EPERM (or, for vhangup without a
// controlling terminal, does nothing): the control run checks that, so that the EPERM
// seen under the filter comes from the filter. None of them does anything when run
// without the filter as root.
var denyArgs = map[string][6]uintptr{
	"clone3":            {0, 0},                           // size below CLONE_ARGS_SIZE_VER0: EINVAL
	"mount":             {0, 0, 0, 0, 0},                  // NULL target: EFAULT
	"umount2":           {0, 0x80000000},                  // unknown flag: EINVAL
	"pivot_root":        {0, 0},                           // NULL paths: EFAULT
	"move_mount":        {fdNone, 0, fdNone, 0, badFlags}, // EINVAL
	"open_tree":         {fdNone, 0, badFlags},            // EINVAL
	"open_tree_attr":    {fdNone, 0, badFlags, 0, 0},      // EINVAL (ENOSYS before Linux 6.15)
	"fsopen":            {0, badFlags},                    // EINVAL
	"fsconfig":          {fdNone, 0xffff, 0, 0, 0},        // negative fd: EINVAL
	"fsmount":           {fdNone, badFlags, 0},            // EINVAL
	"fspick":            {fdNone, 0, badFlags},            // EINVAL
	"mount_setattr":     {fdNone, 0, badFlags, 0, 0},      // EINVAL
	"ptrace":            {unix.PTRACE_PEEKDATA, noPid},    // ESRCH
	"process_vm_readv":  {noPid, 0, 0, 0, 0, 1},           // flags must be 0: EINVAL
	"process_vm_writev": {noPid, 0, 0, 0, 0, 1},           // EINVAL
	"bpf":               {0xffff, 0, 0},                   // unknown command: EINVAL
	"perf_event_open":   {0, 0, fdNone, fdNone, 0},        // NULL attr: EFAULT
	"userfaultfd":       {badFlags},                       // EINVAL
	"io_uring_setup":    {0, 0},                           // NULL params: EFAULT
	"io_uring_enter":    {fdNone, 0, 0, 0, 0, 0},          // EBADF
	"io_uring_register": {fdNone, 0xffff, 0, 0},           // EINVAL
	"keyctl":            {0xffff},                         // unknown operation: EOPNOTSUPP
	"add_key":           {0, 0, 0, 0, 0},                  // NULL type: EFAULT
	"request_key":       {0, 0, 0, 0},                     // NULL type: EFAULT
	"kexec_load":        {0, 1000, 0, 0x8000},             // too many segments, unknown flag: EINVAL
	"kexec_file_load":   {fdNone, fdNone, 0, 0, badFlags}, // EINVAL
	"init_module":       {0, 0, 0},                        // empty image: ENOEXEC
	"finit_module":      {fdNone, 0, badFlags},            // EINVAL
	"delete_module":     {0, 0},                           // NULL name: EFAULT
	"setns":             {fdNone, 0},                      // EBADF
	"open_by_handle_at": {fdNone, 0, 0},                   // EBADF or EFAULT
	"name_to_handle_at": {fdNone, 0, 0, 0, badFlags},      // EINVAL
	"swapon":            {0, 0x80000000},                  // unknown flag: EINVAL
	"swapoff":           {0},                              // NULL path: EFAULT
	"reboot":            {0, 0, 0, 0},                     // wrong magic numbers: EINVAL
	"acct":              {badAddr},                        // EFAULT (NULL would turn accounting off)
	"quotactl":          {badFlags, 0, 0, 0},              // quota type 0xff: EINVAL
	"quotactl_fd":       {fdNone, badFlags, 0, 0},         // EINVAL
	"syslog":            {0xffff, 0, 0},                   // unknown action: EINVAL
	"iopl":              {4},                              // level above 3: EINVAL
	"ioperm":            {0x10000, 1, 0},                  // past the last port: EINVAL
	"vhangup":           {},                               // no controlling terminal (Setsid): does nothing
	"chroot":            {badAddr},                        // EFAULT
	"lookup_dcookie":    {0, 0, 0},                        // ENOSYS since Linux 6.9
	"settimeofday":      {0, badAddr},                     // EFAULT
	"clock_settime":     {0x7fffffff, 0},                  // unknown clock: EINVAL
	"clock_adjtime":     {0x7fffffff, 0},                  // unknown clock: EINVAL
	"adjtimex":          {badAddr},                        // EFAULT
}

// probe is one real system call. Under the filter it must fail with want (0: succeed);
// without it, it must not when denied is set (the filter is what refuses it), and must
// give want too when it is not (the filter lets it through).
type probe struct {
	name   string
	sys    string  // key in sysnum, when nr is zero
	nr     uintptr // explicit number
	args   [6]uintptr
	want   syscall.Errno
	denied bool
	// moot says why the kernel alone may answer want as well, which makes the control
	// unable to tell the filter apart; empty when it always can.
	moot string
}

func (p probe) number() uintptr {
	if p.nr != 0 {
		return p.nr
	}
	return uintptr(sysnum[p.sys])
}

func (p probe) run() syscall.Errno {
	_, _, errno := unix.Syscall6(p.number(), p.args[0], p.args[1], p.args[2], p.args[3], p.args[4], p.args[5])
	return errno
}

// probes lists the probes in the order the children run them.
func probes() []probe {
	var ps []probe
	for _, name := range Denied() {
		want := unix.EPERM
		if name == "clone3" {
			want = unix.ENOSYS
		}
		ps = append(ps, probe{name: name, sys: name, args: denyArgs[name], want: want, denied: true})
	}
	ps = append(ps,
		probe{name: "getpid", nr: unix.SYS_GETPID},
		probe{name: "unshare(0)", sys: "unshare"},
		// The filter passes clone without CLONE_NEWUSER; the kernel refuses these flags.
		probe{name: "clone(CLONE_NEWNS|CLONE_FS)", sys: "clone", args: [6]uintptr{unix.CLONE_NEWNS | unix.CLONE_FS}, want: unix.EINVAL},
		probe{name: "personality(query)", sys: "personality", args: [6]uintptr{0xffffffff}},
		probe{name: "personality(ADDR_NO_RANDOMIZE)", sys: "personality", args: [6]uintptr{addrNoRandomize}},
		probe{name: "personality(READ_IMPLIES_EXEC)", sys: "personality", args: [6]uintptr{readImpliesExec}, want: unix.EPERM, denied: true},
		probe{name: "personality(MMAP_PAGE_ZERO)", sys: "personality", args: [6]uintptr{mmapPageZero}, want: unix.EPERM, denied: true},
		probe{name: "personality(PER_LINUX)", sys: "personality", args: [6]uintptr{0}}, // restores the control's persona
		// Without the filter the kernel refuses: CLONE_NEWUSER with CLONE_FS, and
		// CLONE_NEWUSER in a multi-threaded process, are EINVAL.
		probe{name: "clone(CLONE_NEWUSER|CLONE_FS)", sys: "clone", args: [6]uintptr{unix.CLONE_NEWUSER | unix.CLONE_FS}, want: unix.EPERM, denied: true},
		probe{name: "clone(high bits|CLONE_NEWUSER|CLONE_FS)", sys: "clone", args: [6]uintptr{1<<40 | unix.CLONE_NEWUSER | unix.CLONE_FS}, want: unix.EPERM, denied: true},
		probe{name: "unshare(CLONE_NEWUSER)", sys: "unshare", args: [6]uintptr{unix.CLONE_NEWUSER}, want: unix.EPERM, denied: true},
	)
	if x32Bit != 0 {
		ps = append(ps, probe{name: "x32 getpid", nr: uintptr(x32Bit) | unix.SYS_GETPID, want: unix.ENOSYS, denied: true,
			moot: "the kernel is built without the x32 ABI, so x32 calls fail with ENOSYS anyway"})
	}
	return ps
}

// report is what a child prints: the errno of every probe (0 for success), and for every
// check an empty string when it passed, else what went wrong ("skip: " and the reason
// when the machine lacks what it needs).
type report struct {
	Probes    map[string]int    `json:"probes"`
	Checks    map[string]string `json:"checks"`
	Inherited *report           `json:"inherited,omitempty"`
}

func child(mode string) int {
	// no_new_privs and the install must happen on one thread.
	runtime.LockOSThread()
	rep := &report{Probes: map[string]int{}, Checks: map[string]string{}}
	var err error
	switch mode {
	case modeFiltered:
		err = filtered(rep)
	case modeControl:
		runProbes(rep)
		rep.Checks["unshare -U true"] = checkCommand(true, "unshare", "-U", "true")
	case modeInherit:
		runProbes(rep)
		rep.Checks["every thread filtered"] = checkThreads(0)
	default:
		err = fmt.Errorf("unknown child mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

func runProbes(rep *report) {
	for _, p := range probes() {
		rep.Probes[p.name] = int(p.run())
	}
}

// filtered installs the filter with threads already running (TSYNC must reach them),
// then probes and checks what still works.
func filtered(rep *report) error {
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("read no_new_privs: %w", err)
	}
	prog, err := Filter()
	if err != nil {
		return err
	}
	const before = "Install without no_new_privs"
	switch err := Install(prog); {
	case nnp == 1:
		rep.Checks[before] = "skip: the test runs with no_new_privs already set"
	case !errors.Is(err, ErrNoNewPrivs):
		rep.Checks[before] = fmt.Sprintf("Install = %v, want ErrNoNewPrivs", err)
	default:
		rep.Checks[before] = ""
	}

	stop := make(chan struct{})
	defer close(stop)
	parkThreads(8, stop) // threads that exist before the install
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := Install(prog); err != nil {
		return err
	}
	parkThreads(8, stop) // threads created after it

	runProbes(rep)
	rep.Checks["every thread filtered"] = checkThreads(17)
	rep.Checks["goroutines"] = checkGoroutines()
	rep.Checks["write and read a file"] = checkFile()
	rep.Checks["exec /bin/true"] = checkCommand(true, "/bin/true")
	rep.Checks["exec sh -c 'echo ok'"] = checkEcho()
	rep.Checks["unshare -U true"] = checkCommand(false, "unshare", "-U", "true")
	rep.Inherited, rep.Checks["exec a grandchild"] = grandchild()
	return nil
}

// parkThreads starts n goroutines that each hold an OS thread until stop closes, and
// returns once they all run.
func parkThreads(n int, stop <-chan struct{}) {
	var started sync.WaitGroup
	for range n {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			started.Done()
			<-stop
		}()
	}
	started.Wait()
}

// checkThreads verifies that every thread of the process runs under a seccomp filter
// with no_new_privs set, and that there are at least atLeast of them.
func checkThreads(atLeast int) string {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		return err.Error()
	}
	if len(tasks) < atLeast {
		return fmt.Sprintf("%d threads, want at least %d", len(tasks), atLeast)
	}
	for _, task := range tasks {
		status, err := os.ReadFile(task)
		if err != nil {
			return err.Error()
		}
		for _, want := range []string{"\nSeccomp:\t2\n", "\nNoNewPrivs:\t1\n"} {
			if !bytes.Contains(status, []byte(want)) {
				return fmt.Sprintf("%s lacks %q", task, strings.TrimSpace(want))
			}
		}
	}
	return ""
}

// checkGoroutines runs a goroutine-heavy workload making ordinary system calls.
func checkGoroutines() string {
	errs := make(chan error, 200)
	for range cap(errs) {
		go func() {
			_, err := os.ReadFile("/proc/self/stat")
			if err == nil {
				time.Sleep(time.Millisecond)
				_, err = unix.Getcwd(make([]byte, 4096))
			}
			errs <- err
		}()
	}
	runtime.GC()
	for range cap(errs) {
		if err := <-errs; err != nil {
			return err.Error()
		}
	}
	return ""
}

func checkFile() string {
	f, err := os.CreateTemp("", "seccomp-*")
	if err != nil {
		return err.Error()
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteString("hello"); err != nil {
		return err.Error()
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		return err.Error()
	}
	if string(got) != "hello" {
		return fmt.Sprintf("read %q, want %q", got, "hello")
	}
	return ""
}

// checkCommand runs argv and reports whether it succeeded or failed as wanted; a failure
// wanted must be the kernel's EPERM ("Operation not permitted").
func checkCommand(succeed bool, argv ...string) string {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return "skip: " + err.Error()
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	switch {
	case succeed && err != nil:
		return fmt.Sprintf("%v: %v: %s", argv, err, out)
	case !succeed && err == nil:
		return fmt.Sprintf("%v succeeded, want it refused", argv)
	case !succeed && !bytes.Contains(out, []byte("Operation not permitted")):
		return fmt.Sprintf("%v: %v: %s, want Operation not permitted", argv, err, out)
	}
	return ""
}

func checkEcho() string {
	out, err := exec.Command("/bin/sh", "-c", "echo ok").Output()
	if err != nil {
		return err.Error()
	}
	if string(out) != "ok\n" {
		return fmt.Sprintf("output %q, want %q", out, "ok\n")
	}
	return ""
}

// grandchild runs the test binary again, under the filter it inherits across execve.
func grandchild() (*report, string) {
	self, err := os.Executable()
	if err != nil {
		return nil, err.Error()
	}
	rep, err := runChild(context.Background(), self, modeInherit)
	if err != nil {
		return nil, err.Error()
	}
	return rep, ""
}

// runChild runs the test binary at path in mode, in a session of its own (no
// controlling terminal for vhangup to hang up), and decodes its report.
func runChild(ctx context.Context, path, mode string) (*report, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("child %s: %w: %s", mode, err, stderr.Bytes())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("child %s: decode report: %w: %s", mode, err, stdout.Bytes())
	}
	return &rep, nil
}

// filteredReport runs the filtered child once for the tests that read its report.
var filteredReport = sync.OnceValues(func() (*report, error) {
	return runChild(context.Background(), os.Args[0], modeFiltered)
})

func needFilter(t *testing.T) {
	t.Helper()
	if _, err := Filter(); errors.Is(err, errors.ErrUnsupported) {
		testenv.Skip(t, "no seccomp filter for %s: %v", runtime.GOARCH, err)
	}
}

func TestProbes(t *testing.T) {
	t.Parallel()
	needFilter(t)
	filt, err := filteredReport()
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := runChild(t.Context(), os.Args[0], modeControl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probes() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			got, ok := filt.Probes[p.name]
			if !ok {
				t.Fatalf("the filtered child did not run %s", p.name)
			}
			if syscall.Errno(got) != p.want {
				t.Errorf("%s under the filter = %v, want %v", p.name, errnoString(got), errnoString(int(p.want)))
			}
			kernel := syscall.Errno(ctrl.Probes[p.name])
			switch {
			case !p.denied && kernel != p.want:
				t.Errorf("%s without the filter = %v, want %v", p.name, errnoString(int(kernel)), errnoString(int(p.want)))
			case p.denied && kernel == p.want && p.moot != "":
				t.Skipf("%s without the filter = %v too: %s", p.name, errnoString(int(kernel)), p.moot)
			case p.denied && kernel == p.want:
				testenv.Skip(t, "%s without the filter = %v too (privileges or kernel configuration): the probe cannot tell the filter apart",
					p.name, errnoString(int(kernel)))
			}
		})
	}
	t.Run("unshare -U true without the filter", func(t *testing.T) {
		if msg := ctrl.Checks["unshare -U true"]; msg != "" {
			testenv.Skip(t, "unshare -U true cannot tell the filter apart: %s", strings.TrimPrefix(msg, "skip: "))
		}
	})
}

func errnoString(errno int) string {
	if errno == 0 {
		return "success"
	}
	return fmt.Sprintf("%s (%s)", unix.ErrnoName(syscall.Errno(errno)), syscall.Errno(errno))
}

func TestAfterInstall(t *testing.T) {
	t.Parallel()
	needFilter(t)
	rep, err := filteredReport()
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, []string{
		"Install without no_new_privs",
		"every thread filtered",
		"goroutines",
		"write and read a file",
		"exec /bin/true",
		"exec sh -c 'echo ok'",
		"unshare -U true",
		"exec a grandchild",
	})
}

// TestInherited checks that a program executed after Install runs under the filter: the
// grandchild's probes give what they give in the child.
func TestInherited(t *testing.T) {
	t.Parallel()
	needFilter(t)
	rep, err := filteredReport()
	if err != nil {
		t.Fatal(err)
	}
	in := rep.Inherited
	if in == nil {
		t.Fatalf("no grandchild report: %s", rep.Checks["exec a grandchild"])
	}
	checkReport(t, in, []string{"every thread filtered"})
	for _, p := range probes() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			if got, ok := in.Probes[p.name]; !ok || syscall.Errno(got) != p.want {
				t.Errorf("%s in the grandchild = %v (ran: %t), want %v", p.name, errnoString(got), ok, errnoString(int(p.want)))
			}
		})
	}
}

func checkReport(t *testing.T, rep *report, checks []string) {
	t.Helper()
	for _, name := range checks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg, ok := rep.Checks[name]
			switch {
			case !ok:
				t.Fatalf("the child did not run %q", name)
			case strings.HasPrefix(msg, "skip: "):
				testenv.Skip(t, "%s", strings.TrimPrefix(msg, "skip: "))
			case msg != "":
				t.Error(msg)
			}
		})
	}
}

func TestInstallRejects(t *testing.T) {
	t.Parallel()
	// Both fail before any system call: this process stays unfiltered.
	for _, prog := range [][]unix.SockFilter{nil, make([]unix.SockFilter, maxInsns+1)} {
		if err := Install(prog); err == nil {
			t.Errorf("Install(%d instructions) = nil, want an error", len(prog))
		}
	}
}

// required lists the system calls the sandbox must refuse (issue 6 and the package
// documentation); absent, those the architecture does not have.
var required = []string{
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr", "ptrace", "process_vm_readv", "process_vm_writev",
	"bpf", "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "perf_event_open", "userfaultfd",
	"setns", "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at",
	"name_to_handle_at", "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog",
	"iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"chroot", "vhangup", "lookup_dcookie", "clone3",
}

func absent(name string) bool {
	return runtime.GOARCH != "amd64" && (name == "iopl" || name == "ioperm")
}

func TestDenied(t *testing.T) {
	t.Parallel()
	needFilter(t)
	got := Denied()
	for _, name := range required {
		if in := slices.Contains(got, name); in == absent(name) {
			t.Errorf("Denied() contains %s: %t, want %t", name, in, !in)
		}
	}
	for _, name := range denied {
		if _, ok := sysnum[name]; ok == absent(name) {
			t.Errorf("sysnum[%q] present: %t, want %t", name, ok, !ok)
		}
	}
	for _, name := range got {
		if _, ok := denyArgs[name]; !ok {
			t.Errorf("no probe for denied %s: add it to denyArgs", name)
		}
	}
	byNr := map[uint32]string{}
	for name, nr := range sysnum {
		if other, dup := byNr[nr]; dup {
			t.Errorf("sysnum: %s and %s are both %d", name, other, nr)
		}
		byNr[nr] = name
	}
}

func TestFilterSize(t *testing.T) {
	t.Parallel()
	needFilter(t)
	prog, err := Filter()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) == 0 || len(prog) >= maxInsns {
		t.Errorf("len(Filter()) = %d, want 1 to %d", len(prog), maxInsns-1)
	}
	t.Logf("%s: %d instructions, %d system calls denied outright", runtime.GOARCH, len(prog), len(Denied()))
}

// seccompData is struct seccomp_data, as the filter sees it.
type seccompData struct {
	nr   uint32
	arch uint32
	arg0 uint64
}

// emulate runs prog on d the way the kernel does, for the instructions Filter emits, and
// counts the instructions it ran.
func emulate(prog []unix.SockFilter, d seccompData) (ret uint32, steps int, err error) {
	var buf [64]byte
	binary.NativeEndian.PutUint32(buf[0:], d.nr)
	binary.NativeEndian.PutUint32(buf[4:], d.arch)
	binary.NativeEndian.PutUint64(buf[16:], d.arg0)
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		steps++
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || in.K+4 > uint32(len(buf)) {
				return 0, steps, fmt.Errorf("pc %d: load at %d", pc, in.K)
			}
			a = binary.NativeEndian.Uint32(buf[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += int(jump(a == in.K, in))
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += int(jump(a >= in.K, in))
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += int(jump(a&in.K != 0, in))
		case unix.BPF_RET | unix.BPF_K:
			return in.K, steps, nil
		default:
			return 0, steps, fmt.Errorf("pc %d: unexpected instruction %#x", pc, in.Code)
		}
	}
	return 0, steps, errors.New("ran off the end of the program")
}

func jump(cond bool, in unix.SockFilter) uint8 {
	if cond {
		return in.Jt
	}
	return in.Jf
}

// TestFilterEmulated runs the program on every system call number of the native
// architecture and on the argument-dependent cases, in an emulator: the child tests
// show the kernel agrees on the calls they make.
func TestFilterEmulated(t *testing.T) {
	t.Parallel()
	needFilter(t)
	prog, err := Filter()
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		kill   = unix.SECCOMP_RET_KILL_PROCESS
	)
	// check returns how many instructions the program ran.
	check := func(name string, d seccompData, want uint32) int {
		t.Helper()
		got, steps, err := emulate(prog, d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s (nr %d, arg0 %#x) = %#x, want %#x", name, d.nr, d.arg0, got, want)
		}
		return steps
	}
	refused := map[uint32]uint32{}
	for _, name := range Denied() {
		refused[sysnum[name]] = eperm
	}
	refused[sysnum["clone3"]] = enosys
	// A call no rule names, the common case, is allowed after a binary search: the
	// architecture and x32 checks, one comparison per level, one per rule of a leaf.
	ruled := map[uint32]bool{}
	for _, r := range rules() {
		if nr, ok := sysnum[r.name]; ok {
			ruled[nr] = true
		}
	}
	most := 5 + bits.Len(uint(len(ruled))) + leafRules + 1
	for nr := range uint32(1024) {
		want, ok := refused[nr]
		if !ok {
			want = allow
		}
		steps := check(fmt.Sprintf("syscall %d", nr), seccompData{nr: nr, arch: auditArch}, want)
		if !ruled[nr] && steps > most {
			t.Errorf("syscall %d: allowed after %d instructions, want at most %d (a search of %d rules)", nr, steps, most, len(ruled))
		}
	}
	for _, tc := range []struct {
		sys  string
		arg0 uint64
		want uint32
	}{
		{"clone", uint64(unix.SIGCHLD), allow},
		{"clone", unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD, allow},
		{"clone", unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET, allow},
		{"clone", unix.CLONE_NEWUSER, eperm},
		{"clone", unix.CLONE_NEWUSER | unix.CLONE_NEWNS | uint64(unix.SIGCHLD), eperm},
		{"clone", 1<<40 | unix.CLONE_NEWUSER, eperm},
		{"clone", 1 << 60, allow},
		{"unshare", 0, allow},
		{"unshare", unix.CLONE_NEWNS, allow},
		{"unshare", unix.CLONE_NEWUSER, eperm},
		{"unshare", unix.CLONE_NEWUSER | unix.CLONE_NEWNS, eperm},
		{"personality", 0, allow},
		{"personality", 0x8, allow},
		{"personality", 0x20000, allow},
		{"personality", 0x20008, allow},
		{"personality", 0xffffffff, allow},
		{"personality", addrNoRandomize, allow},
		{"personality", addrNoRandomize | 0x20008, allow},
		{"personality", readImpliesExec, eperm},
		{"personality", mmapPageZero, eperm},
		{"personality", addrNoRandomize | readImpliesExec, eperm},
		{"personality", 0x0001, eperm}, // PER_SVR4
		{"personality", 0xfffffffe, eperm},
	} {
		check(fmt.Sprintf("%s(%#x)", tc.sys, tc.arg0), seccompData{nr: sysnum[tc.sys], arch: auditArch, arg0: tc.arg0}, tc.want)
	}
	for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, 0} {
		if arch == auditArch {
			continue
		}
		check(fmt.Sprintf("getpid on arch %#x", arch), seccompData{nr: unix.SYS_GETPID, arch: arch}, kill)
	}
	if x32Bit != 0 {
		for _, nr := range []uint32{unix.SYS_GETPID, sysnum["mount"], sysnum["clone"], 0} {
			check(fmt.Sprintf("x32 syscall %d", nr), seccompData{nr: x32Bit | nr, arch: auditArch}, enosys)
		}
	}
}
