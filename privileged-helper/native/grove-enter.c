/*
 * grove-enter: starts a program confined like a branch's own processes.
 *
 *   grove-enter [--cgroup DIR]... [--ksm] -- PROGRAM [ARG...]
 *       joins the branch's cgroups (so what PROGRAM starts — crun's container,
 *       the tree `criu restore` makes — counts against the branch's limits),
 *       optionally marks itself KSM-mergeable, and execs PROGRAM on the host.
 *
 *   grove-enter --target PID [--cgroup DIR]... [--ksm] [--caps CAP,CAP...]
 *               [--seccomp FILE] [--cwd DIR] [--setsid] -- PROGRAM [ARG...]
 *       also enters the namespaces and the root of process PID (a branch's
 *       init) — its user namespace last, as its root —, forks into its pid namespace and there, in the child: drops
 *       every capability but CAPS from the bounding set (and clears the
 *       inheritable and ambient sets), sets no_new_privs, loads the branch's
 *       seccomp filter (FILE, see privileged-helper/src/host/seccomp.ts),
 *       closes every descriptor above 2, optionally starts a session of its
 *       own (inside the branch's pid namespace), and execs PROGRAM. The parent
 *       waits and exits as the child did.
 *
 * This is what `exec` and terminals run: a command started this way is caged
 * exactly like the branch (same capabilities, filter, cgroups), and inherits
 * nothing of the helper's but its three standard descriptors.
 * Built by build/host/setup.sh: cc ... -lseccomp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif
#define MAX_CGROUPS 8

struct options {
	int target;
	const char *cgroups[MAX_CGROUPS];
	int ncgroups;
	int ksm;
	const char *caps;
	const char *seccomp;
	const char *cwd;
	int setsid;
	char **argv;
};

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "grove-enter: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "", strerror(errno));
	exit(126);
}

static void usage(void)
{
	fprintf(stderr, "usage: grove-enter [--target PID] [--cgroup DIR]... [--ksm] [--caps LIST] [--seccomp FILE] [--cwd DIR] [--setsid] -- PROGRAM [ARG...]\n");
	exit(2);
}

static struct options parse(int argc, char **argv)
{
	struct options o = { .target = 0, .ncgroups = 0 };
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--ksm") == 0) o.ksm = 1;
		else if (strcmp(a, "--setsid") == 0) o.setsid = 1;
		else if (!next) usage();
		else if (strcmp(a, "--target") == 0) o.target = atoi(argv[++i]);
		else if (strcmp(a, "--cgroup") == 0 && o.ncgroups < MAX_CGROUPS) o.cgroups[o.ncgroups++] = argv[++i];
		else if (strcmp(a, "--caps") == 0) o.caps = argv[++i];
		else if (strcmp(a, "--seccomp") == 0) o.seccomp = argv[++i];
		else if (strcmp(a, "--cwd") == 0) o.cwd = argv[++i];
		else usage();
	}
	if (i + 1 >= argc) usage();
	o.argv = argv + i + 1;
	if (o.target < 0 || (o.target > 0 && o.target < 2)) usage();
	return o;
}

static void join_cgroup(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) die("open", path);
	char pid[32];
	int n = snprintf(pid, sizeof pid, "%d\n", getpid());
	if (write(fd, pid, n) != n) die("join", path);
	close(fd);
}

/* Capability names as the kernel numbers them (linux/capability.h), for --caps. */
static const char *const CAP_NAMES[] = {
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
	"linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw", "ipc_lock", "ipc_owner",
	"sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
	"sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write", "audit_control", "setfcap",
	"mac_override", "mac_admin", "syslog", "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf",
	"checkpoint_restore",
};

static int kept(const char *caps, int cap)
{
	if (cap >= (int)(sizeof CAP_NAMES / sizeof *CAP_NAMES)) return 0;
	size_t len = strlen(CAP_NAMES[cap]);
	for (const char *p = caps; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == len && strncasecmp(p, CAP_NAMES[cap], n) == 0) return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int last = CAP_LAST_CAP;
	if (f) {
		if (fscanf(f, "%d", &last) != 1) last = CAP_LAST_CAP;
		fclose(f);
	}
	return last;
}

static void drop_capabilities(const char *caps, int last)
{
	for (int cap = 0; cap <= last; cap++)
		if (!kept(caps, cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) die("PR_CAPBSET_DROP", CAP_NAMES[cap]);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) die("PR_CAP_AMBIENT_CLEAR_ALL", NULL);
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) != 0) die("capget", NULL);
	for (int i = 0; i < 2; i++) {
		data[i].inheritable = 0;
		for (int bit = 0; bit < 32; bit++) {
			int cap = i * 32 + bit;
			if (!kept(caps, cap)) {
				data[i].permitted &= ~(1u << bit);
				data[i].effective &= ~(1u << bit);
			}
		}
	}
	if (syscall(SYS_capset, &hdr, data) != 0) die("capset", NULL);
}

/*
 * The filter file, one rule a line (seccomp.ts writes it):
 *   default ERRNO
 *   allow NAME [ARG OP VALUE [VALUE2]]...     OP: eq ne lt le gt ge masked_eq
 *   errno ERRNO NAME [ARG OP VALUE [VALUE2]]...
 * Names this architecture lacks are skipped.
 */
static enum scmp_compare compare_op(const char *op)
{
	if (strcmp(op, "eq") == 0) return SCMP_CMP_EQ;
	if (strcmp(op, "ne") == 0) return SCMP_CMP_NE;
	if (strcmp(op, "lt") == 0) return SCMP_CMP_LT;
	if (strcmp(op, "le") == 0) return SCMP_CMP_LE;
	if (strcmp(op, "gt") == 0) return SCMP_CMP_GT;
	if (strcmp(op, "ge") == 0) return SCMP_CMP_GE;
	if (strcmp(op, "masked_eq") == 0) return SCMP_CMP_MASKED_EQ;
	return _SCMP_CMP_MIN;
}

/* Built on the host (the file is a host path), loaded in the child. */
static scmp_filter_ctx build_seccomp(const char *file)
{
	FILE *f = fopen(file, "re");
	if (!f) die("open", file);
	char line[1024];
	scmp_filter_ctx ctx = NULL;
	while (fgets(line, sizeof line, f)) {
		char *words[16];
		int n = 0;
		for (char *w = strtok(line, " \t\n"); w && n < 16; w = strtok(NULL, " \t\n")) words[n++] = w;
		if (n == 0 || words[0][0] == '#') continue;
		if (strcmp(words[0], "default") == 0 && n == 2) {
			ctx = seccomp_init(SCMP_ACT_ERRNO(atoi(words[1])));
			if (!ctx || seccomp_arch_add(ctx, SCMP_ARCH_X86) < 0 || seccomp_arch_add(ctx, SCMP_ARCH_X32) < 0) die("seccomp_init", file);
			continue;
		}
		if (!ctx) { errno = EINVAL; die("no default line before the rules in", file); }
		int errno_rule = strcmp(words[0], "errno") == 0;
		const char *name = errno_rule ? words[2] : words[1];
		int nr = seccomp_syscall_resolve_name(name);
		if (nr == __NR_SCMP_ERROR) continue;
		uint32_t action = errno_rule ? SCMP_ACT_ERRNO(atoi(words[1])) : SCMP_ACT_ALLOW;
		struct scmp_arg_cmp args[6];
		int nargs = 0;
		for (int w = errno_rule ? 3 : 2; w + 2 < n && nargs < 6;) {
			enum scmp_compare op = compare_op(words[w + 1]);
			if (op == _SCMP_CMP_MIN) { errno = EINVAL; die("bad comparison in", file); }
			uint64_t a = strtoull(words[w + 2], NULL, 0);
			uint64_t b = op == SCMP_CMP_MASKED_EQ && w + 3 < n ? strtoull(words[w + 3], NULL, 0) : 0;
			args[nargs++] = (struct scmp_arg_cmp){ .arg = (unsigned)atoi(words[w]), .op = op, .datum_a = a, .datum_b = b };
			w += op == SCMP_CMP_MASKED_EQ ? 4 : 3;
		}
		int rc = seccomp_rule_add_array(ctx, action, nr, nargs, args);
		if (rc < 0) { errno = -rc; die("seccomp rule for", name); }
	}
	fclose(f);
	if (!ctx) { errno = EINVAL; die("empty filter", file); }
	return ctx;
}

/*
 * A branch in a user namespace of its own: its descriptor, opened while this
 * process still sees the host's /proc; -1 when the branch shares ours.
 */
static int open_user_namespace(int target)
{
	char path[64];
	struct stat ours, theirs;
	snprintf(path, sizeof path, "/proc/%d/ns/user", target);
	if (stat("/proc/self/ns/user", &ours) != 0) die("stat", "/proc/self/ns/user");
	if (stat(path, &theirs) != 0) die("stat", path);
	if (ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev) return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) die("open", path);
	return fd;
}

/*
 * Joined last (once in it, host root has no say over the namespaces the host
 * owns, its network among them), then the branch's root's ids.
 */
static void join_user_namespace(int fd)
{
	if (fd < 0) return;
	if (setns(fd, CLONE_NEWUSER) != 0) die("setns", "user");
	close(fd);
	if (setgroups(0, NULL) != 0) die("setgroups", NULL);
	if (setresgid(0, 0, 0) != 0) die("setresgid", NULL);
	if (setresuid(0, 0, 0) != 0) die("setresuid", NULL);
}

static void enter_namespaces(int target)
{
	static const char *const kinds[] = { "ipc", "uts", "net", "pid", "time", "mnt" };
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/root", target);
	int root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) die("open", path);
	int user = open_user_namespace(target);
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
		snprintf(path, sizeof path, "/proc/%d/ns/%s", target, kinds[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT) continue; /* a namespace kind this kernel lacks */
			die("open", path);
		}
		if (setns(fd, 0) != 0) die("setns", path);
		close(fd);
	}
	join_user_namespace(user);
	if (fchdir(root) != 0 || chroot(".") != 0) die("chroot into the branch's root", NULL);
	close(root);
}

static int wait_child(pid_t child)
{
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR) die("waitpid", NULL);
	if (WIFEXITED(status)) return WEXITSTATUS(status);
	/* Die of the same signal, so whoever waits for us sees what the command saw. */
	signal(WTERMSIG(status), SIG_DFL);
	kill(getpid(), WTERMSIG(status));
	return 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	struct options o = parse(argc, argv);
	for (int i = 0; i < o.ncgroups; i++) join_cgroup(o.cgroups[i]);
	if (o.ksm && prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) != 0)
		fprintf(stderr, "grove-enter: PR_SET_MEMORY_MERGE: %s (running without memory sharing)\n", strerror(errno));
	if (o.target == 0) {
		execvp(o.argv[0], o.argv);
		die("exec", o.argv[0]);
	}
	int last = last_cap(); /* read on the host: the branch's /proc may not say */
	scmp_filter_ctx filter = o.seccomp ? build_seccomp(o.seccomp) : NULL;
	enter_namespaces(o.target);
	pid_t child = fork();
	if (child < 0) die("fork", NULL);
	if (child > 0) {
		/* Only the child loads the filter; the parent waits as long as it runs. */
		if (filter) seccomp_release(filter);
		return wait_child(child);
	}

	if (chdir(o.cwd ? o.cwd : "/") != 0) die("chdir", o.cwd);
	if (o.setsid && setsid() < 0) die("setsid", NULL);
	if (o.caps) drop_capabilities(o.caps, last);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("PR_SET_NO_NEW_PRIVS", NULL);
	if (filter) {
		int rc = seccomp_load(filter);
		if (rc < 0) { errno = -rc; die("seccomp_load", o.seccomp); }
	}
	if (syscall(SYS_close_range, 3, ~0U, 0) != 0) die("close_range", NULL);
	execvp(o.argv[0], o.argv);
	die("exec", o.argv[0]);
}
