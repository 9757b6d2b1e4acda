/*
 * grove-mount: the mounts of a branch's root that mount(8) here cannot make
 * (util-linux 2.38 ignores X-mount.idmap), or not in one program.
 *
 *   grove-mount idmap HOSTBASE COUNT SRC DST
 *       an idmapped bind mount of SRC at DST: a file SRC's file system owns
 *       as uid/gid N shows as HOSTBASE+N through DST (N < COUNT), so a
 *       container whose user namespace maps 0..COUNT-1 to HOSTBASE.. sees it
 *       as N again, while what it writes lands on disk as N. Made with
 *       open_tree(OPEN_TREE_CLONE) + mount_setattr(MOUNT_ATTR_IDMAP) +
 *       move_mount, from a user namespace with that mapping (a short-lived
 *       child process holds it).
 *
 *   grove-mount bind SRC DST
 *       a bind mount of SRC (not of the mounts under it) at DST, nodev and
 *       nosuid and neither read-only nor noexec whatever SRC's mount is: what
 *       `mount --bind` and `mount -o remount,bind,nodev,nosuid` make, in one
 *       program started instead of two (each program started is a cost, and
 *       a fork's child needs two binds on its way to the screen).
 *
 *   grove-mount overlay OPTIONS DST
 *       an overlay mounted at DST, nodev and nosuid, with OPTIONS
 *       (lowerdir=…,upperdir=…,workdir=…,…) as its file system's options:
 *       what `mount -t overlay -o nodev,nosuid,OPTIONS overlay DST` makes.
 *
 *   Several of these in one run, separated by "+", are made in order, and
 *   the first that fails ends the run (those before it stay mounted): a
 *   fork's child gets its root's mounts from one program started, where
 *   each one started waits for a core while the thawed source and the
 *   dump keep both cores busy.
 *
 * Built by build/host/setup.sh. See docs/userns-recipe.md for what was
 * measured on this kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "grove-mount: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "", strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: grove-mount idmap HOSTBASE COUNT SRC DST\n       grove-mount bind SRC DST\n"
			"       grove-mount overlay OPTIONS DST\n       grove-mount OPERATION [+ OPERATION]...\n");
	exit(2);
}

static unsigned long number(const char *text)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(text, &end, 10);
	if (errno || *end || end == text || n == 0 || n > 0xFFFFFFFFul) usage();
	return n;
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) die("open", path);
	ssize_t n = (ssize_t)strlen(text);
	if (write(fd, text, n) != n) die("write", path);
	close(fd);
}

/* A user namespace mapping 0..count-1 to base..: a child unshares it and waits; we map it and keep a descriptor. */
static int mapped_userns(unsigned long base, unsigned long count)
{
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) != 0) die("pipe", NULL);
	pid_t child = fork();
	if (child < 0) die("fork", NULL);
	if (child == 0) {
		char c = 0;
		if (unshare(CLONE_NEWUSER) != 0) _exit(1);
		if (write(ready[1], &c, 1) != 1) _exit(1);
		pause();
		_exit(0);
	}
	char c;
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) die("the user namespace holder did not start", NULL);
	char path[64], map[64];
	snprintf(map, sizeof map, "0 %lu %lu\n", base, count);
	snprintf(path, sizeof path, "/proc/%d/uid_map", child);
	write_file(path, map);
	snprintf(path, sizeof path, "/proc/%d/setgroups", child);
	write_file(path, "deny");
	snprintf(path, sizeof path, "/proc/%d/gid_map", child);
	write_file(path, map);
	snprintf(path, sizeof path, "/proc/%d/ns/user", child);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) die("open", path);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return fd;
}

/* A detached copy of the mount at SRC, given ATTR, then attached at DST. */
static int bind_with(const char *src, const char *dst, struct mount_attr *attr, const char *what)
{
	int tree = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0) die("open_tree", src);
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, attr, sizeof *attr) != 0) die(what, src);
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) != 0) die("move_mount", dst);
	return 0;
}

static int idmap(unsigned long base, unsigned long count, const char *src, const char *dst)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID, .userns_fd = (unsigned)mapped_userns(base, count) };
	return bind_with(src, dst, &attr, "mount_setattr (idmap)");
}

static int plain_bind(const char *src, const char *dst)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID, .attr_clr = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC };
	return bind_with(src, dst, &attr, "mount_setattr (nodev, nosuid)");
}

static int overlay(const char *options, const char *dst)
{
	if (mount("overlay", dst, "overlay", MS_NODEV | MS_NOSUID, options) != 0) die("mount (overlay)", dst);
	return 0;
}

/* Whether ARGV (ARGC words, the name first) is an operation this program knows. */
static int known(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[0], "idmap") == 0) return number(argv[1]) && number(argv[2]);
	return argc == 3 && (strcmp(argv[0], "bind") == 0 || strcmp(argv[0], "overlay") == 0);
}

/* One operation (known() said it is one). */
static void operation(char **argv)
{
	if (strcmp(argv[0], "idmap") == 0) idmap(number(argv[1]), number(argv[2]), argv[3], argv[4]);
	else if (strcmp(argv[0], "bind") == 0) plain_bind(argv[1], argv[2]);
	else overlay(argv[1], argv[2]);
}

/* Every operation is checked before the first is made: a malformed run mounts nothing. */
int main(int argc, char **argv)
{
	for (int pass = 0; pass < 2; pass++) {
		int start = 1;
		for (int i = 1; i <= argc; i++) {
			if (i < argc && strcmp(argv[i], "+") != 0) continue;
			if (pass == 0 && !known(i - start, argv + start)) usage();
			if (pass == 1) operation(argv + start);
			start = i + 1;
		}
	}
	return 0;
}
