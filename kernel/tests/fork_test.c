// SPDX-License-Identifier: GPL-2.0
/*
 * A whole fork in the guest, through CRIU, with and without grove_share.
 *
 * A tree of three processes (a pid namespace's init and two children, each
 * holding 72 MiB in two VMAs) is dumped with --leave-running. While CRIU
 * still holds the tree (its post-dump action), each process's anonymous
 * memory is captured into a snapshot; then the source rewrites all of it.
 * The tree is restored twice: as CRIU does (every page written from the
 * images), and from a dump made with --skip-private-anon-pages, which
 * leaves that memory out of the images, restored with the same option,
 * where the pre-resume action attaches each restored process from its
 * snapshot. Both copies must hold
 * the fork-point memory, the second in the very pages of the snapshot.
 *
 * Then a rollback as the helper makes one with the module: a checkpoint's
 * dump keeps all the memory in its images and has the holder capture it
 * too; the source moves on; the restore from those whole images attaches
 * the memory from the capture instead of copying it.
 * Restore time and memory of each are printed side by side (ratios: the
 * guest is emulated).
 *
 * The pieces are Grove's own: its CRIU (criu-patches/), its action program
 * (privileged-helper/native/grove-action.c) and the snapshot
 * holder the helper runs for a fork (privileged-helper/native/grove-share.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"

#define PROCESSES 3
#define MAIN_LEN (64 * MIB)
#define MOVED_LEN (8 * MIB)
#define USER_END 0x7ffffffff000UL
#define WHOLE "/tmp/images-whole"	/* a dump as CRIU makes it */
#define CAPTURED "/tmp/images-captured"	/* a dump whose anonymous memory the holder captured */
#define HOLDER "/tmp/share.sock"
#define EMPTY_HOLDER "/tmp/empty.sock"	/* holds no snapshot: every attach fails */
#define CHECKPOINT "/tmp/images-checkpoint"	/* a checkpoint's dump: whole, and captured too */
#define VERSION_HOLDER "/tmp/version.sock"	/* the holder of the checkpoint's capture */
#define CAPTURED_MARK "/tmp/checkpoint.captured"	/* the action program's word that it captured */

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

/*
 * Which process of the tree this one's memory is, as of generation
 * GENERATION (0 at the fork point, 10 once it moved on): the seed its pages
 * hold, 1 to PROCESSES (its pid in the tree), or 0 if it holds none.
 */
static uint64_t image_of(pid_t pid, uint64_t generation)
{
	for (uint64_t seed = 1; seed <= PROCESSES; seed++)
		if (wrong_pages(pid, seed + generation) == 0)
			return seed;
	return 0;
}

static int wait_for_memory(pid_t pid, uint64_t generation)
{
	for (int tenths = 0; tenths < 300; tenths++) {
		if (image_of(pid, generation))
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
static void show_log(const char *images, const char *name)
{
	char path[128], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", images, name);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		printf("#   %s", line);
	if (f)
		fclose(f);
}

/* Runs Grove's CRIU with ARGV, its action program talking to the holder at
 * HOLDER (none: no kernel tier), and for a checkpoint's dump leaving MARK
 * once it captured (none: a fork's); CRIU's exit code. */
static int criu(char *const argv[], const char *holder, const char *mark)
{
	int status;
	pid_t child = fork();

	if (child == 0) {
		if (holder) {
			setenv("GROVE_SHARE_SOCKET", holder, 1);
			setenv("GROVE_SHARE_TOOL", "/grove-share", 1);
		}
		if (mark)
			setenv("GROVE_SHARE_CAPTURED", mark, 1);
		execv("/criu/criu", argv);
		_exit(127);
	}
	waitpid(child, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A snapshot holder, as the helper starts one per fork: it lives while the
 * pipe to its standard input is open. */
struct holder {
	pid_t pid;
	int stdin_pipe;
};

static struct holder start_holder(const char *socket_path)
{
	int to[2], from[2];
	char ready[16] = "";
	struct holder h;

	/* Close-on-exec, or every process started later (CRIU, the other
	 * holder) would keep this holder's standard input open. */
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		die("pipe");
	h.pid = fork();
	if (h.pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		execl("/grove-share", "grove-share", "hold", socket_path, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	if (read(from[0], ready, sizeof(ready) - 1) <= 0 || strncmp(ready, "ready", 5))
		die("starting grove-share hold");
	close(from[0]);
	h.stdin_pipe = to[1];
	return h;
}

static void stop_holder(struct holder *h)
{
	close(h->stdin_pipe);
	waitpid(h->pid, NULL, 0);
}

struct restored {
	pid_t root;
	double ms;
	long anon_pages;	/* what the restore added to the system's anonymous pages */
};

static int log_says(const char *images, const char *name, const char *phrase)
{
	char path[128], line[512];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", images, name);
	f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, phrase) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* A restore from IMAGES by copying (no holder) or by sharing from HOLDER's
 * snapshots; one that must fail names the error its log must show. */
static struct restored restore(const char *name, const char *images, const char *holder, const char *failure)
{
	char log[64], pidfile[64], pid[32] = "";
	char *argv[] = { "criu", "restore", "-D", (char *)images, "--restore-detached", "--manage-cgroups=ignore", "-v2",
			 "-o", log, "--pidfile", pidfile, "--action-script", "/grove-action",
			 holder ? "--skip-private-anon-pages" : NULL, NULL };
	struct restored r = { 0 };
	long before = vmstat("nr_anon_pages");
	double start = now_ms();
	int fd, rc;

	snprintf(log, sizeof(log), "restore-%s.log", name);
	snprintf(pidfile, sizeof(pidfile), "/tmp/%s.pid", name);
	rc = criu(argv, holder, NULL);
	r.ms = now_ms() - start;
	r.anon_pages = vmstat("nr_anon_pages") - before;
	fd = open(pidfile, O_RDONLY);
	if (fd >= 0 && read(fd, pid, sizeof(pid) - 1) > 0)
		r.root = atoi(pid);	/* written before the pre-resume action */
	if (fd >= 0)
		close(fd);
	if (failure) {
		check(rc != 0 && (r.root <= 0 || kill(r.root, 0) != 0) && log_says(images, log, failure),
		      "criu restore (%s) fails, saying \"%s\", and leaves no process behind (exit %d)", name, failure, rc);
		return r;
	}
	if (rc != 0)
		r.root = 0;
	check(r.root > 0, "criu restore (%s) brings the tree up (exit %d, %s)", name, rc, log);
	if (r.root <= 0)
		show_log(images, log);
	return r;
}

/* Every process of a tree holds the memory a process of the source had at
 * GENERATION (0: the fork point), each of a different one. */
static int holds_generation(pid_t root, uint64_t generation)
{
	pid_t pids[PROCESSES + 1];
	int n = tree_of(root, pids);
	unsigned int seen = 0;

	for (int i = 0; i < n; i++)
		seen |= 1U << image_of(pids[i], generation);
	return n == PROCESSES && seen == ((1U << (PROCESSES + 1)) - 2);
}

static int holds_fork_point(pid_t root)
{
	return holds_generation(root, 0);
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

	if (root <= 0)
		return;	/* a restore that failed: no tree (and kill(0) would be ours) */
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

/* Bytes of memory pages in a dump's images. */
static long long pages_in(const char *images)
{
	char path[512];
	struct dirent *entry;
	long long bytes = 0;
	DIR *dir = opendir(images);
	struct stat st;

	while (dir && (entry = readdir(dir)))
		if (!strncmp(entry->d_name, "pages-", 6)) {
			snprintf(path, sizeof(path), "%s/%s", images, entry->d_name);
			if (!stat(path, &st))
				bytes += st.st_size;
		}
	if (dir)
		closedir(dir);
	return bytes;
}

/* Dumps the tree at SOURCE into IMAGES (with HOLDER: its memory captured
 * and left out; with MARK too, a checkpoint's: captured and kept in the
 * images); the wall time of the dump. */
static double dump(pid_t source, const char *images, const char *holder, const char *mark)
{
	char pid[16];
	char *argv[] = { "criu", "dump", "-t", pid, "-D", (char *)images, "--leave-running", "--manage-cgroups=ignore",
			 "-v2", "-o", "dump.log", "--action-script", "/grove-action",
			 holder && !mark ? "--skip-private-anon-pages" : NULL, NULL };
	double start;
	int rc;

	snprintf(pid, sizeof(pid), "%d", source);
	if (mkdir(images, 0700))
		die(images);
	start = now_ms();
	rc = criu(argv, holder, mark);
	check(rc == 0, "criu dump --leave-running into %s (exit %d)", images, rc);
	if (rc)
		show_log(images, "dump.log");
	return now_ms() - start;
}

/*
 * A rollback with the module, as the helper makes one: the source (at
 * generation 10 by now) is checkpointed, its images whole and its memory
 * captured too; it moves on to generation 20; the tree restored from the
 * checkpoint's whole images attaches that memory from the capture.
 * COPIED (restored from whole images by copying) is the yardstick.
 */
static struct restored rollback(pid_t source, struct restored copied)
{
	const uint64_t tree_pages = PROCESSES * (MAIN_LEN + MOVED_LEN) / PAGE;
	struct holder version_holder = start_holder(VERSION_HOLDER);
	pid_t pids[PROCESSES + 1];
	struct restored rolled;
	int n;

	dump(source, CHECKPOINT, VERSION_HOLDER, CAPTURED_MARK);
	check(access(CAPTURED_MARK, F_OK) == 0 && pages_in(CHECKPOINT) >= pages_in(WHOLE),
	      "a checkpoint's dump captures its memory and keeps all of it in the images too (%lld KiB of pages)",
	      pages_in(CHECKPOINT) / 1024);
	n = tree_of(source, pids);
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGUSR1);
	for (int i = 0; i < n; i++)
		wait_for_memory(pids[i], 20);
	rolled = restore("rolled-back", CHECKPOINT, VERSION_HOLDER, NULL);
	check(rolled.root > 0 && holds_generation(rolled.root, 10), "the rolled-back tree holds the checkpoint's memory");
	check(rolled.root > 0 && shared_with_snapshot(rolled.root) == tree_pages,
	      "... in the very pages of the capture: %llu of %llu pages mapped twice",
	      (unsigned long long)(rolled.root > 0 ? shared_with_snapshot(rolled.root) : 0), (unsigned long long)tree_pages);
	check(rolled.root > 0 && rolled.anon_pages * 4 < copied.anon_pages,
	      "a rollback by sharing adds a fraction of what copying adds (%ld against %ld pages)", rolled.anon_pages,
	      copied.anon_pages);
	printf("# rollback of %d processes with %llu MiB from whole images: sharing %.0f ms, +%ld MiB (copying took %.0f ms, +%ld MiB)\n",
	       PROCESSES, (unsigned long long)(tree_pages * PAGE / MIB), rolled.ms, rolled.anon_pages * 4 / 1024, copied.ms,
	       copied.anon_pages * 4 / 1024);
	stop_holder(&version_holder);
	return rolled;
}

int main(void)
{
	const uint64_t tree_pages = PROCESSES * (MAIN_LEN + MOVED_LEN) / PAGE;
	struct leak_baseline baseline;
	struct restored copied, shared, rolled;
	struct holder holder, empty_holder;
	pid_t source, pids[PROCESSES + 1];
	double whole_ms, captured_ms;
	int n;

	guest_init();
	baseline = leak_baseline();
	holder = start_holder(HOLDER);
	empty_holder = start_holder(EMPTY_HOLDER);

	source = (pid_t)syscall(SYS_clone, SIGCHLD | CLONE_NEWPID, 0, 0, 0, 0);
	if (source == 0)
		tree();
	usleep(200000);
	n = tree_of(source, pids);
	for (int i = 0; i < n; i++)
		wait_for_memory(pids[i], 0);
	check(n == PROCESSES && holds_fork_point(source), "the source tree is up: %d processes holding their memory", n);

	/* The same instant twice: the tree does nothing between the dumps. */
	whole_ms = dump(source, WHOLE, NULL, NULL);
	captured_ms = dump(source, CAPTURED, HOLDER, NULL);
	check(pages_in(CAPTURED) * 8 < pages_in(WHOLE),
	      "the captured dump leaves the anonymous memory out of its images (%lld against %lld KiB of pages)",
	      pages_in(CAPTURED) / 1024, pages_in(WHOLE) / 1024);
	printf("# dump of %d processes with %llu MiB: whole %.0f ms, captured %.0f ms (%.1fx faster)\n", PROCESSES,
	       (unsigned long long)(tree_pages * PAGE / MIB), whole_ms, captured_ms, whole_ms / captured_ms);
	n = tree_of(source, pids);

	/* The source moves on before any copy exists. */
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGUSR1);
	for (int i = 0; i < n; i++)
		check(wait_for_memory(pids[i], 10), "source process %d rewrote its memory", i + 1);

	copied = restore("copied", WHOLE, NULL, NULL);
	check(copied.root > 0 && holds_fork_point(copied.root), "the tree restored by copying holds the fork-point memory");
	shared = restore("shared", CAPTURED, HOLDER, NULL);
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

	/* Never zeros where memory was: a holder without the capture, or a
	 * restore that does not know the images lack the memory, fails. */
	restore("refused", CAPTURED, EMPTY_HOLDER, "the memory it was to fill is empty");
	restore("unaware", CAPTURED, NULL, "These images hold no private anonymous memory");

	/* The copies are independent: the shared one moves on, the others do not see it. */
	stop_holder(&holder);
	stop_holder(&empty_holder);
	n = tree_of(shared.root, pids);
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGUSR1);
	for (int i = 0; i < n; i++)
		wait_for_memory(pids[i], 10);
	check(holds_fork_point(copied.root), "the copied tree does not see the shared tree's writes");
	n = tree_of(source, pids);
	check(wrong_pages(pids[0], 11) == 0, "nor does the source");

	/* The copies go first: the rollback's count of pages mapped twice needs
	 * them all in memory, not some of them swapped out for lack of room. */
	end_tree(copied.root);
	end_tree(shared.root);
	rolled = rollback(source, copied);
	end_tree(source);
	end_tree(rolled.root);
	check_no_leaks(baseline, "the forks and the rollback");
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
