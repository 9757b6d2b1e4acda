/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user-space contract of grove_share: /dev/grove-share, owned by root,
 * shares a frozen source's private anonymous memory copy-on-write into
 * another process, the way fork() shares a parent's memory with its child.
 * One header for the module, its tests and the tools that call it.
 */
#ifndef GROVE_SHARE_H
#define GROVE_SHARE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GROVE_SHARE_DEVICE "/dev/grove-share"
#define GROVE_SHARE_ABI 1

/*
 * GROVE_SHARE_ATTACH: every VMA of the source inside [start, end) must be a
 * private anonymous mapping, and the target must have a private anonymous
 * VMA with exactly the same bounds that has never held a page (as a fresh
 * mmap() has not). Afterwards the target's range reads what the source's
 * did at this instant; a write on either side copies, as after fork().
 * Every thread of the source must be stopped, traced or frozen. All checks
 * come first: a refused request changes nothing.
 */
struct grove_share_attach {
	__s32 source_pidfd;
	__s32 target_pidfd;
	__u64 start;
	__u64 end;
	__u64 vmas;	/* out: VMAs attached */
	__u64 pages;	/* out: pages (base pages, THP counted as 512) now shared */
};

#define GROVE_SHARE_IOC_MAGIC 0xb7
#define GROVE_SHARE_ABI_VERSION _IO(GROVE_SHARE_IOC_MAGIC, 0)
#define GROVE_SHARE_ATTACH _IOWR(GROVE_SHARE_IOC_MAGIC, 1, struct grove_share_attach)

#endif
