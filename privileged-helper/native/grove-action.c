/*
 * grove-action: CRIU's action program for forks, checkpoints and rollbacks
 * (host/criu/criu.ts). CRIU runs it at each action it is named for
 * (criu-patches/0015), with the action in CRTOOLS_SCRIPT_ACTION, the tree's
 * root in CRTOOLS_INIT_PID and everything else in GROVE_* variables, in
 * another working directory: every path comes from the environment.
 *
 * It was a shell script. Its actions are on a fork's way: post-dump runs
 * while the source is frozen, post-resume tells the helper the source runs
 * again, pre-resume comes before a child's first frame. A shell, and the
 * btrfs it started, were most of CRIU's post-dump stage, which the frozen
 * source waits out; this program, spawned by CRIU (criu-patches/0020),
 * leaves little but the snapshot's ioctl there. It makes its system calls
 * itself and starts only the tools that own their work (grove-share,
 * grove-netlock). Built statically by build/host/setup.sh: no loader to run.
 *
 *  post-dump: the tree is still frozen, so a snapshot taken now is the same
 *    instant as the memory images (GROVE_SNAPSHOT_FROM -> GROVE_SNAPSHOT_TO,
 *    read-only unless GROVE_SNAPSHOT_WRITABLE: a fork's only child's files),
 *    and so is the kernel tier's capture of its anonymous memory (into the
 *    holder at GROVE_SHARE_SOCKET, by GROVE_SHARE_TOOL: native/grove-share.c).
 *    A fork's images lack that memory, so a failed capture fails the dump; a
 *    checkpoint's hold all of it (GROVE_SHARE_CAPTURED set), so there the
 *    capture only says it was made, by creating that file.
 *  post-resume (dump): the tree runs again and CRIU saves its private pages
 *    from the twins (criu-patches/0022): the dump's instant is fixed, which
 *    the helper learns from the file GROVE_THAWED_FILE appearing.
 *  pre-resume: every socket is restored and no task runs yet. With the kernel
 *    tier, the memory CRIU left empty (criu-patches/0006) is attached from
 *    the capture first. Then, at once: traffic may flow again (GROVE_NETLOCK_TOOL
 *    opens the lock on GROVE_LOCKED_NETNS, table GROVE_LOCK_TABLE: netns.ts
 *    lockForRestore), before CRIU takes the restored connections out of
 *    repair mode (criu-patches/0002); and the tree joins its branch's cpu
 *    group (GROVE_CPU_CGROUP) before any of it runs, since CRIU restored it
 *    outside, at the helper's weight (cgroups.ts restorePlacement). Any of
 *    these failing fails the action, and CRIU kills the tree rather than let
 *    it run without its memory, its network or its limits.
 *
 * Any other action: nothing to do. Exits 0, or 1 with the reason on stderr
 * (CRIU's log).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *action;

static int failed(const char *fmt, ...)
{
	va_list ap;
	int err = errno;

	fprintf(stderr, "grove-action %s: ", action);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, err ? ": %s\n" : "\n", strerror(err));
	return 1;
}

/* A variable that is set and not empty, or NULL. */
static const char *var(const char *name)
{
	const char *value = getenv(name);
	return value && *value ? value : NULL;
}

static const char *required(const char *name)
{
	const char *value = var(name);
	if (!value) {
		errno = 0;
		failed("%s is not set", name);
		exit(1);
	}
	return value;
}

/* Starts ARGV[0] with ARGV; its stdout goes nowhere when QUIET. Returns the pid, or -1. */
static pid_t start(char *const argv[], int quiet)
{
	posix_spawn_file_actions_t files;
	pid_t pid;
	int err;

	posix_spawn_file_actions_init(&files);
	if (quiet)
		posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	err = posix_spawn(&pid, argv[0], &files, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&files);
	if (err) {
		errno = err;
		failed("cannot start %s", argv[0]);
		return -1;
	}
	return pid;
}

/* 0 once PID exited 0; otherwise 1 (the program said why on stderr, or this says how it ended). */
static int finished(pid_t pid, const char *what)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return failed("waiting for %s", what);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	errno = 0;
	if (WIFSIGNALED(status))
		return failed("%s was killed by signal %d", what, WTERMSIG(status));
	return 1;
}

static int run_quietly(char *const argv[])
{
	pid_t pid = start(argv, 1);
	return pid < 0 ? 1 : finished(pid, argv[0]);
}

/* What `btrfs subvolume snapshot [-r] FROM TO` does, without starting btrfs. */
static int snapshot(const char *from, const char *to, int writable)
{
	struct btrfs_ioctl_vol_args_v2 args = { .flags = writable ? 0 : BTRFS_SUBVOL_RDONLY };
	char parent_path[PATH_MAX], name_path[PATH_MAX];
	const char *name;
	int source, parent, ret;

	if (snprintf(parent_path, sizeof(parent_path), "%s", to) >= (int)sizeof(parent_path) ||
	    snprintf(name_path, sizeof(name_path), "%s", to) >= (int)sizeof(name_path)) {
		errno = ENAMETOOLONG;
		return failed("snapshot to %s", to);
	}
	name = basename(name_path);
	if (strlen(name) >= sizeof(args.name) || !strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, "/")) {
		errno = EINVAL;
		return failed("snapshot to %s", to);
	}
	strcpy(args.name, name);
	source = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (source < 0)
		return failed("snapshot from %s", from);
	parent = open(dirname(parent_path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0) {
		close(source);
		return failed("snapshot to %s", to);
	}
	args.fd = source;
	ret = ioctl(parent, BTRFS_IOC_SNAP_CREATE_V2, &args);
	ret = ret < 0 ? failed("snapshot %s -> %s", from, to) : 0;
	close(parent);
	close(source);
	return ret;
}

/* Creates an empty FILE (or leaves one that is there). */
static int touch(const char *file)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return failed("cannot create %s", file);
	close(fd);
	return 0;
}

/* The tree's root, as CRIU gives it: a pid, and nothing a path could be made of. */
static const char *init_pid(void)
{
	const char *pid = required("CRTOOLS_INIT_PID");

	if (strspn(pid, "0123456789") != strlen(pid)) {
		errno = 0;
		failed("CRTOOLS_INIT_PID is not a pid: %s", pid);
		exit(1);
	}
	return pid;
}

static int share(const char *verb)
{
	char *argv[] = { (char *)required("GROVE_SHARE_TOOL"), (char *)verb, (char *)var("GROVE_SHARE_SOCKET"),
			 (char *)init_pid(), NULL };
	return run_quietly(argv);
}

static int post_dump(void)
{
	const char *to = var("GROVE_SNAPSHOT_TO");

	if (var("GROVE_SHARE_SOCKET")) {
		const char *captured = var("GROVE_SHARE_CAPTURED");
		if (share("capture") == 0) {
			if (captured && touch(captured))
				return 1;
		} else if (!captured) {
			return 1;
		}
	}
	return to ? snapshot(required("GROVE_SNAPSHOT_FROM"), to, var("GROVE_SNAPSHOT_WRITABLE") != NULL) : 0;
}

static int post_resume(void)
{
	const char *thawed = var("GROVE_THAWED_FILE");
	return thawed ? touch(thawed) : 0;
}

/*
 * Moves PID and every descendant into the cpu group whose cgroup.procs is
 * open as PROCS (cgroup v1: a pid written there moves all its threads). A
 * process that exited meanwhile has nothing left to move.
 */
static int join(int procs, const char *pid)
{
	char path[PATH_MAX], kids[4096];
	struct dirent *thread;
	int ret = 0;
	DIR *threads;

	if (write(procs, pid, strlen(pid)) < 0) {
		snprintf(path, sizeof(path), "/proc/%s", pid);
		if (access(path, F_OK) == 0)
			return failed("cannot move %s into %s", pid, var("GROVE_CPU_CGROUP"));
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%s/task", pid);
	threads = opendir(path);
	if (!threads)
		return 0; /* gone since it moved */
	while (!ret && (thread = readdir(threads))) {
		char *kid, *rest;
		ssize_t len;
		int fd;

		if (thread->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task/%s/children", pid, thread->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, kids, sizeof(kids) - 1);
		close(fd);
		if (len <= 0)
			continue;
		kids[len] = '\0';
		for (kid = strtok_r(kids, " \n", &rest); kid && !ret; kid = strtok_r(NULL, " \n", &rest))
			ret = join(procs, kid);
	}
	closedir(threads);
	return ret;
}

static int join_cpu_group(const char *group)
{
	char path[PATH_MAX];
	int procs, ret;

	snprintf(path, sizeof(path), "%s/cgroup.procs", group);
	procs = open(path, O_WRONLY | O_CLOEXEC);
	if (procs < 0)
		return failed("cannot open %s", path);
	ret = join(procs, init_pid());
	close(procs);
	return ret;
}

static int pre_resume(void)
{
	const char *netns = var("GROVE_LOCKED_NETNS"), *group = var("GROVE_CPU_CGROUP");
	pid_t opening = -1;
	int ret = 0;

	if (var("GROVE_SHARE_SOCKET") && share("attach"))
		return 1;
	if (netns) {
		char *argv[] = { (char *)required("GROVE_NETLOCK_TOOL"), "open", (char *)netns,
				 (char *)required("GROVE_LOCK_TABLE"), NULL };
		opening = start(argv, 0);
		if (opening < 0)
			return 1;
	}
	if (group)
		ret = join_cpu_group(group);
	if (opening > 0 && finished(opening, "the network lock's opening"))
		ret = 1;
	return ret;
}

/* The actions it has a part in: criu.ts names exactly these to CRIU (the unit test compares). */
static const struct {
	const char *name;
	int (*act)(void);
} actions[] = {
	{ "post-dump", post_dump },
	{ "post-resume", post_resume },
	{ "pre-resume", pre_resume },
};

int main(void)
{
	action = getenv("CRTOOLS_SCRIPT_ACTION");
	if (!action) {
		fprintf(stderr, "usage: CRTOOLS_SCRIPT_ACTION=ACTION grove-action (CRIU runs it as its action script)\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(action, actions[i].name))
			return actions[i].act();
	return 0;
}
