/*
 * grove-share: a fork's memory through the kernel tier (kernel/grove-share,
 * docs/kernel-tier.md). The snapshots of a fork's source must outlive the
 * CRIU runs that make and use them, so one process holds them for the
 * fork, and CRIU's action program (grove-action.c) asks it over a Unix socket.
 *
 *   grove-share hold SOCKET
 *       listens on SOCKET (0600) and answers one request per connection;
 *       exits, dropping every snapshot, when its standard input closes (the
 *       helper keeps that pipe open exactly as long as the fork runs).
 *   grove-share capture SOCKET PID     (CRIU's post-dump action)
 *       the holder captures the anonymous memory of PID and of every
 *       process below it, each under its pid in PID's pid namespace (a
 *       second capture, of a dump tried again, replaces the first).
 *   grove-share attach SOCKET PID      (CRIU's pre-resume action, with
 *                                       --skip-private-anon-pages)
 *       the holder attaches every process of the restored tree at PID from
 *       the snapshot of the source process with the same pid.
 *
 * A client prints the holder's answer ("ok PROCESSES PAGES" or "error
 * WHY") and exits 0 only on "ok". Zombies have no memory and are skipped.
 * Built by build/host/setup.sh.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "grove_share.h"

#define USER_END 0x7ffffffff000UL	/* every user address on x86-64 */
#define MAX_TREE 4096

struct snapshot {
	pid_t ns_pid;
	int fd;
};

static struct snapshot snapshots[MAX_TREE];
static int nr_snapshots;
static int device = -1, device_errno;

/* ---- the tree ------------------------------------------------------------------ */

/* The pid of a process in its own (innermost) pid namespace, or -1. */
static pid_t ns_pid_of(pid_t pid)
{
	char path[64], line[512];
	pid_t inner = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');

			inner = last ? atoi(last + 1) : -1;
		}
	if (f)
		fclose(f);
	return inner;
}

static int is_zombie(pid_t pid)
{
	char path[64], state = 'Z';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 'Z';
	if (f)
		fclose(f);
	return state == 'Z' || state == 'X';
}

/* Appends the children of every thread of PID. */
static int add_children(pid_t pid, pid_t *pids, int n, int max)
{
	char path[64];
	struct dirent *task;
	DIR *tasks;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	tasks = opendir(path);
	while (tasks && (task = readdir(tasks))) {
		char children[320];
		FILE *f;
		int child;

		if (task->d_name[0] == '.')
			continue;
		snprintf(children, sizeof(children), "/proc/%d/task/%s/children", pid, task->d_name);
		f = fopen(children, "r");
		while (f && n < max && fscanf(f, "%d", &child) == 1)
			pids[n++] = child;
		if (f)
			fclose(f);
	}
	if (tasks)
		closedir(tasks);
	return n;
}

/* PID and every process below it, parents before children. */
static int tree_of(pid_t root, pid_t *pids, int max)
{
	int n = 1;

	pids[0] = root;
	for (int i = 0; i < n && n < max; i++)
		n = add_children(pids[i], pids, n, max);
	return n;
}

/* ---- the holder ------------------------------------------------------------- */

static void drop_snapshots(void)
{
	while (nr_snapshots > 0)
		close(snapshots[--nr_snapshots].fd);
}

static int snapshot_of(pid_t ns_pid)
{
	for (int i = 0; i < nr_snapshots; i++)
		if (snapshots[i].ns_pid == ns_pid)
			return snapshots[i].fd;
	return -1;
}

static void answer(char *out, size_t size, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	vsnprintf(out, size, fmt, args);
	va_end(args);
}

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void capture(pid_t root, char *out, size_t size)
{
	static pid_t pids[MAX_TREE];
	int n = tree_of(root, pids, MAX_TREE);
	unsigned long long pages = 0;

	drop_snapshots();
	for (int i = 0; i < n; i++) {
		struct grove_share_capture request = { .start = 0, .end = USER_END };
		pid_t inner = ns_pid_of(pids[i]);
		int fd;

		if (is_zombie(pids[i]))
			continue;
		request.source_pidfd = pidfd_of(pids[i]);
		fd = request.source_pidfd < 0 ? -1 : ioctl(device, GROVE_SHARE_CAPTURE, &request);
		if (fd < 0) {
			answer(out, size, "error capturing pid %d (%d in its namespace): %s", pids[i], inner, strerror(errno));
			close(request.source_pidfd);
			drop_snapshots();
			return;
		}
		close(request.source_pidfd);
		snapshots[nr_snapshots++] = (struct snapshot){ inner, fd };
		pages += request.pages;
	}
	answer(out, size, "ok %d %llu", nr_snapshots, pages);
}

static void attach(pid_t root, char *out, size_t size)
{
	static pid_t pids[MAX_TREE];
	int n = tree_of(root, pids, MAX_TREE), attached = 0;
	unsigned long long pages = 0;

	for (int i = 0; i < n; i++) {
		pid_t inner = ns_pid_of(pids[i]);
		struct grove_share_attach request = {
			.source_fd = snapshot_of(inner), .flags = GROVE_SHARE_FROM_SNAPSHOT, .start = 0, .end = USER_END,
		};
		int rc = -1;

		if (is_zombie(pids[i]))
			continue;
		request.target_pidfd = pidfd_of(pids[i]);
		if (request.source_fd < 0)
			answer(out, size, "error no snapshot of pid %d in the source's namespace (restored as %d)", inner, pids[i]);
		else if ((rc = ioctl(device, GROVE_SHARE_ATTACH, &request)))
			answer(out, size, "error attaching pid %d (%d in its namespace): %s (source VMA at %#llx)", pids[i],
			       inner, strerror(errno), (unsigned long long)request.refused_at);
		close(request.target_pidfd);
		if (rc)
			return;
		attached++;
		pages += request.pages;
	}
	answer(out, size, "ok %d %llu", attached, pages);
}

/* One request ("capture PID" or "attach PID") per connection, one answer line. */
static void serve(int connection)
{
	char request[64] = "", verb[16] = "", out[512];
	ssize_t got = read(connection, request, sizeof(request) - 1);
	int pid = 0;

	if (got <= 0 || sscanf(request, "%15s %d", verb, &pid) != 2 || pid <= 0)
		answer(out, sizeof(out), "error malformed request");
	else if (device < 0)
		answer(out, sizeof(out), "error cannot open " GROVE_SHARE_DEVICE ": %s", strerror(device_errno));
	else if (!strcmp(verb, "capture"))
		capture(pid, out, sizeof(out));
	else if (!strcmp(verb, "attach"))
		attach(pid, out, sizeof(out));
	else
		answer(out, sizeof(out), "error unknown request %s", verb);
	strcat(out, "\n");
	if (write(connection, out, strlen(out)) < 0)
		perror("grove-share: answering");
}

static int socket_at(const char *path, struct sockaddr_un *address)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(address, 0, sizeof(*address));
	address->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(address->sun_path)) {
		fprintf(stderr, "grove-share: socket path too long: %s\n", path);
		exit(2);
	}
	strcpy(address->sun_path, path);
	return fd;
}

static int hold(const char *path)
{
	struct sockaddr_un address;
	int listener = socket_at(path, &address);

	device = open(GROVE_SHARE_DEVICE, O_RDWR | O_CLOEXEC);	/* a missing device is said per request */
	device_errno = errno;
	umask(0077);
	unlink(path);
	if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof(address)) || listen(listener, 8)) {
		perror("grove-share: listening");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd wait[2] = { { .fd = 0, .events = POLLIN }, { .fd = listener, .events = POLLIN } };
		char discard[64];

		if (poll(wait, 2, -1) < 0)
			continue;
		if (wait[0].revents && read(0, discard, sizeof(discard)) <= 0)
			break;	/* the helper is done with this fork */
		if (wait[1].revents & POLLIN) {
			int connection = accept4(listener, NULL, NULL, SOCK_CLOEXEC);

			if (connection >= 0) {
				serve(connection);
				close(connection);
			}
		}
	}
	unlink(path);
	drop_snapshots();
	return 0;
}

static int ask(const char *path, const char *verb, const char *pid)
{
	struct sockaddr_un address;
	int fd = socket_at(path, &address);
	char out[512] = "";
	ssize_t got;

	if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof(address))) {
		fprintf(stderr, "grove-share: no holder at %s: %s\n", path, strerror(errno));
		return 1;
	}
	dprintf(fd, "%s %s\n", verb, pid);
	got = read(fd, out, sizeof(out) - 1);
	if (got <= 0) {
		fprintf(stderr, "grove-share: the holder gave no answer\n");
		return 1;
	}
	out[got] = 0;
	fputs(out, strncmp(out, "ok ", 3) ? stderr : stdout);
	return strncmp(out, "ok ", 3) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2]);
	if (argc == 4 && (!strcmp(argv[1], "capture") || !strcmp(argv[1], "attach")))
		return ask(argv[2], argv[1], argv[3]);
	fprintf(stderr, "usage: grove-share hold SOCKET | capture SOCKET PID | attach SOCKET PID\n");
	return 2;
}
