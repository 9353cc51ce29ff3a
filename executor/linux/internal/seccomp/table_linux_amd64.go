package seccomp

import "golang.org/x/sys/unix"

// auditArch is the only seccomp_data.arch the filter lets through: a system call made
// with another convention (i386 through int 0x80) has numbers this table does not
// describe.
const auditArch uint32 = unix.AUDIT_ARCH_X86_64

// x32Bit marks x32 system calls, which carry the x86_64 audit arch but numbers of their
// own; the filter refuses them with ENOSYS.
const x32Bit uint32 = 0x40000000

// sysnum holds the numbers of the system calls the filter names.
var sysnum = map[string]uint32{
	"clone":             unix.SYS_CLONE,
	"clone3":            unix.SYS_CLONE3,
	"unshare":           unix.SYS_UNSHARE,
	"personality":       unix.SYS_PERSONALITY,
	"mount":             unix.SYS_MOUNT,
	"umount2":           unix.SYS_UMOUNT2,
	"pivot_root":        unix.SYS_PIVOT_ROOT,
	"move_mount":        unix.SYS_MOVE_MOUNT,
	"open_tree":         unix.SYS_OPEN_TREE,
	"open_tree_attr":    unix.SYS_OPEN_TREE_ATTR,
	"fsopen":            unix.SYS_FSOPEN,
	"fsconfig":          unix.SYS_FSCONFIG,
	"fsmount":           unix.SYS_FSMOUNT,
	"fspick":            unix.SYS_FSPICK,
	"mount_setattr":     unix.SYS_MOUNT_SETATTR,
	"ptrace":            unix.SYS_PTRACE,
	"process_vm_readv":  unix.SYS_PROCESS_VM_READV,
	"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
	"bpf":               unix.SYS_BPF,
	"perf_event_open":   unix.SYS_PERF_EVENT_OPEN,
	"userfaultfd":       unix.SYS_USERFAULTFD,
	"io_uring_setup":    unix.SYS_IO_URING_SETUP,
	"io_uring_enter":    unix.SYS_IO_URING_ENTER,
	"io_uring_register": unix.SYS_IO_URING_REGISTER,
	"keyctl":            unix.SYS_KEYCTL,
	"add_key":           unix.SYS_ADD_KEY,
	"request_key":       unix.SYS_REQUEST_KEY,
	"kexec_load":        unix.SYS_KEXEC_LOAD,
	"kexec_file_load":   unix.SYS_KEXEC_FILE_LOAD,
	"init_module":       unix.SYS_INIT_MODULE,
	"finit_module":      unix.SYS_FINIT_MODULE,
	"delete_module":     unix.SYS_DELETE_MODULE,
	"setns":             unix.SYS_SETNS,
	"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
	"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
	"swapon":            unix.SYS_SWAPON,
	"swapoff":           unix.SYS_SWAPOFF,
	"reboot":            unix.SYS_REBOOT,
	"acct":              unix.SYS_ACCT,
	"quotactl":          unix.SYS_QUOTACTL,
	"quotactl_fd":       unix.SYS_QUOTACTL_FD,
	"syslog":            unix.SYS_SYSLOG,
	"iopl":              unix.SYS_IOPL,
	"ioperm":            unix.SYS_IOPERM,
	"vhangup":           unix.SYS_VHANGUP,
	"chroot":            unix.SYS_CHROOT,
	"lookup_dcookie":    unix.SYS_LOOKUP_DCOOKIE,
	"settimeofday":      unix.SYS_SETTIMEOFDAY,
	"clock_settime":     unix.SYS_CLOCK_SETTIME,
	"clock_adjtime":     unix.SYS_CLOCK_ADJTIME,
	"adjtimex":          unix.SYS_ADJTIMEX,
}
