// SPDX-License-Identifier: GPL-2.0
/*
 * The guest's tests of grove_share. Runs as root inside the qemu guest
 * (kernel/tests/init.sh starts it) with the module loaded, zram swap on and
 * ksmd running. Prints one TAP-like line per check; exits 0 only if every
 * check passed.
 *
 * The processes whose memory is shared are "workers": children that obey
 * commands sent over a socketpair, so that each side's reads and writes are
 * its own (a write from outside, through /proc/PID/mem, would not be the
 * same fault). Targets live in a new pid namespace, as a branch's do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../grove-share/grove_share.h"
#include "guest.h"

/* ---- workers ------------------------------------------------------------- */

enum op { MAP, MAP_SHARED_MEMORY, MAP_OWN_BINARY, FILL, VERIFY, WRITE, READ, ADVISE, UNMAP, REMAP, PROTECT, FORK_VERIFY, LOCK };

struct command {
	enum op op;
	uint64_t addr, len, arg;
};

struct worker {
	pid_t pid;
	int sock;
	int pidfd;
};

static uint64_t obey(struct command *c)
{
	void *at;

	switch (c->op) {
	case MAP:
		at = mmap((void *)c->addr, c->len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | (int)c->arg, -1, 0);
		return at == (void *)c->addr ? 0 : (uint64_t)errno;
	case MAP_SHARED_MEMORY:
		at = mmap((void *)c->addr, c->len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		return at == (void *)c->addr ? 0 : (uint64_t)errno;
	case MAP_OWN_BINARY: {
		int fd = open("/proc/self/exe", O_RDONLY);

		at = mmap((void *)c->addr, c->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
		close(fd);
		return at == (void *)c->addr ? 0 : (uint64_t)errno;
	}
	case FILL:
		fill(c->addr, c->len, c->arg);
		return 0;
	case VERIFY:
		return verify(c->addr, c->len, c->arg);
	case WRITE:
		*(volatile uint64_t *)c->addr = c->arg;
		return 0;
	case READ:
		return *(volatile uint64_t *)c->addr;
	case ADVISE:
		return madvise((void *)c->addr, c->len, (int)c->arg) ? (uint64_t)errno : 0;
	case UNMAP:
		return munmap((void *)c->addr, c->len) ? (uint64_t)errno : 0;
	case REMAP:
		at = mremap((void *)c->addr, c->len, c->len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)c->arg);
		return at == (void *)c->arg ? 0 : (uint64_t)errno;
	case PROTECT:
		return mprotect((void *)c->addr, c->len, (int)c->arg) ? (uint64_t)errno : 0;
	case LOCK:
		return mlock((void *)c->addr, c->len) ? (uint64_t)errno : 0;
	case FORK_VERIFY: {
		/* A child of the worker checks its inherited view, then scribbles
		 * over it; the worker's own view must not change. */
		int status;
		pid_t child = fork();

		if (child == 0) {
			uint64_t bad = verify(c->addr, c->len, c->arg);

			fill(c->addr, c->len, c->arg + 1);
			_exit(bad ? 1 : 0);
		}
		waitpid(child, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
	}
	}
	return (uint64_t)-1;
}

static void serve(int sock)
{
	struct command c;
	uint64_t answer;

	while (read(sock, &c, sizeof(c)) == sizeof(c)) {
		answer = obey(&c);
		if (write(sock, &answer, sizeof(answer)) != sizeof(answer))
			break;
	}
	_exit(0);
}

static struct worker spawn(int new_pid_namespace)
{
	struct worker w;
	int pair[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair))
		die("socketpair");
	w.pid = (pid_t)syscall(SYS_clone, SIGCHLD | (new_pid_namespace ? CLONE_NEWPID : 0), 0, 0, 0, 0);
	if (w.pid < 0)
		die("clone");
	if (w.pid == 0) {
		close(pair[0]);
		serve(pair[1]);
	}
	close(pair[1]);
	w.sock = pair[0];
	w.pidfd = (int)syscall(SYS_pidfd_open, w.pid, 0);
	if (w.pidfd < 0)
		die("pidfd_open");
	return w;
}

static uint64_t ask(struct worker *w, enum op op, uint64_t addr, uint64_t len, uint64_t arg)
{
	struct command c = { op, addr, len, arg };
	uint64_t answer = (uint64_t)-1;

	if (write(w->sock, &c, sizeof(c)) != sizeof(c) || read(w->sock, &answer, sizeof(answer)) != sizeof(answer))
		die("worker gone");
	return answer;
}

static void stop(struct worker *w)
{
	int status;

	kill(w->pid, SIGSTOP);
	if (waitpid(w->pid, &status, WUNTRACED) != w->pid || !WIFSTOPPED(status))
		die("stopping a worker");
}

static void resume(struct worker *w)
{
	int status;

	kill(w->pid, SIGCONT);
	waitpid(w->pid, &status, WCONTINUED);
}

static void finish(struct worker *w)
{
	kill(w->pid, SIGKILL);
	waitpid(w->pid, NULL, 0);
	close(w->sock);
	close(w->pidfd);
}

/* ---- the device ----------------------------------------------------------- */

static int device = -1;

static int attach(struct worker *source, struct worker *target, uint64_t start, uint64_t len,
		  struct grove_share_attach *out)
{
	struct grove_share_attach request = {
		.source_fd = source->pidfd, .target_pidfd = target->pidfd,
		.start = start, .end = start + len,
	};
	int rc = ioctl(device, GROVE_SHARE_ATTACH, &request);

	if (out)
		*out = request;
	return rc ? -errno : 0;
}

static int attach_from(int snapshot, struct worker *target, uint64_t start, uint64_t len)
{
	struct grove_share_attach request = {
		.source_fd = snapshot, .target_pidfd = target->pidfd,
		.flags = GROVE_SHARE_FROM_SNAPSHOT, .start = start, .end = start + len,
	};

	return ioctl(device, GROVE_SHARE_ATTACH, &request) ? -errno : 0;
}

/* A snapshot's descriptor, or -errno. */
static int capture(struct worker *source, uint64_t start, uint64_t len, struct grove_share_capture *out)
{
	struct grove_share_capture request = { .source_pidfd = source->pidfd, .start = start, .end = start + len };
	int fd = ioctl(device, GROVE_SHARE_CAPTURE, &request);

	if (out)
		*out = request;
	return fd < 0 ? -errno : fd;
}

/* The lowest free descriptor: a refused capture must not have taken one. */
static int next_fd(void)
{
	int fd = dup(0);

	close(fd);
	return fd;
}

/* A stopped source holding LEN bytes at BASE filled with SEED, and a fresh
 * target in its own pid namespace with the same (untouched) mapping. */
static void pair_up(struct worker *source, struct worker *target, uint64_t len, uint64_t seed)
{
	*source = spawn(0);
	*target = spawn(1);
	if (ask(source, MAP, BASE, len, 0) || ask(target, MAP, BASE, len, 0))
		die("mapping");
	ask(source, FILL, BASE, len, seed);
	stop(source);
}

/* ---- the tests ------------------------------------------------------------ */

static long ksm_pages_sharing(void)
{
	long sharing = 0;
	FILE *f = fopen("/sys/kernel/mm/ksm/pages_sharing", "r");

	if (f && fscanf(f, "%ld", &sharing) != 1)
		sharing = 0;
	if (f)
		fclose(f);
	return sharing;
}

struct shared_census {
	uint64_t same, differ, thp, ksm, swapped, not_twice;
};

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The source's resident page frames in order, to count how often each occurs. */
static uint64_t *resident_frames(const uint64_t *entries, uint64_t count, uint64_t *frames)
{
	uint64_t *sorted = calloc(count, 8);

	*frames = 0;
	for (uint64_t i = 0; i < count; i++)
		if (entries[i] & PM_PRESENT)
			sorted[(*frames)++] = PM_PFN(entries[i]);
	qsort(sorted, *frames, 8, by_value);
	return sorted;
}

/* A page KSM merged is one frame at several of the source's addresses.
 * (kpageflags' KSM bit cannot tell: 6.12 set it here on every anonymous page.) */
static int merged(const uint64_t *sorted, uint64_t frames, uint64_t pfn)
{
	const uint64_t *at = bsearch(&pfn, sorted, frames, 8, by_value);

	return at && ((at > sorted && at[-1] == pfn) || (at + 1 < sorted + frames && at[1] == pfn));
}

/* Compares both sides' pagemaps page by page: every page the source has
 * (in memory or in swap) must be the very same page in the target. */
static struct shared_census census(pid_t source, pid_t target, uint64_t addr, uint64_t len)
{
	struct shared_census c = { 0 };
	uint64_t count = len / PAGE, *s = calloc(count, 8), *t = calloc(count, 8), frames, *sorted;

	pagemap(source, addr, count, s);
	pagemap(target, addr, count, t);
	sorted = resident_frames(s, count, &frames);
	for (uint64_t i = 0; i < count; i++) {
		uint64_t pfn = PM_PFN(s[i]);

		if (!(s[i] & (PM_PRESENT | PM_SWAPPED)))
			continue;
		if ((s[i] & ~(1ULL << 55)) != (t[i] & ~(1ULL << 55))) { /* bit 55: soft-dirty */
			c.differ++;
			continue;
		}
		c.same++;
		if (s[i] & PM_SWAPPED)
			c.swapped++;
		else if (merged(sorted, frames, pfn))
			c.ksm++;
		else if (mapcount(pfn) != 2)
			c.not_twice++;
		else if (page_flag(pfn, KPF_THP))
			c.thp++;
	}
	free(s);
	free(t);
	free(sorted);
	return c;
}

static void ksm_run(const char *value)
{
	int fd = open("/sys/kernel/mm/ksm/run", O_WRONLY);

	if (fd < 0 || write(fd, value, 1) != 1)
		die("/sys/kernel/mm/ksm/run");
	close(fd);
}

/* NUMA node of each page of [addr, addr + count pages) in a process (move_pages
 * with no target nodes only asks); -errno for pages not in memory. */
static void page_nodes(pid_t pid, uint64_t addr, uint64_t count, int *nodes)
{
	void **pages = calloc(count, sizeof(void *));

	for (uint64_t i = 0; i < count; i++)
		pages[i] = (void *)(addr + i * PAGE);
	if (syscall(SYS_move_pages, pid, count, pages, NULL, nodes, 0))
		die("move_pages");
	free(pages);
}

/* Migration moves a page only through reverse mapping: every mapping of it
 * the rmap knows is switched to the new page. A shared page whose target
 * mapping the rmap did not know would stay mapped, so it could not move.
 * The guest has two NUMA nodes; all of the source's pages go to node 1. */
static int moved_by_migration(pid_t source, pid_t target, uint64_t addr, uint64_t len)
{
	uint64_t count = len / PAGE, left = 0, resident = 0;
	unsigned long from = 1UL << 0, to = 1UL << 1;
	int *nodes = calloc(count, sizeof(int));
	struct shared_census shared;
	long rc = 1;

	/* Migration is best effort: a page another thread holds locked at that
	 * moment is left behind. ksmd, walking its stable tree, is the one
	 * such thread here: it is paused (merged pages stay merged) and the
	 * migration tried a few times. */
	ksm_run("0");
	for (int attempt = 0; attempt < 5 && rc != 0; attempt++) {
		rc = syscall(SYS_migrate_pages, source, 8 * sizeof(unsigned long), &from, &to);
		if (rc)
			usleep(200000);
	}
	ksm_run("1");
	page_nodes(source, addr, count, nodes);
	for (uint64_t i = 0; i < count; i++) {
		resident += nodes[i] >= 0;
		left += nodes[i] == 0;
	}
	shared = census(source, target, addr, len);
	printf("# migrate_pages: %ld not moved; %llu of %llu resident pages still on node 0; %llu same, %llu differ\n",
	       rc, (unsigned long long)left, (unsigned long long)resident,
	       (unsigned long long)shared.same, (unsigned long long)shared.differ);
	free(nodes);
	return rc == 0 && resident > 0 && left == 0 && shared.differ == 0 && shared.not_twice == 0;
}

static void test_sharing(void)
{
	/* 256 MiB at BASE: THP | KSM-merged | swapped out | plain pages. */
	const uint64_t len = 256 * MIB, thp = 64 * MIB, ksm = 8 * MIB, swapped = 32 * MIB;
	const uint64_t ksm_at = BASE + thp, swap_at = ksm_at + ksm, plain_at = swap_at + swapped;
	struct worker source = spawn(0), target = spawn(1);
	struct grove_share_attach result;
	struct shared_census shared;
	uint64_t before;
	int rc;

	for (struct worker *w = &source; w; w = (w == &source ? &target : NULL)) {
		if (ask(w, MAP, BASE, len, 0) || ask(w, ADVISE, BASE, thp, MADV_HUGEPAGE) ||
		    ask(w, ADVISE, ksm_at, ksm, MADV_MERGEABLE))
			die("mapping the sharing test's memory");
	}
	ask(&source, FILL, BASE, len, 7);
	/* The KSM range becomes identical pages, for ksmd to merge. */
	ask(&source, ADVISE, ksm_at, ksm, MADV_DONTNEED);
	for (uint64_t a = ksm_at; a < ksm_at + ksm; a += PAGE)
		ask(&source, WRITE, a + 8, 0, 0x5a5a5a5a);
	for (int tenths = 0; tenths < 600 && ksm_pages_sharing() < 1000; tenths++)
		usleep(100000);
	if (ask(&source, ADVISE, swap_at, swapped, MADV_PAGEOUT))
		die("MADV_PAGEOUT");
	stop(&source);

	before = present_pages(source.pid, BASE, len);
	rc = attach(&source, &target, BASE, len, &result);
	check(rc == 0, "attach 256 MiB of THP, KSM, swapped and plain pages into a new pid namespace (%s)",
	      rc ? strerror(-rc) : "ok");
	check(result.vmas == 3, "3 VMAs attached (got %llu)", (unsigned long long)result.vmas);
	check(result.pages == before, "pages reported shared = the source's resident and swapped pages (%llu of %llu)",
	      (unsigned long long)result.pages, (unsigned long long)before);

	shared = census(source.pid, target.pid, BASE, len);
	check(shared.differ == 0 && shared.same == before,
	      "the target maps the very pages (or swap entries) of the source: %llu same, %llu differ",
	      (unsigned long long)shared.same, (unsigned long long)shared.differ);
	check(shared.thp > 0 && shared.ksm > 0 && shared.swapped > 0,
	      "the shared pages include THP (%llu), KSM-merged (%llu) and swapped-out (%llu) pages",
	      (unsigned long long)shared.thp, (unsigned long long)shared.ksm, (unsigned long long)shared.swapped);
	check(shared.not_twice == 0, "each shared page is mapped exactly twice (%llu are not)",
	      (unsigned long long)shared.not_twice);

	check(moved_by_migration(source.pid, target.pid, BASE, len),
	      "migration to another NUMA node moves every shared page under both sides at once (rmap finds the target)");

	check(ask(&target, VERIFY, BASE, thp, 7) == 0 && ask(&target, VERIFY, swap_at, BASE + len - swap_at, 7) == 0,
	      "the target reads the source's THP, swapped-out and plain pages as they were");
	check(ask(&target, READ, ksm_at + 3 * PAGE + 8, 0, 0) == 0x5a5a5a5a, "the target reads the KSM-merged pages");

	/* Writes on either side stay on that side. */
	resume(&source);
	{
		uint64_t thp_page = BASE + 5 * PAGE, plain_page = plain_at + 11 * PAGE, target_page = plain_at + 12 * PAGE;
		uint64_t spfn;

		ask(&source, WRITE, thp_page, 0, 111);
		ask(&source, WRITE, plain_page, 0, 222);
		ask(&target, WRITE, target_page, 0, 333);
		check(ask(&target, READ, thp_page, 0, 0) == pattern(7, thp_page) &&
		      ask(&target, READ, plain_page, 0, 0) == pattern(7, plain_page),
		      "the source's writes after the attach are invisible to the target");
		check(ask(&source, READ, target_page, 0, 0) == pattern(7, target_page),
		      "the target's writes are invisible to the source");
		spfn = PM_PFN(pagemap_entry(source.pid, plain_page));
		check(spfn != PM_PFN(pagemap_entry(target.pid, plain_page)) && mapcount(spfn) == 1,
		      "a written page is the writer's own copy, mapped once");
	}

	/* Discarded memory reads back as zeros, not as the source's. */
	check(ask(&target, ADVISE, plain_at, MIB, MADV_DONTNEED) == 0 && ask(&target, VERIFY, plain_at, MIB, 0) == 0,
	      "MADV_DONTNEED in the target reads back zeros");
	check(ask(&source, READ, plain_at, 0, 0) == pattern(7, plain_at), "... while the source keeps its data");

	finish(&source);
	finish(&target);
}

static void test_lifetimes(void)
{
	const uint64_t len = 16 * MIB;
	struct worker s, t;

	/* Source exits first: the target keeps the pages. */
	pair_up(&s, &t, len, 11);
	check(attach(&s, &t, BASE, len, NULL) == 0, "attach (source will exit first)");
	finish(&s);
	check(ask(&t, VERIFY, BASE, len, 11) == 0, "the target keeps its memory after the source exits");
	ask(&t, FILL, BASE, len, 12);
	check(ask(&t, VERIFY, BASE, len, 12) == 0, "... and can write all of it");
	finish(&t);

	/* Target exits first. */
	pair_up(&s, &t, len, 13);
	check(attach(&s, &t, BASE, len, NULL) == 0, "attach (target will exit first)");
	finish(&t);
	resume(&s);
	check(ask(&s, VERIFY, BASE, len, 13) == 0, "the source's memory is intact after the target exits");
	ask(&s, FILL, BASE, len, 14);
	check(ask(&s, VERIFY, BASE, len, 14) == 0, "... and writable");
	finish(&s);

	/* munmap, mremap and mprotect on shared ranges, and a fork of the target. */
	pair_up(&s, &t, len, 15);
	check(attach(&s, &t, BASE, len, NULL) == 0, "attach (for munmap, mremap, mprotect, fork)");
	check(ask(&t, UNMAP, BASE + 2 * MIB, MIB, 0) == 0, "munmap of a shared middle range");
	check(ask(&t, REMAP, BASE + 4 * MIB, 2 * MIB, BASE + 64 * MIB) == 0 &&
	      ask(&t, READ, BASE + 64 * MIB + 3 * PAGE, 0, 0) == pattern(15, BASE + 4 * MIB + 3 * PAGE),
	      "mremap of a shared range keeps its contents at the new address");
	ask(&t, WRITE, BASE + 64 * MIB + 5 * PAGE, 0, 555);
	check(ask(&t, PROTECT, BASE + 8 * MIB, MIB, PROT_READ) == 0 &&
	      ask(&t, READ, BASE + 8 * MIB, 0, 0) == pattern(15, BASE + 8 * MIB) &&
	      ask(&t, PROTECT, BASE + 8 * MIB, MIB, PROT_READ | PROT_WRITE) == 0,
	      "mprotect read-only and back on a shared range");
	ask(&t, WRITE, BASE + 8 * MIB, 0, 888);
	check(ask(&t, FORK_VERIFY, BASE + 10 * MIB, 4 * MIB, 15) == 0, "a fork of the target reads the shared memory");
	check(ask(&t, VERIFY, BASE + 10 * MIB, 4 * MIB, 15) == 0, "the target's memory is unchanged by its child's writes");
	resume(&s);
	check(ask(&s, VERIFY, BASE, len, 15) == 0, "the source saw none of the target's unmaps, moves and writes");
	finish(&s);
	finish(&t);
}

/* VMAs of the target inside [addr, addr + len), from /proc/PID/maps. */
static int vmas_in(pid_t pid, uint64_t addr, uint64_t len)
{
	char path[64], line[512];
	unsigned long start, end;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &start, &end) == 2 && start >= addr && end <= addr + len)
			n++;
	if (f)
		fclose(f);
	return n;
}

/* CRIU restores adjacent anonymous mappings fresh, so they merge into one
 * VMA where the source had two with distinct anon_vmas (here: one moved
 * next to the other by mremap). The module splits the target to fit. */
static void test_split_target(void)
{
	const uint64_t half = 4 * MIB, far = BASE + 512 * MIB;
	struct worker s = spawn(0), t = spawn(1);
	struct grove_share_attach result;
	uint64_t wrong = 0;
	int rc;

	ask(&s, MAP, BASE, half, 0);
	ask(&s, FILL, BASE, half, 61);
	ask(&s, MAP, far, half, 0);
	ask(&s, FILL, far, half, 62);
	ask(&s, REMAP, far, half, BASE + half);
	ask(&s, LOCK, BASE, half, 0);
	stop(&s);
	ask(&t, MAP, BASE, 2 * half, 0);
	check(vmas_in(s.pid, BASE, 2 * half) == 2 && vmas_in(t.pid, BASE, 2 * half) == 1,
	      "the source has two adjacent VMAs (one mlocked) where the target has one");
	rc = attach(&s, &t, BASE, 2 * half, &result);
	check(rc == 0 && result.vmas == 2 && vmas_in(t.pid, BASE, 2 * half) == 2,
	      "attach splits the target's VMA to the source's two (%s, %llu VMAs)", strerror(-rc),
	      (unsigned long long)result.vmas);
	for (uint64_t a = 0; a < half; a += PAGE)
		wrong += ask(&t, READ, BASE + half + a, 0, 0) != pattern(62, far + a);
	check(ask(&t, VERIFY, BASE, half, 61) == 0 && wrong == 0, "both halves read the source's memory");
	check(census(s.pid, t.pid, BASE, 2 * half).differ == 0, "... as the very same pages");
	finish(&s);
	finish(&t);
}

static void test_fork_of_target_sees_fork_point(void)
{
	const uint64_t len = 8 * MIB;
	struct worker s, t;

	pair_up(&s, &t, len, 21);
	check(attach(&s, &t, BASE, len, NULL) == 0, "attach (for a fork of the target)");
	check(ask(&t, FORK_VERIFY, BASE, len, 21) == 0, "a fork of an attached target reads the fork-point memory");
	check(ask(&t, VERIFY, BASE, len, 21) == 0, "the target is unchanged after its child wrote everything");
	resume(&s);
	check(ask(&s, VERIFY, BASE, len, 21) == 0, "so is the source");
	finish(&s);
	finish(&t);
}

static void test_repeated(void)
{
	const uint64_t len = 4 * MIB;
	struct leak_baseline baseline = leak_baseline();
	int failed = 0, round;
	struct worker s = spawn(0), t = spawn(1);

	ask(&s, MAP, BASE, len, 0);
	ask(&s, FILL, BASE, len, 31);
	stop(&s);
	for (round = 0; round < 200 && !failed; round++) {
		failed |= ask(&t, MAP, BASE, len, 0) != 0;
		failed |= attach(&s, &t, BASE, len, NULL) != 0;
		failed |= ask(&t, VERIFY, BASE + (uint64_t)(round % 1024) * PAGE, PAGE, 31) != 0;
		if (round % 2)
			ask(&t, WRITE, BASE + PAGE, 0, (uint64_t)round);
		failed |= ask(&t, UNMAP, BASE, len, 0) != 0;
	}
	check(!failed, "200 rounds of map, attach, read, write, unmap (stopped at round %d)", round);
	finish(&s);
	finish(&t);
	check_no_leaks(baseline, "200 attaches");
}

static void test_snapshot(void)
{
	const uint64_t len = 16 * MIB;
	struct leak_baseline baseline = leak_baseline();
	struct worker s = spawn(0), t1 = spawn(1), t2 = spawn(1);
	struct grove_share_capture captured;
	uint64_t present, *one, *two, differ = 0, thrice = 0;
	int snapshot, rc, fd;

	ask(&s, MAP, BASE, len, 0);
	ask(&s, FILL, BASE, len, 51);
	ask(&s, MAP_SHARED_MEMORY, BASE + 32 * MIB, MIB, 0);
	ask(&s, FILL, BASE + 32 * MIB, MIB, 51);

	fd = next_fd();
	rc = capture(&s, BASE, 64 * MIB, NULL);
	check(rc == -EBUSY && next_fd() == fd, "capturing a running source is refused and makes no descriptor (%s)",
	      strerror(-rc));
	stop(&s);
	present = present_pages(s.pid, BASE, len);
	snapshot = capture(&s, BASE, 64 * MIB, &captured);
	check(snapshot >= 0, "capture 16 MiB (%s)", snapshot < 0 ? strerror(-snapshot) : "ok");
	check(captured.vmas == 1 && captured.pages == present,
	      "the snapshot holds the private VMA and all its pages, not the shared one (%llu VMAs, %llu of %llu pages)",
	      (unsigned long long)captured.vmas, (unsigned long long)captured.pages, (unsigned long long)present);
	rc = capture(&s, BASE + MIB, len, NULL);
	check(rc == -ERANGE, "a capture range that cuts a VMA is refused (%s)", strerror(-rc));

	/* The source goes on, and then goes away, before any target exists. */
	resume(&s);
	ask(&s, FILL, BASE, len, 52);
	finish(&s);

	ask(&t1, MAP, BASE, len, 0);
	ask(&t2, MAP, BASE, len, 0);
	rc = attach_from(snapshot, &t1, BASE, len);
	check(rc == 0 && ask(&t1, VERIFY, BASE, len, 51) == 0,
	      "a target attached after the source moved on and exited reads the capture-point memory (%s)",
	      strerror(-rc));
	rc = attach_from(snapshot, &t2, BASE, len);
	check(rc == 0, "a second target attaches from the same snapshot (%s)", strerror(-rc));
	one = calloc(len / PAGE, 8);
	two = calloc(len / PAGE, 8);
	pagemap(t1.pid, BASE, len / PAGE, one);
	pagemap(t2.pid, BASE, len / PAGE, two);
	for (uint64_t i = 0; i < len / PAGE; i++) {
		differ += PM_PFN(one[i]) != PM_PFN(two[i]) || !(one[i] & PM_PRESENT);
		thrice += (one[i] & PM_PRESENT) && mapcount(PM_PFN(one[i])) == 3;
	}
	check(differ == 0 && thrice == len / PAGE,
	      "both targets map the snapshot's very pages, three mappings each (%llu differ, %llu of %llu thrice)",
	      (unsigned long long)differ, (unsigned long long)thrice, (unsigned long long)(len / PAGE));
	close(snapshot);
	check(ask(&t1, VERIFY, BASE, len, 51) == 0 && ask(&t2, VERIFY, BASE, len, 51) == 0 &&
	      mapcount(PM_PFN(pagemap_entry(t1.pid, BASE))) == 2,
	      "closing the snapshot leaves the targets their memory, now mapped twice");
	ask(&t1, FILL, BASE, len, 53);
	check(ask(&t2, VERIFY, BASE, len, 51) == 0, "one target's writes stay its own");
	rc = attach_from(t1.pidfd, &t2, BASE, len);
	check(rc == -EINVAL, "a pidfd given as a snapshot is refused (%s)", strerror(-rc));
	finish(&t1);
	finish(&t2);

	/* Snapshots made and dropped in a loop. */
	s = spawn(0);
	ask(&s, MAP, BASE, len, 0);
	ask(&s, FILL, BASE, len, 54);
	stop(&s);
	for (int round = 0; round < 100; round++) {
		snapshot = capture(&s, BASE, len, NULL);
		if (snapshot < 0)
			break;
		close(snapshot);
	}
	check(snapshot >= 0, "100 snapshots made and closed");
	finish(&s);
	check_no_leaks(baseline, "snapshots");
}

static int attach_as_nobody(struct worker *s, struct worker *t)
{
	int status;
	pid_t child = fork();

	if (child == 0) {
		if (setresuid(65534, 65534, 65534))
			_exit(100);
		if (open(GROVE_SHARE_DEVICE, O_RDWR) >= 0 || errno != EACCES)
			_exit(101);
		_exit(attach(s, t, BASE, 4 * MIB, NULL) == -EPERM ? 0 : 102);
	}
	waitpid(child, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

static void test_refusals(void)
{
	const uint64_t len = 4 * MIB;
	struct worker s, t, running = spawn(0), other;
	int rc;

	pair_up(&s, &t, len, 41);
	check(attach_as_nobody(&s, &t) == 0, "a non-root caller cannot open the device, nor use a descriptor it was given");

	ask(&running, MAP, BASE, len, 0);
	ask(&running, FILL, BASE, len, 42);
	rc = attach(&running, &t, BASE, len, NULL);
	check(rc == -EBUSY, "a source that is not stopped or frozen is refused (%s)", strerror(-rc));

	rc = attach(&s, &t, BASE, len / 2, NULL);
	check(rc == -ERANGE, "a range that cuts a VMA is refused (%s)", strerror(-rc));
	rc = attach(&s, &t, BASE + 1, len, NULL);
	check(rc == -EINVAL, "an unaligned range is refused (%s)", strerror(-rc));
	rc = attach(&s, &s, BASE, len, NULL);
	check(rc == -EINVAL, "a process cannot be its own target (%s)", strerror(-rc));
	{
		struct worker bad = s;

		bad.pidfd = 9999;
		rc = attach(&bad, &t, BASE, len, NULL);
		check(rc == -EBADF, "a source that is not a pidfd is refused (%s)", strerror(-rc));
	}

	/* A target whose mapping differs, or was touched already. */
	other = spawn(1);
	ask(&other, MAP, BASE, len / 2, 0);
	rc = attach(&s, &other, BASE, len, NULL);
	check(rc == -ENXIO, "a target without a VMA of the same bounds is refused (%s)", strerror(-rc));
	finish(&other);
	other = spawn(1);
	ask(&other, MAP, BASE, len, 0);
	ask(&other, FILL, BASE, len, 44);
	rc = attach(&s, &other, BASE, len, NULL);
	check(rc == 0 && ask(&other, VERIFY, BASE, len, 41) == 0 && census(s.pid, other.pid, BASE, len).differ == 0,
	      "a target range that held pages of its own gets the source's in their place (%s)", strerror(-rc));
	finish(&other);
	other = spawn(1);
	ask(&other, MAP, BASE, len, 0);
	ask(&other, LOCK, BASE, len, 0);
	rc = attach(&s, &other, BASE, len, NULL);
	check(rc == -EOPNOTSUPP, "an mlocked target is refused (%s)", strerror(-rc));
	finish(&other);

	/* Mappings that are not private anonymous memory, in the source. */
	finish(&s);
	s = spawn(0);
	ask(&s, MAP_SHARED_MEMORY, BASE, len, 0);
	ask(&s, FILL, BASE, len, 43);
	ask(&s, MAP_OWN_BINARY, BASE + 16 * MIB, PAGE, 0);
	stop(&s);
	rc = attach(&s, &t, BASE, len, NULL);
	check(rc == -EOPNOTSUPP, "a shared mapping is refused (%s)", strerror(-rc));
	rc = attach(&s, &t, BASE + 16 * MIB, PAGE, NULL);
	check(rc == -EOPNOTSUPP, "a file mapping is refused (%s)", strerror(-rc));
	rc = attach(&s, &t, BASE + 512 * MIB, len, NULL);
	check(rc == -ENXIO, "a range with nothing mapped in the source is refused (%s)", strerror(-rc));
	check(present_pages(t.pid, BASE, len) == 0 && ask(&t, VERIFY, BASE, len, 0) == 0,
	      "after every refusal the target's range is still empty");
	finish(&s);
	finish(&t);
	finish(&running);
}

int main(void)
{
	guest_init();
	device = open(GROVE_SHARE_DEVICE, O_RDWR | O_CLOEXEC);
	if (device < 0)
		die("opening " GROVE_SHARE_DEVICE);
	check(ioctl(device, GROVE_SHARE_ABI_VERSION) == GROVE_SHARE_ABI, "the device speaks ABI %d", GROVE_SHARE_ABI);
	test_sharing();
	test_lifetimes();
	test_fork_of_target_sees_fork_point();
	test_split_target();
	test_repeated();
	test_snapshot();
	test_refusals();
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
