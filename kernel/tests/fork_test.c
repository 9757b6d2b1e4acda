// SPDX-License-Identifier: GPL-2.0
/*
 * A whole fork in the guest, through CRIU, with and without grove_share.
 *
 * A tree of three processes (a pid namespace's init and two children, each
 * holding 64 MiB in two VMAs) is dumped with --leave-running. While CRIU
 * still holds the tree (its post-dump action), each process's anonymous
 * memory is captured into a snapshot; then the source rewrites all of it.
 * The tree is restored twice: as CRIU does (every page written from the
 * images), and with --skip-private-anon-pages, where the pre-resume action
 * attaches each restored process from its snapshot. Both copies must hold
 * the fork-point memory, the second in the very pages of the snapshot.
 * Restore time and memory of each are printed side by side (ratios: the
 * guest is emulated).
 *
 * CRIU calls kernel/tests/fork-action.sh, which hands each action to this
 * program over two FIFOs and fails the action unless it answers "ok".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../grove-share/grove_share.h"
#include "guest.h"

#define PROCESSES 3
#define MAIN_LEN (64 * MIB)
#define MOVED_LEN (8 * MIB)
#define USER_END 0x7ffffffff000UL
#define REQUESTS "/tmp/action.request"
#define ANSWERS "/tmp/action.answer"
#define IMAGES "/tmp/images"

static int device = -1;

/* ---- the tree that is forked ------------------------------------------------ */

static volatile sig_atomic_t seed;

/* A process's memory: MAIN_LEN at BASE, and MOVED_LEN right after it that
 * was mapped elsewhere and moved there, so it is a VMA of its own (another
 * anon_vma, offsets that do not follow), as a real program's often are. */
static void fill_all(uint64_t value)
{
	fill(BASE, MAIN_LEN, value);
	fill(BASE + MAIN_LEN, MOVED_LEN, value);
}

/* SIGUSR1: the process moves on, rewriting all of its memory. */
static void move_on(int signal)
{
	(void)signal;
	seed += 10;
	fill_all((uint64_t)seed);
}

static void hold_memory(void)
{
	void *far = (void *)(BASE + 1024 * MIB);

	if (mmap((void *)BASE, MAIN_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)BASE ||
	    mmap(far, MOVED_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != far ||
	    mremap(far, MOVED_LEN, MOVED_LEN, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(BASE + MAIN_LEN)) == MAP_FAILED)
		_exit(3);
	seed = getpid();	/* 1, 2, 3 in the tree's pid namespace */
	fill_all((uint64_t)seed);
	signal(SIGUSR1, move_on);
}

/* The tree's init: its two children, then everyone waits for signals. */
static void tree(void)
{
	int null;

	/* Nothing of the test program's (the device, /proc/kpage*) goes into the dump. */
	syscall(SYS_close_range, 3, ~0U, 0);
	null = open("/dev/null", O_RDWR);
	setsid();
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	close(null);
	for (int i = 0; i < PROCESSES - 1; i++)
		if (fork() == 0)
			break;
	hold_memory();
	for (;;)
		pause();
}

/* ---- reading a process from outside ------------------------------------------ */

static pid_t ns_pid(pid_t pid)
{
	char path[64], line[256];
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

/* A tree's processes from its root, in pid order (root first). */
static int tree_of(pid_t root, pid_t *pids)
{
	char path[64];
	int n = 1;
	FILE *f;

	pids[0] = root;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", root, root);
	f = fopen(path, "r");
	while (f && n < PROCESSES + 1 && fscanf(f, "%d", &pids[n]) == 1)
		n++;
	if (f)
		fclose(f);
	return n;
}

/* Pages of a process's memory not holding the pattern of VALUE (read
 * through /proc/PID/mem: reading shares, it never copies). */
static uint64_t wrong_pages(pid_t pid, uint64_t value)
{
	char path[64];
	uint64_t wrong = 0, word;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return UINT64_MAX;
	for (uint64_t a = BASE; a < BASE + MAIN_LEN + MOVED_LEN; a += PAGE)
		if (pread(fd, &word, 8, (off_t)a) != 8 || word != pattern(value, a))
			wrong++;
	close(fd);
	return wrong;
}

static int wait_for_memory(pid_t pid, uint64_t value)
{
	for (int tenths = 0; tenths < 300; tenths++) {
		if (wrong_pages(pid, value) == 0)
			return 1;
		usleep(100000);
	}
	return 0;
}

/* ---- CRIU and its actions --------------------------------------------------- */

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A failed CRIU run's last words (its -v2 log: errors and warnings). */
static void show_log(const char *name)
{
	char path[128], line[512];
	FILE *f;

	snprintf(path, sizeof(path), IMAGES "/%s", name);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		printf("#   %s", line);
	if (f)
		fclose(f);
}

typedef int (*action_handler)(const char *action, pid_t init_pid);

/* Runs CRIU with ARGV, answering its actions with HANDLE; CRIU's exit code. */
static int criu(char *const argv[], action_handler handle)
{
	int requests = open(REQUESTS, O_RDONLY | O_NONBLOCK), status;
	double deadline = now_ms() + 120e3;
	char request[256];
	pid_t child = fork();

	if (child == 0) {
		execv("/criu/criu", argv);
		_exit(127);
	}
	for (;;) {
		ssize_t n = read(requests, request, sizeof(request) - 1);

		if (n > 0) {
			char action[64] = "";
			int init_pid = 0, answers;
			const char *answer;

			request[n] = 0;
			sscanf(request, "%63s %d", action, &init_pid);
			answer = handle(action, init_pid) ? "ok\n" : "failed\n";
			answers = open(ANSWERS, O_WRONLY);
			if (answers < 0 || write(answers, answer, strlen(answer)) < 0)
				die(ANSWERS);
			close(answers);
			continue;
		}
		if (waitpid(child, &status, WNOHANG) == child)
			break;
		if (now_ms() > deadline) {
			printf("# criu %s did not finish in 120 s: killed\n", argv[1]);
			kill(child, SIGKILL);
			deadline = INFINITY;
		}
		usleep(2000);
	}
	close(requests);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Snapshots of the source's processes, by their pid in the tree. */
static int snapshots[PROCESSES + 1];
static uint64_t captured_pages;

static int capture_tree(const char *action, pid_t init_pid)
{
	pid_t pids[PROCESSES + 1];
	int n = tree_of(init_pid, pids);

	if (strcmp(action, "post-dump"))
		return 1;
	for (int i = 0; i < n; i++) {
		struct grove_share_capture request = {
			.source_pidfd = (int)syscall(SYS_pidfd_open, pids[i], 0), .start = 0, .end = USER_END,
		};
		pid_t inner = ns_pid(pids[i]);

		if (inner < 1 || inner > PROCESSES)
			return 0;
		snapshots[inner] = ioctl(device, GROVE_SHARE_CAPTURE, &request);
		close(request.source_pidfd);
		if (snapshots[inner] < 0) {
			printf("# capture of %d: %s\n", pids[i], strerror(errno));
			return 0;
		}
		captured_pages += request.pages;
	}
	return n == PROCESSES;
}

static void dump_maps(pid_t pid)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strchr(line, '-') && !strchr(line, ':') ? 1 : !strncmp(line, "Rss:", 4) || !strncmp(line, "Anonymous:", 10) || !strncmp(line, "VmFlags", 7))
			printf("#   %s", line);
	if (f)
		fclose(f);
}

static int attach_tree(const char *action, pid_t init_pid)
{
	pid_t pids[PROCESSES + 1];
	int n = tree_of(init_pid, pids);

	if (strcmp(action, "pre-resume"))
		return 1;
	for (int i = 0; i < n; i++) {
		pid_t inner = ns_pid(pids[i]);
		struct grove_share_attach request = {
			.source_fd = inner >= 1 && inner <= PROCESSES ? snapshots[inner] : -1,
			.target_pidfd = (int)syscall(SYS_pidfd_open, pids[i], 0),
			.flags = GROVE_SHARE_FROM_SNAPSHOT, .start = 0, .end = USER_END,
		};
		int rc = ioctl(device, GROVE_SHARE_ATTACH, &request);

		close(request.target_pidfd);
		if (rc) {
			printf("# attach into %d (pid %d in the tree): %s at %#llx\n", pids[i], inner, strerror(errno),
			       (unsigned long long)request.refused_at);
			dump_maps(pids[i]);
			return 0;
		}
	}
	return n == PROCESSES;
}

static int no_actions(const char *action, pid_t init_pid)
{
	(void)action;
	(void)init_pid;
	return 1;
}

/* An attach that fails (as one refused by the module would). */
static int attach_fails(const char *action, pid_t init_pid)
{
	(void)init_pid;
	return strcmp(action, "pre-resume") != 0;
}

struct restored {
	pid_t root;
	double ms;
	long anon_pages;	/* what the restore added to the system's anonymous pages */
};

static struct restored restore(const char *name, action_handler attach)
{
	char log[64], pidfile[64], pid[32] = "";
	char *argv[] = { "criu", "restore", "-D", IMAGES, "--restore-detached", "--manage-cgroups=ignore", "-v2",
			 "-o", log, "--pidfile", pidfile, "--action-script", "/fork-action.sh",
			 attach ? "--skip-private-anon-pages" : NULL, NULL };
	struct restored r = { 0 };
	long before = vmstat("nr_anon_pages");
	double start = now_ms();
	int fd, rc;

	snprintf(log, sizeof(log), "restore-%s.log", name);
	snprintf(pidfile, sizeof(pidfile), "/tmp/%s.pid", name);
	rc = criu(argv, attach ? attach : no_actions);
	r.ms = now_ms() - start;
	r.anon_pages = vmstat("nr_anon_pages") - before;
	fd = open(pidfile, O_RDONLY);
	if (fd >= 0 && read(fd, pid, sizeof(pid) - 1) > 0)
		r.root = atoi(pid);	/* written before the pre-resume action */
	if (fd >= 0)
		close(fd);
	if (attach == attach_fails) {
		check(rc != 0 && (r.root <= 0 || kill(r.root, 0) != 0),
		      "criu restore (%s) fails and leaves no process behind when the attach fails (exit %d)", name, rc);
		return r;
	}
	if (rc != 0)
		r.root = 0;
	check(r.root > 0, "criu restore (%s) brings the tree up (exit %d, %s)", name, rc, log);
	if (r.root <= 0)
		show_log(log);
	return r;
}

/* Every process of a restored tree holds its fork-point memory. */
static int holds_fork_point(pid_t root)
{
	pid_t pids[PROCESSES + 1];
	int n = tree_of(root, pids), ok = n == PROCESSES;

	for (int i = 0; i < n; i++)
		ok &= wrong_pages(pids[i], (uint64_t)ns_pid(pids[i])) == 0;
	return ok;
}

/* Pages of a tree's memory that are mapped exactly twice (the snapshot and it). */
static uint64_t shared_with_snapshot(pid_t root)
{
	pid_t pids[PROCESSES + 1];
	uint64_t count = (MAIN_LEN + MOVED_LEN) / PAGE, twice = 0, *entries = calloc(count, 8);
	int n = tree_of(root, pids);

	for (int i = 0; i < n; i++) {
		pagemap(pids[i], BASE, count, entries);
		for (uint64_t p = 0; p < count; p++)
			twice += (entries[p] & PM_PRESENT) && mapcount(PM_PFN(entries[p])) == 2;
	}
	free(entries);
	return twice;
}

/* Kills a tree (its pid namespace's init: the children go with it) and
 * waits until none of it holds memory any more. */
static void end_tree(pid_t root)
{
	char path[64], state = 'R';

	kill(root, SIGKILL);
	waitpid(root, NULL, WNOHANG);
	snprintf(path, sizeof(path), "/proc/%d/stat", root);
	for (int tenths = 0; tenths < 100 && state != 'Z'; tenths++) {
		FILE *f = fopen(path, "r");

		if (!f || fscanf(f, "%*d %*s %c", &state) != 1)
			state = 'Z';	/* gone */
		if (f)
			fclose(f);
		usleep(100000);
	}
	waitpid(root, NULL, WNOHANG);
}

int main(void)
{
	char *dump[] = { "criu", "dump", "-t", NULL, "-D", IMAGES, "--leave-running", "--manage-cgroups=ignore",
			 "-v2", "-o", "dump.log", "--action-script", "/fork-action.sh", NULL };
	const uint64_t tree_pages = PROCESSES * (MAIN_LEN + MOVED_LEN) / PAGE;
	struct leak_baseline baseline;
	struct restored copied, shared;
	pid_t source, pids[PROCESSES + 1];
	char source_pid[16];
	int n;

	guest_init();
	device = open(GROVE_SHARE_DEVICE, O_RDWR | O_CLOEXEC);
	if (device < 0 || mkfifo(REQUESTS, 0600) || mkfifo(ANSWERS, 0600) || mkdir(IMAGES, 0700))
		die("setting up");
	baseline = leak_baseline();

	source = (pid_t)syscall(SYS_clone, SIGCHLD | CLONE_NEWPID, 0, 0, 0, 0);
	if (source == 0)
		tree();
	usleep(200000);
	n = tree_of(source, pids);
	for (int i = 0; i < n; i++)
		wait_for_memory(pids[i], (uint64_t)ns_pid(pids[i]));
	check(n == PROCESSES && holds_fork_point(source), "the source tree is up: %d processes holding their memory", n);

	snprintf(source_pid, sizeof(source_pid), "%d", source);
	dump[3] = source_pid;
	n = criu(dump, capture_tree);
	check(n == 0, "criu dump --leave-running, the tree captured at post-dump (exit %d)", n);
	if (n)
		show_log("dump.log");
	n = tree_of(source, pids);
	check(captured_pages >= tree_pages, "the snapshots hold the tree's memory (%llu pages, the tree wrote %llu)",
	      (unsigned long long)captured_pages, (unsigned long long)tree_pages);

	/* The source moves on before any copy exists. */
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGUSR1);
	for (int i = 0; i < n; i++)
		check(wait_for_memory(pids[i], (uint64_t)ns_pid(pids[i]) + 10), "source process %d rewrote its memory", i + 1);

	copied = restore("copied", NULL);
	check(copied.root > 0 && holds_fork_point(copied.root), "the tree restored by copying holds the fork-point memory");
	shared = restore("shared", attach_tree);
	check(shared.root > 0 && holds_fork_point(shared.root), "the tree restored by sharing holds the fork-point memory");
	check(shared.root > 0 && shared_with_snapshot(shared.root) == tree_pages,
	      "... in the very pages of the snapshots: %llu of %llu pages mapped twice",
	      (unsigned long long)(shared.root > 0 ? shared_with_snapshot(shared.root) : 0), (unsigned long long)tree_pages);
	check(shared.root > 0 && copied.root > 0 && shared.anon_pages * 4 < copied.anon_pages,
	      "restoring by sharing adds a fraction of the memory copying adds (%ld against %ld pages)",
	      shared.anon_pages, copied.anon_pages);
	printf("# restore of %d processes with %llu MiB: copying %.0f ms, +%ld MiB; sharing %.0f ms, +%ld MiB (%.1fx faster)\n",
	       PROCESSES, (unsigned long long)(tree_pages * PAGE / MIB), copied.ms, copied.anon_pages * 4 / 1024,
	       shared.ms, shared.anon_pages * 4 / 1024, copied.ms / shared.ms);

	restore("refused", attach_fails);

	/* The copies are independent: the shared one moves on, the others do not see it. */
	for (int i = 1; i <= PROCESSES; i++)
		close(snapshots[i]);
	n = tree_of(shared.root, pids);
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGUSR1);
	for (int i = 0; i < n; i++)
		wait_for_memory(pids[i], (uint64_t)ns_pid(pids[i]) + 10);
	check(holds_fork_point(copied.root), "the copied tree does not see the shared tree's writes");
	n = tree_of(source, pids);
	check(wrong_pages(pids[0], 11) == 0, "nor does the source");

	end_tree(source);
	end_tree(copied.root);
	end_tree(shared.root);
	check_no_leaks(baseline, "the forks");
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
