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
 * VMA over the same addresses (split to the source's bounds if it is
 * larger). Afterwards the target's range reads what the source's did at
 * this instant, in place of whatever it held; a write on either side
 * copies, as after fork().
 * The source is a process (a pidfd) whose every thread is stopped, traced
 * or frozen, or, with GROVE_SHARE_FROM_SNAPSHOT, a snapshot descriptor.
 * All checks come first: a refused request changes nothing.
 */
struct grove_share_attach {
	__s32 source_fd;
	__s32 target_pidfd;
	__u32 flags;
	__u32 reserved;	/* must be 0 */
	__u64 start;
	__u64 end;
	__u64 vmas;	/* out: VMAs attached */
	__u64 pages;	/* out: pages (base pages, a THP counts 512) now shared */
	__u64 refused_at;	/* out, on a refusal: the start of the source VMA it is about */
};

#define GROVE_SHARE_FROM_SNAPSHOT (1U << 0)

/*
 * GROVE_SHARE_CAPTURE: the private anonymous memory of a held process
 * inside [start, end), captured at this instant into a snapshot that no
 * process runs in: the pages are shared with the source copy-on-write, so
 * the source can be let go at once and targets attached from the snapshot
 * later. Other VMAs in the range are skipped (their contents are the
 * caller's to restore); a VMA that straddles start or end is refused.
 * Returns the snapshot's descriptor (close-on-exec); closing its last
 * reference frees whatever the snapshot alone still holds.
 */
struct grove_share_capture {
	__s32 source_pidfd;
	__u32 reserved;	/* must be 0 */
	__u64 start;
	__u64 end;
	__u64 vmas;	/* out: VMAs captured */
	__u64 pages;	/* out: pages captured */
};

#define GROVE_SHARE_IOC_MAGIC 0xb7
#define GROVE_SHARE_ABI_VERSION _IO(GROVE_SHARE_IOC_MAGIC, 0)
#define GROVE_SHARE_ATTACH _IOWR(GROVE_SHARE_IOC_MAGIC, 1, struct grove_share_attach)
#define GROVE_SHARE_CAPTURE _IOWR(GROVE_SHARE_IOC_MAGIC, 2, struct grove_share_capture)

#endif
