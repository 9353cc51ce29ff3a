// probe tries what a sandboxed command must not be able to do, for the escape tests
// (escape_linux_test.go compiles it with gcc inside the sandbox).
//
//	probe syscalls       one line per attempt: its name, then the errno name it failed
//	                     with, or OK when it succeeded
//	probe hog            allocates and touches memory a mebibyte at a time, up to 1 GiB
//	probe abstract NAME  connects to the abstract unix socket @NAME
//	probe int80          makes a system call with the i386 convention (amd64 only)
//
// Every attempt is harmless where it succeeds: the arguments ask for nothing (a query, the
// current time, an invalid descriptor), so a hole shows as OK, not as damage.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/quota.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void report(const char *name, long r) {
	if (r >= 0)
		printf("%s OK\n", name);
	else
		printf("%s %s\n", name, strerrorname_np(errno));
	fflush(stdout);
}

#define P(name, call)                            \
	do {                                         \
		errno = 0;                               \
		report(name, (long)(call));              \
	} while (0)

// forked ends at once the child that a successful clone made.
static long forked(long pid) {
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return pid;
}

static int syscalls(void) {
	char buf[64] = "cmdgate";
	struct iovec local = {buf, sizeof buf}, remote = {buf, sizeof buf};
	uint64_t clone_args[8] = {CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0}; // struct clone_args, v0
	uint64_t mount_attr[4] = {0};                                          // struct mount_attr
	union bpf_attr bpf = {.map_type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 4, .max_entries = 1};
	struct io_uring_params uring = {0};
	struct perf_event_attr perf = {.type = PERF_TYPE_SOFTWARE, .size = sizeof perf,
		.config = PERF_COUNT_SW_CPU_CLOCK, .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1};
	struct {
		struct file_handle fh;
		unsigned char data[MAX_HANDLE_SZ];
	} handle = {.fh.handle_bytes = MAX_HANDLE_SZ};
	int mount_id;
	struct timeval tv;
	struct timespec ts;
	struct timex tx = {0};
	char quota[64];

	// Controls: the filter is no blanket refusal.
	P("getpid", syscall(SYS_getpid));
	P("clone", forked(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)));
	P("personality_query", syscall(SYS_personality, 0xffffffffUL));

	// The mount tree: new mounts, read-write again, unhiding a secret, another root.
	P("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0UL, NULL));
	P("mount_remount_rw", syscall(SYS_mount, NULL, "/usr", NULL, (unsigned long)(MS_REMOUNT | MS_BIND), NULL));
	P("umount2", syscall(SYS_umount2, "/etc/shadow", MNT_DETACH));
	P("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
	P("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
	P("fspick", syscall(SYS_fspick, AT_FDCWD, "/etc", 0));
	P("fsmount", syscall(SYS_fsmount, -1, 0, 0));
	P("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/etc", 1 /* OPEN_TREE_CLONE */));
	P("move_mount", syscall(SYS_move_mount, -1, "", AT_FDCWD, "/tmp", 0));
	P("mount_setattr", syscall(SYS_mount_setattr, AT_FDCWD, "/usr", 0, mount_attr, sizeof mount_attr));
	P("chroot", syscall(SYS_chroot, "/tmp"));

	// Namespaces: a new user namespace would give capabilities back.
	P("unshare_user", syscall(SYS_unshare, CLONE_NEWUSER));
	P("unshare_mount", syscall(SYS_unshare, CLONE_NEWNS));
	P("unshare_net", syscall(SYS_unshare, CLONE_NEWNET));
	P("clone_user", forked(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
	P("clone3_user", forked(syscall(SYS_clone3, clone_args, sizeof clone_args)));
	P("setns", syscall(SYS_setns, open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC), 0));

	// Other processes, and this one's own memory by the back door.
	P("ptrace_traceme", syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0));
	P("ptrace_attach", syscall(SYS_ptrace, PTRACE_ATTACH, getppid(), 0, 0));
	P("process_vm_readv", syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL));
	P("process_vm_writev", syscall(SYS_process_vm_writev, getpid(), &local, 1UL, &remote, 1UL, 0UL));

	// Kernel attack surface.
	P("bpf", syscall(SYS_bpf, BPF_MAP_CREATE, &bpf, sizeof bpf));
	P("perf_event_open", syscall(SYS_perf_event_open, &perf, 0, -1, -1, 0UL));
	P("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
	P("io_uring_setup", syscall(SYS_io_uring_setup, 1, &uring));
	P("io_uring_enter", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
	P("io_uring_register", syscall(SYS_io_uring_register, -1, 0, NULL, 0));
	P("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
	P("add_key", syscall(SYS_add_key, "user", "cmdgate-escape", "x", 1, KEY_SPEC_PROCESS_KEYRING));
	P("request_key", syscall(SYS_request_key, "user", "cmdgate-escape", NULL, 0));

	// Code into the kernel, or another kernel.
	P("init_module", syscall(SYS_init_module, NULL, 0UL, ""));
	P("finit_module", syscall(SYS_finit_module, open("/dev/null", O_RDONLY | O_CLOEXEC), "", 0));
	P("delete_module", syscall(SYS_delete_module, "cmdgate_escape", O_NONBLOCK));
	P("kexec_load", syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0UL));
	P("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0UL));

	// Files by handle, around the mount tree.
	P("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, ".", &handle.fh, &mount_id, 0));
	P("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, &handle.fh, O_RDONLY));

	// The host's clock, power, swap, accounting, log, quotas, ports.
	gettimeofday(&tv, NULL);
	P("settimeofday", syscall(SYS_settimeofday, &tv, NULL));
	clock_gettime(CLOCK_REALTIME, &ts);
	P("clock_settime", syscall(SYS_clock_settime, CLOCK_REALTIME, &ts));
	P("adjtimex", syscall(SYS_adjtimex, &tx));
	P("clock_adjtime", syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
	P("reboot", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_OFF, NULL));
	P("swapon", syscall(SYS_swapon, "/dev/null", 0));
	P("acct", syscall(SYS_acct, NULL));
	P("syslog", syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0));
	P("quotactl", syscall(SYS_quotactl, QCMD(Q_GETFMT, USRQUOTA), "/dev/null", 0, quota));
	P("vhangup", syscall(SYS_vhangup));
#ifdef __x86_64__
	P("iopl", syscall(SYS_iopl, 3));
	P("ioperm", syscall(SYS_ioperm, 0x80UL, 1UL, 1));
#endif

	// What capabilities would allow.
	P("sethostname", syscall(SYS_sethostname, "pwned", 5UL));
	P("mknod", syscall(SYS_mknodat, AT_FDCWD, "/tmp/cmdgate-escape-null", (unsigned)(S_IFCHR | 0600), (unsigned long)makedev(1, 3)));
	P("socket_packet", syscall(SYS_socket, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL)));
	P("socket_raw", syscall(SYS_socket, AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));

	// Last: it would change how this process runs.
	P("personality", syscall(SYS_personality, 0x0400000UL /* READ_IMPLIES_EXEC */));
	return 0;
}

static int hog(void) {
	for (int n = 1; n <= 1024; n++) {
		char *p = malloc(1 << 20);
		if (p == NULL) {
			printf("malloc failed at %d MiB\n", n);
			return 1;
		}
		memset(p, n, 1 << 20);
		if (n % 16 == 0) {
			printf("%d MiB\n", n);
			fflush(stdout);
		}
	}
	printf("not killed\n");
	return 2;
}

static int abstract(const char *name) {
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n + 1 > sizeof addr.sun_path)
		return 2;
	memcpy(addr.sun_path + 1, name, n);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	P("socket", fd);
	P("connect", connect(fd, (struct sockaddr *)&addr, offsetof(struct sockaddr_un, sun_path) + 1 + n));
	return 0;
}

// int80 calls getpid, number 20 for i386: the filter knows only the native numbers and
// must kill the process rather than let a foreign convention through.
static int int80(void) {
#ifdef __x86_64__
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	printf("int80 returned %ld\n", r);
#endif
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "syscalls") == 0)
		return syscalls();
	if (argc == 2 && strcmp(argv[1], "hog") == 0)
		return hog();
	if (argc == 3 && strcmp(argv[1], "abstract") == 0)
		return abstract(argv[2]);
	if (argc == 2 && strcmp(argv[1], "int80") == 0)
		return int80();
	fprintf(stderr, "usage: probe syscalls|hog|abstract NAME|int80\n");
	return 2;
}
