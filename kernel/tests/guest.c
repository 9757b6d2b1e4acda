// SPDX-License-Identifier: GPL-2.0
/* The guest test programs' common ground (guest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest.h"

int failures, checks;

void check(int ok, const char *fmt, ...)
{
	va_list args;

	checks++;
	if (!ok)
		failures++;
	printf("%s %d - ", ok ? "ok" : "not ok", checks);
	va_start(args, fmt);
	vprintf(fmt, args);
	va_end(args);
	printf("\n");
	fflush(stdout);
}

void die(const char *what)
{
	printf("not ok - %s: %s\n", what, strerror(errno));
	printf("# bail out\n");
	exit(2);
}

/* ---- the fill pattern ----------------------------------------------------- */

/* The page at ADDR, filled with SEED, holds pattern(SEED, ADDR) in its
 * first and last word: any sub-range can be checked on its own. */
uint64_t pattern(uint64_t seed, uint64_t addr)
{
	return (seed * 0x9e3779b97f4a7c15ULL) ^ ((addr - BASE) / PAGE + 1);
}

void fill(uint64_t addr, uint64_t len, uint64_t seed)
{
	for (uint64_t a = addr; a < addr + len; a += PAGE) {
		volatile uint64_t *p = (uint64_t *)a;

		p[0] = pattern(seed, a);
		p[PAGE / 8 - 1] = pattern(seed, a);
	}
}

/* Pages that do not hold the fill pattern; seed 0 expects zeros. */
uint64_t verify(uint64_t addr, uint64_t len, uint64_t seed)
{
	uint64_t bad = 0;

	for (uint64_t a = addr; a < addr + len; a += PAGE) {
		volatile uint64_t *p = (uint64_t *)a;
		uint64_t want = seed ? pattern(seed, a) : 0;

		if (p[0] != want || p[PAGE / 8 - 1] != want)
			bad++;
	}
	return bad;
}

/* ---- the kernel's view: pagemap, kpagecount, kpageflags, vmstat ---------- */

static int kpagecount = -1, kpageflags = -1;

static uint64_t read_u64(int fd, uint64_t index)
{
	uint64_t value = 0;

	if (pread(fd, &value, 8, (off_t)(index * 8)) != 8)
		die("reading /proc/kpage*");
	return value;
}

/* The pagemap entries of [addr, addr + n pages) of a process, into out. */
void pagemap(pid_t pid, uint64_t addr, uint64_t n, uint64_t *out)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0 || pread(fd, out, n * 8, (off_t)(addr / PAGE * 8)) != (ssize_t)(n * 8))
		die(path);
	close(fd);
}

uint64_t pagemap_entry(pid_t pid, uint64_t addr)
{
	uint64_t entry;

	pagemap(pid, addr, 1, &entry);
	return entry;
}


uint64_t mapcount(uint64_t pfn)
{
	return read_u64(kpagecount, pfn);
}

int page_flag(uint64_t pfn, int bit)
{
	return (int)((read_u64(kpageflags, pfn) >> bit) & 1);
}

long vmstat(const char *name)
{
	char line[256];
	long value = -1;
	size_t n = strlen(name);
	FILE *f = fopen("/proc/vmstat", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ' ')
			value = atol(line + n + 1);
	if (f)
		fclose(f);
	return value;
}

/* Active objects of one slab cache (slub_nomerge keeps anon_vma's own). */
static long slab_objects(const char *cache)
{
	char line[512], name[64];
	long active = -1, objects;
	FILE *f = fopen("/proc/slabinfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", name, &objects) == 2 && !strcmp(name, cache))
			active = objects;
	if (f)
		fclose(f);
	return active;
}

/* Pages of [addr, addr+len) present in a process. */
uint64_t present_pages(pid_t pid, uint64_t addr, uint64_t len)
{
	uint64_t n = 0, count = len / PAGE, *entries = calloc(count, 8);

	pagemap(pid, addr, count, entries);
	for (uint64_t i = 0; i < count; i++)
		n += (entries[i] & (PM_PRESENT | PM_SWAPPED)) != 0;
	free(entries);
	return n;
}


struct leak_baseline leak_baseline(void)
{
	struct leak_baseline b = {
		vmstat("nr_anon_pages"), slab_objects("anon_vma"), slab_objects("anon_vma_chain"),
		slab_objects("mm_struct"), slab_objects("vm_area_struct"),
	};

	return b;
}

/* After every process of a test is gone: nothing it made may be left. */
void check_no_leaks(struct leak_baseline before, const char *after_what)
{
	struct leak_baseline now = leak_baseline();

	check(now.anon <= before.anon + 64, "no anonymous pages leaked by %s (%ld before, %ld after)",
	      after_what, before.anon, now.anon);
	check(now.anon_vma <= before.anon_vma + 64 && now.anon_vma_chain <= before.anon_vma_chain + 64,
	      "no anon_vma or anon_vma_chain leaked by %s (%ld/%ld before, %ld/%ld after)", after_what,
	      before.anon_vma, before.anon_vma_chain, now.anon_vma, now.anon_vma_chain);
	/* An exited process's mm_struct can outlive it a moment as a CPU's lazy
	 * TLB mm: one per CPU (two here) is not a leak; a snapshot's would be
	 * one per snapshot. */
	check(now.mm <= before.mm + 2 && now.vmas <= before.vmas + 64,
	      "no mm_struct or VMA leaked by %s (%ld/%ld before, %ld/%ld after)", after_what,
	      before.mm, before.vmas, now.mm, now.vmas);
}


void guest_init(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	kpagecount = open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);
	kpageflags = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (kpagecount < 0 || kpageflags < 0)
		die("opening /proc/kpage*");
}
