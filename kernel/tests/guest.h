/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the guest's test programs (share_test, fork_test) share: TAP-like
 * checks, the fill pattern, and the kernel's view of a process's pages
 * (pagemap, kpagecount, kpageflags, vmstat, slabinfo).
 */
#ifndef GROVE_GUEST_H
#define GROVE_GUEST_H

#include <stdint.h>
#include <sys/types.h>

#define PAGE 4096UL
#define MIB (1024UL * 1024)
#define BASE 0x600000000000UL	/* where every test maps its memory */

#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_PFN(entry) ((entry) & ((1ULL << 55) - 1))
#define KPF_THP 22

extern int failures, checks;

/* Opens /proc/kpagecount and /proc/kpageflags; first thing in main(). */
void guest_init(void);
void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void die(const char *what) __attribute__((noreturn));

uint64_t pattern(uint64_t seed, uint64_t addr);
void fill(uint64_t addr, uint64_t len, uint64_t seed);
uint64_t verify(uint64_t addr, uint64_t len, uint64_t seed);

void pagemap(pid_t pid, uint64_t addr, uint64_t n, uint64_t *out);
uint64_t pagemap_entry(pid_t pid, uint64_t addr);
uint64_t mapcount(uint64_t pfn);
int page_flag(uint64_t pfn, int bit);
long vmstat(const char *name);
uint64_t present_pages(pid_t pid, uint64_t addr, uint64_t len);

struct leak_baseline {
	long anon, anon_vma, anon_vma_chain, mm, vmas;
};

struct leak_baseline leak_baseline(void);
void check_no_leaks(struct leak_baseline before, const char *after_what);

#endif
