// Package seccomp builds and installs the seccomp-BPF filter that the Linux sandbox's init
// applies to itself right before it executes the user's command, so that the command and
// everything it starts cannot reach the kernel interfaces a sandbox must not expose.
//
// # What the filter refuses, and why
//
// The filter is assembled here in pure Go (no cgo, no libseccomp) as a binary search
// over the system call numbers it names, and refuses with EPERM:
//
//   - the mount family (mount, umount2, pivot_root, move_mount, open_tree,
//     open_tree_attr, fsopen, fsconfig, fsmount, fspick, mount_setattr): the sandbox's
//     root is built before the filter goes on and must stay as built;
//   - ptrace, process_vm_readv, process_vm_writev: reading or steering other processes;
//   - bpf, perf_event_open, userfaultfd, io_uring_setup, io_uring_enter,
//     io_uring_register: large kernel attack surfaces that builds and tests do not need
//     (io_uring also bypasses this filter: its operations are not system calls);
//   - keyctl, add_key, request_key: the kernel keyrings are not namespaced;
//   - kexec_load, kexec_file_load, init_module, finit_module, delete_module: replacing
//     the kernel or loading code into it;
//   - setns: joining another namespace; open_by_handle_at and name_to_handle_at: file
//     handles open files by inode, around the sandbox's mount tree;
//   - host administration: swapon, swapoff, reboot, acct, quotactl, quotactl_fd, syslog,
//     iopl and ioperm (amd64 only), settimeofday, clock_settime, clock_adjtime, adjtimex,
//     chroot, vhangup, lookup_dcookie;
//   - unshare and clone when their flags ask for a new user namespace (CLONE_NEWUSER):
//     a user namespace would give the command back the capabilities the init dropped,
//     inside it. Other unshare and clone calls pass: threads and fork keep working, and
//     without capabilities no other namespace can be created;
//   - personality, except the 0xffffffff query and the harmless personas Docker's
//     default profile allows (PER_LINUX, PER_LINUX32, UNAME26, PER_LINUX32|UNAME26),
//     each also with ADDR_NO_RANDOMIZE, which ThreadSanitizer (go test -race) needs on
//     hosts with high address-randomisation entropy: READ_IMPLIES_EXEC, MMAP_PAGE_ZERO
//     and foreign execution domains reopen old kernel code paths.
//
// clone3 fails with ENOSYS rather than EPERM: its flags live in memory a seccomp filter
// cannot read, so it cannot be checked for CLONE_NEWUSER, and ENOSYS is what makes glibc
// and Go fall back to clone, which can be checked.
//
// A system call made with another architecture's convention (i386 through int 0x80 on
// amd64, say) kills the process: the numbers above describe the native architecture
// only. On amd64, a number with the x32 bit (0x40000000) set fails with ENOSYS, as on
// kernels built without the x32 ABI, which most are: x32 numbers differ from x86_64's.
// Everything else is allowed. Since Linux 5.11 the kernel caches, per system call, that
// the filter allows it regardless of arguments, so the common calls cost nothing; it
// builds that cache as the filter goes on, by running the filter for every system call
// number, which the search keeps to a dozen instructions each rather than one per rule
// (measured on a 2-core VM: the sandbox's seccomp step 116–125 µs with the list the
// filter was, 100–106 µs with the search).
//
// # Order
//
// The filter is the last thing the init applies before execve: it refuses mount,
// pivot_root and setns, which building the sandbox needs. Install requires no_new_privs
// on the calling thread (prctl PR_SET_NO_NEW_PRIVS) even where the caller could do
// without (CAP_SYS_ADMIN): with it, no set-user-ID program started under the filter
// regains privileges. Install synchronises the filter onto every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC), and the kernel carries no_new_privs along with it.
//
// Linux on amd64 and arm64 only; elsewhere every function refuses with an error wrapping
// errors.ErrUnsupported.
package seccomp
