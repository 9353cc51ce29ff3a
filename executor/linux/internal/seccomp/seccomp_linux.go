package seccomp

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denied lists, by family, the system calls refused with EPERM whatever their arguments.
// The architecture's table (sysnum) gives their numbers; a name it lacks does not exist
// on that architecture (iopl and ioperm on arm64) and is left out.
var denied = []string{
	// The sandbox's mount tree is final once the filter is on.
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	// Other processes' memory and execution.
	"ptrace", "process_vm_readv", "process_vm_writev",
	// Large kernel attack surfaces; io_uring's operations also bypass seccomp.
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Keyrings are not namespaced.
	"keyctl", "add_key", "request_key",
	// Replacing the kernel or loading code into it.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// Joining namespaces; opening files by handle, around the mount tree.
	"setns", "open_by_handle_at", "name_to_handle_at",
	// Host administration.
	"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog",
	"iopl", "ioperm", "vhangup", "chroot", "lookup_dcookie",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
}

// Offsets into struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer;
// __u64 args[6]; }. Both supported architectures are little-endian, so the low 32 bits
// of args[0] come first.
const (
	offNr      = 0
	offArch    = 4
	offArg0Low = 16
	maxInsns   = 4096 // BPF_MAXINSNS: the kernel refuses longer programs
	maxJump    = 255  // a conditional jump's offsets are 8-bit
)

// personas are the personality(2) arguments allowed: the 0xffffffff query, and
// PER_LINUX, PER_LINUX32, UNAME26 and PER_LINUX32|UNAME26 (Docker's default profile),
// each also with ADDR_NO_RANDOMIZE. ThreadSanitizer (go test -race, -fsanitize=thread)
// re-executes itself with ADDR_NO_RANDOMIZE on hosts whose address randomisation it
// cannot work with (vm.mmap_rnd_bits=32) and aborts when refused; turning ASLR off only
// weakens the sandboxed program itself, and no set-user-ID program inherits it. Other
// personas (READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, foreign execution domains) are refused.
// The kernel reads the argument as an unsigned int: its low 32 bits are all there is.
var personas = []uint32{
	0xffffffff, // query
	0x0000000,  // PER_LINUX
	0x0000008,  // PER_LINUX32
	0x0020000,  // UNAME26
	0x0020008,  // PER_LINUX32 | UNAME26
	0x0040000,  // ADDR_NO_RANDOMIZE
	0x0040008,  // ADDR_NO_RANDOMIZE | PER_LINUX32
	0x0060000,  // ADDR_NO_RANDOMIZE | UNAME26
	0x0060008,  // ADDR_NO_RANDOMIZE | PER_LINUX32 | UNAME26
}

var (
	retAllow  = ret(unix.SECCOMP_RET_ALLOW)
	retEPERM  = ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	retENOSYS = ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	retKill   = ret(unix.SECCOMP_RET_KILL_PROCESS)
)

func ret(k uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k}
}

func load(off uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
}

func jeq(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

func jge(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

func jset(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

// rule says what happens to one system call: then runs when the number matches and
// always ends in a return, so that the accumulator it may clobber (loading an argument)
// never reaches the next rule.
type rule struct {
	name string
	then []unix.SockFilter
}

// rules lists the filter's checks; Filter orders them by system call number.
func rules() []rule {
	// if args[0] & CLONE_NEWUSER { EPERM } else { ALLOW }
	noNewUser := []unix.SockFilter{load(offArg0Low), jset(unix.CLONE_NEWUSER, 0, 1), retEPERM, retAllow}
	// if args[0] in personas { ALLOW } else { EPERM }
	persona := []unix.SockFilter{load(offArg0Low)}
	for i, p := range personas {
		persona = append(persona, jeq(p, uint8(len(personas)-i), 0))
	}
	persona = append(persona, retEPERM, retAllow)

	rs := []rule{
		{"clone", noNewUser},
		{"clone3", []unix.SockFilter{retENOSYS}},
		{"unshare", noNewUser},
		{"personality", persona},
	}
	for _, name := range denied {
		rs = append(rs, rule{name, []unix.SockFilter{retEPERM}})
	}
	return rs
}

// Filter returns the sandbox's BPF program for the running architecture (amd64 and
// arm64; any other returns an error wrapping errors.ErrUnsupported). The program is
// built afresh on each call; the caller owns it.
func Filter() ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("seccomp filter for %s: %w", runtime.GOARCH, errors.ErrUnsupported)
	}
	prog := []unix.SockFilter{
		load(offArch),
		jeq(auditArch, 1, 0),
		retKill,
		load(offNr),
	}
	if x32Bit != 0 {
		prog = append(prog, jset(x32Bit, 0, 1), retENOSYS)
	}
	var rs []numbered
	for _, r := range rules() {
		nr, ok := sysnum[r.name]
		if !ok {
			continue // not on this architecture
		}
		if len(r.then) > maxJump {
			return nil, fmt.Errorf("seccomp rule %s: %d instructions is too long to jump over", r.name, len(r.then))
		}
		rs = append(rs, numbered{nr, r.then})
	}
	slices.SortFunc(rs, func(a, b numbered) int { return cmp.Compare(a.nr, b.nr) })
	tree, err := search(rs)
	if err != nil {
		return nil, err
	}
	prog = append(prog, tree...)
	if len(prog) > maxInsns {
		return nil, fmt.Errorf("seccomp filter: %d instructions exceed the kernel's %d", len(prog), maxInsns)
	}
	return prog, nil
}

// numbered is a rule with its system call number.
type numbered struct {
	nr   uint32
	then []unix.SockFilter
}

// leafRules is the most rules a leaf of the search checks one after the other.
const leafRules = 4

// search returns a binary search over rs (sorted by number, the number loaded): it runs
// the then of the rule whose number matches and allows the call when none does, after
// about log2(len(rs)) comparisons rather than len(rs). That matters twice: the kernel
// runs the filter on every call it cannot answer from its cache (clone and every
// thread, say), and it builds that cache, as it installs the filter, by running the
// filter on every system call number with its arguments unknown, under a lock, for
// every sandbox.
func search(rs []numbered) ([]unix.SockFilter, error) {
	if len(rs) <= leafRules {
		var out []unix.SockFilter
		for _, r := range rs {
			out = append(out, jeq(r.nr, 0, uint8(len(r.then))))
			out = append(out, r.then...)
		}
		return append(out, retAllow), nil
	}
	mid := len(rs) / 2
	below, err := search(rs[:mid])
	if err != nil {
		return nil, err
	}
	above, err := search(rs[mid:])
	if err != nil {
		return nil, err
	}
	if len(below) > maxJump {
		return nil, fmt.Errorf("seccomp filter: %d instructions below system call %d is too long to jump over", len(below), rs[mid].nr)
	}
	// if nr >= rs[mid].nr { above } else { below }
	out := append([]unix.SockFilter{jge(rs[mid].nr, uint8(len(below)), 0)}, below...)
	return append(out, above...), nil
}

// Install applies prog to every thread of the calling process with seccomp(2)
// (SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC); it cannot be removed afterwards,
// and the processes the caller starts inherit it.
//
// The calling thread must have set no_new_privs (prctl PR_SET_NO_NEW_PRIVS) beforehand,
// else Install returns ErrNoNewPrivs without installing anything: lock the goroutine to
// its thread (runtime.LockOSThread) across the prctl and Install. The kernel sets
// no_new_privs on the other threads as it synchronises the filter onto them. When a
// thread cannot be synchronised (it runs under a filter this one does not descend
// from), nothing is installed and the error names the thread.
func Install(prog []unix.SockFilter) error {
	if len(prog) == 0 || len(prog) > maxInsns {
		return fmt.Errorf("install seccomp filter: %d instructions, want 1 to %d", len(prog), maxInsns)
	}
	// The check and the install must see the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("install seccomp filter: read no_new_privs: %w", err)
	}
	if nnp != 1 {
		return fmt.Errorf("install seccomp filter: %w", ErrNoNewPrivs)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno != 0:
		return fmt.Errorf("install seccomp filter: %w", errno)
	case r != 0:
		// With TSYNC, a positive return is the id of a thread that could not be synchronised.
		return fmt.Errorf("install seccomp filter: thread %d runs under an unrelated seccomp filter and cannot be synchronised", r)
	}
	return nil
}

// Denied lists the system calls the filter refuses on the running architecture whatever
// their arguments, grouped by family: each fails with EPERM, except clone3, which fails
// with ENOSYS. clone and unshare (with CLONE_NEWUSER) and personality (other than the
// harmless personas) are refused depending on their arguments and are not listed; see
// the package documentation. On an unsupported architecture Denied returns nil.
func Denied() []string {
	if auditArch == 0 {
		return nil
	}
	names := []string{"clone3"}
	for _, name := range denied {
		if _, ok := sysnum[name]; ok {
			names = append(names, name)
		}
	}
	return names
}
