// SPDX-License-Identifier: GPL-2.0
/*
 * grove_share: share a frozen process's private anonymous memory
 * copy-on-write into another process, as fork() shares a parent's memory
 * with its child. Grove's privileged helper uses it so that a branch's
 * restored processes start with their source's pages instead of copies.
 *
 * The work is fork's own: for each VMA, anon_vma_fork() links the target's
 * VMA into the source's anon_vma chain (so reverse mapping, reclaim,
 * migration, KSM and THP find both sides) and copy_page_range()
 * write-protects the source's PTEs and maps the same pages read-only in
 * the target. The kernel's copy-on-write fault then separates the two on
 * the first write, on either side.
 *
 * A snapshot is an mm_struct no task runs in, filled the same way: the
 * source's VMAs are duplicated into it and shared copy-on-write, so the
 * source can be let go before any target exists.
 *
 * Those functions, the ones that fit a target VMA to the source's
 * (split_vma, unlink_anon_vmas), the few it takes to make and fill an mm
 * (mm_alloc, vm_area_dup/free, insert_vm_struct), flush_tlb_mm_range() and
 * pidfd_get_task() are not exported to modules (mm_internals below). They
 * are found through kallsyms (itself found with a kprobe, the one way left
 * since 5.7) and used with the prototypes of the headers this module was
 * built against. That is only sound on the
 * very kernel build those headers came from, so the module refuses to load
 * anywhere else: see check_kernel_build() and find_symbols().
 *
 * It is built for two kernel series, Debian 12's 6.1 and the 6.12 Debian 12
 * also ships. Between them the mm changed: vm_flags is changed through
 * helpers, page faults can run under a VMA's own lock instead of the mmap
 * lock (so a VMA being changed is write-locked, as dup_mmap does),
 * zap_page_range() went, and split_vma() became private to mm/ and takes a
 * VMA iterator. The places that differ test GROVE_MM_612.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/rmap.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/kprobes.h>
#include <linux/kallsyms.h>
#include <linux/utsname.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/anon_inodes.h>
#include <linux/file.h>

#include <linux/version.h>

#include <generated/utsversion.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define GROVE_MM_612 1
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define GROVE_MM_612 0
#else
#error "grove_share is written and proven for the 6.1 and 6.12 kernels only"
#endif

#include "grove_share.h"

/* asm/tlbflush.h hides this prototype from modules; it is copied here
 * unchanged from the headers (arch/x86/include/asm/tlbflush.h, the same in
 * 6.1 and 6.12). */
typedef void flush_tlb_mm_range_fn(struct mm_struct *mm, unsigned long start,
				   unsigned long end, unsigned int stride_shift,
				   bool freed_tables);
#define GROVE_TLB_FLUSH_ALL -1UL	/* TLB_FLUSH_ALL, hidden likewise */

#if GROVE_MM_612
/* 6.12 has split_vma() static in mm/vma.c, and __split_vma() (the same
 * without the map-count check) declared only in mm/vma.h, which no headers
 * package carries: its prototype is copied here from 6.12's mm/vma.c. A
 * compiler's specialised copy (__split_vma.isra.0 and the like) has another
 * name, so find_symbols() would refuse it rather than call it wrongly. */
typedef int split_vma_fn(struct vma_iterator *vmi, struct vm_area_struct *vma,
			 unsigned long addr, int new_below);
#endif

/* The non-exported functions, typed by the headers' own prototypes. */
static struct {
	typeof(&copy_page_range) copy_page_range;
	typeof(&anon_vma_fork) anon_vma_fork;
	flush_tlb_mm_range_fn *flush_tlb_mm_range;
	typeof(&pidfd_get_task) pidfd_get_task;
	typeof(&mm_alloc) mm_alloc;
	typeof(&vm_area_dup) vm_area_dup;
	typeof(&vm_area_free) vm_area_free;
	typeof(&insert_vm_struct) insert_vm_struct;
	typeof(&unlink_anon_vmas) unlink_anon_vmas;
#if GROVE_MM_612
	split_vma_fn *__split_vma;
	typeof(&sysctl_max_map_count) sysctl_max_map_count;
#else
	typeof(&split_vma) split_vma;
#endif
} mm_internals;

/* Two attaches with their source and target swapped would take the two
 * mmap locks in opposite orders; one attach at a time rules that out. */
static DEFINE_MUTEX(attach_mutex);

/*
 * The prototypes above are those of the headers; a different build of the
 * kernel could have changed them without changing its release name (Debian
 * keeps the ABI name for compatible exported symbols only). So the running
 * kernel's version string must name the very build the headers came from.
 */
#ifndef GROVE_SHARE_BUILT_FOR	/* kernel/test.sh sets it to prove the refusal */
#define GROVE_SHARE_BUILT_FOR UTS_VERSION
#endif

static int check_kernel_build(void)
{
	if (strcmp(init_utsname()->version, GROVE_SHARE_BUILT_FOR)) {
		pr_err("grove_share: built for kernel \"%s\", running \"%s\": refusing to load\n",
		       GROVE_SHARE_BUILT_FOR, init_utsname()->version);
		return -ENOEXEC;
	}
	return 0;
}

typedef unsigned long (*lookup_name_fn)(const char *name);

static lookup_name_fn find_kallsyms_lookup_name(void)
{
	struct kprobe probe = { .symbol_name = "kallsyms_lookup_name" };
	lookup_name_fn lookup;

	if (register_kprobe(&probe) < 0)
		return NULL;
	lookup = (lookup_name_fn)probe.addr;
	unregister_kprobe(&probe);
	return lookup;
}

/* A symbol is used only if kallsyms names its address as the very start of
 * a function (or variable) of that name, not a place inside another. */
static void *find_symbol(lookup_name_fn lookup, const char *name)
{
	char found[KSYM_SYMBOL_LEN], expected[KSYM_NAME_LEN + 8];
	unsigned long address = lookup(name);

	if (!address) {
		pr_err("grove_share: kernel symbol %s is missing: refusing to load\n", name);
		return NULL;
	}
	sprint_symbol(found, address);
	snprintf(expected, sizeof(expected), "%s+0x0/", name);
	if (strncmp(found, expected, strlen(expected))) {
		pr_err("grove_share: %s resolves to %s, not to the start of that symbol: refusing to load\n",
		       name, found);
		return NULL;
	}
	return (void *)address;
}

/* Each field of mm_internals and the kernel function that fills it. */
#define INTERNAL(name) { #name, (void **)&mm_internals.name }
static const struct {
	const char *name;
	void **slot;
} internals[] = {
	INTERNAL(copy_page_range), INTERNAL(anon_vma_fork), INTERNAL(flush_tlb_mm_range),
	INTERNAL(pidfd_get_task), INTERNAL(mm_alloc), INTERNAL(vm_area_dup), INTERNAL(vm_area_free),
	INTERNAL(insert_vm_struct), INTERNAL(unlink_anon_vmas),
#if GROVE_MM_612
	INTERNAL(__split_vma), INTERNAL(sysctl_max_map_count),
#else
	INTERNAL(split_vma),
#endif
};

static int find_symbols(void)
{
	lookup_name_fn lookup = find_kallsyms_lookup_name();
	int err = 0;

	if (!lookup) {
		pr_err("grove_share: kallsyms_lookup_name cannot be found (kprobes off?): refusing to load\n");
		return -ENOENT;
	}
	for (int i = 0; i < ARRAY_SIZE(internals); i++) {
		*internals[i].slot = find_symbol(lookup, internals[i].name);
		if (!*internals[i].slot)
			err = -ENOENT;	/* every missing one is named before refusing */
	}
	return err;
}

/* Stopped (SIGSTOP or ptrace, as CRIU leaves it) or frozen by a cgroup
 * freezer: no thread can write to the source's memory meanwhile. */
static bool task_is_held(struct task_struct *thread)
{
	return task_is_stopped_or_traced(thread) || thread->frozen ||
	       (READ_ONCE(thread->__state) & TASK_FROZEN);
}

static bool all_threads_held(struct task_struct *task)
{
	struct task_struct *thread;
	bool held = true;

	rcu_read_lock();
	for_each_thread(task, thread) {
		if (!task_is_held(thread)) {
			held = false;
			break;
		}
	}
	rcu_read_unlock();
	return held;
}

/* Flags under which fork's page-table copy is not the whole story
 * (userfaultfd, raw PFNs, hugetlb pools): refused on either side. A source
 * may be mlocked (as fork, the copy is not); a target may not, as its
 * locked pages would have to be present and accounted. MADV_DONTFORK and
 * MADV_WIPEONFORK say what a fork of that process gets, and stay with it. */
#define UNSHAREABLE_FLAGS (VM_SHARED | VM_IO | VM_PFNMAP | VM_MIXEDMAP | VM_HUGETLB | \
			   VM_UFFD_MISSING | VM_UFFD_WP | VM_UFFD_MINOR)
#define LOCKED_FLAGS (VM_LOCKED | VM_LOCKONFAULT)

static bool vma_is_shareable(struct vm_area_struct *vma)
{
	return vma_is_anonymous(vma) && !(vma->vm_flags & UNSHAREABLE_FLAGS) &&
	       (vma->vm_flags & VM_MAYWRITE);
}

/*
 * The target VMA for a source VMA, or an error saying why there is none. It
 * has the source VMA's bounds, or covers them and is split to them when the
 * pages are shared: fresh anonymous mappings that are adjacent merge into
 * one (CRIU's restored ones do), where the source's had distinct anon_vmas.
 */
static struct vm_area_struct *matching_target(struct mm_struct *target_mm,
					      struct vm_area_struct *source)
{
	struct vm_area_struct *target = vma_lookup(target_mm, source->vm_start);

	if (!target || target->vm_end < source->vm_end)
		return ERR_PTR(-ENXIO);
	if (!vma_is_shareable(target) || (target->vm_flags & LOCKED_FLAGS))
		return ERR_PTR(-EOPNOTSUPP);
	return target;
}

static int check_range(struct mm_struct *source_mm, struct mm_struct *target_mm,
		       struct grove_share_attach *request)
{
	VMA_ITERATOR(vmi, source_mm, request->start);
	struct vm_area_struct *source;
	int vmas = 0;

	for_each_vma_range(vmi, source, request->end) {
		struct vm_area_struct *target;
		int err = 0;

		if (source->vm_start < request->start || source->vm_end > request->end)
			err = -ERANGE;
		else if (!vma_is_shareable(source))
			err = -EOPNOTSUPP;
		target = err ? NULL : matching_target(target_mm, source);
		if (IS_ERR(target))
			err = PTR_ERR(target);
		if (err) {
			request->refused_at = source->vm_start;
			return err;
		}
		vmas++;
	}
	return vmas ? 0 : -ENXIO;
}

/* Exact: 6.12's counters are per CPU, and their quick read can be off by
 * what each CPU has not folded in yet (the guest saw 14 pages of 65,536). */
static unsigned long exact_mm_counter(struct mm_struct *mm, int member)
{
#if GROVE_MM_612
	return get_mm_counter_sum(mm, member);
#else
	return get_mm_counter(mm, member);
#endif
}

static unsigned long anon_pages(struct mm_struct *mm)
{
	return exact_mm_counter(mm, MM_ANONPAGES) + exact_mm_counter(mm, MM_SWAPENTS);
}

/* Keeps page faults out of a VMA being changed. Since 6.4 a fault may run
 * under the VMA's own lock rather than the mmap lock held here, so the VMA
 * is write-locked too, as dup_mmap() does (until the mmap lock is dropped). */
static void lock_vma_for_change(struct vm_area_struct *vma)
{
#if GROVE_MM_612
	vma_start_write(vma);
#endif
}

/* Splits a target VMA at ADDR, as mprotect() of part of it would (new_below:
 * the new VMA is the part below ADDR). */
static int split_target(struct mm_struct *mm, struct vm_area_struct *vma, unsigned long addr,
			int new_below)
{
#if GROVE_MM_612
	VMA_ITERATOR(vmi, mm, addr);

	if (mm->map_count >= READ_ONCE(*mm_internals.sysctl_max_map_count))
		return -ENOMEM;	/* split_vma()'s own check */
	return mm_internals.__split_vma(&vmi, vma, addr, new_below);
#else
	return mm_internals.split_vma(mm, vma, addr, new_below);
#endif
}

/* Unmaps [start, start + size) of one VMA: it reads zeros afterwards. */
static void zap_vma_range(struct vm_area_struct *vma, unsigned long start, unsigned long size)
{
	lock_vma_for_change(vma);
#if GROVE_MM_612
	zap_page_range_single(vma, start, size, NULL);
#else
	zap_page_range(vma, start, size);
#endif
}

/* Link one VMA into the source's anon_vma chain and share its pages, as
 * dup_mmap() does for each of a child's VMAs. */
static int share_vma(struct vm_area_struct *target, struct vm_area_struct *source)
{
	int err;

	lock_vma_for_change(source);
	lock_vma_for_change(target);

	/* Reverse mapping finds a page in a VMA by its offset: the target's
	 * must equal the source's (mremap keeps it). */
	target->vm_pgoff = source->vm_pgoff;
	err = mm_internals.anon_vma_fork(target, source);
	return err ? err : mm_internals.copy_page_range(target, source);
}

/* The source's PTEs are now read-only: no CPU may keep a writable
 * translation of them (fork flushes at the same point). */
static void flush_source(struct mm_struct *source_mm)
{
	mm_internals.flush_tlb_mm_range(source_mm, 0UL, GROVE_TLB_FLUSH_ALL, 0UL, true);
}

/*
 * The target's VMA over the source's, split to the source's bounds and made
 * fresh, as a fork's child's VMA is: whatever it held is unmapped and it
 * leaves its anon_vmas. (A restored process has a few pages written before
 * it can be attached: the kernel writes the rseq area's cpu_id when CRIU's
 * restorer registers it. The source's fork-point contents replace them.)
 */
static struct vm_area_struct *fit_target(struct mm_struct *target_mm, struct vm_area_struct *source)
{
	struct vm_area_struct *target = vma_lookup(target_mm, source->vm_start);
	int err = 0;

	if (target->vm_start < source->vm_start)
		err = split_target(target_mm, target, source->vm_start, 1);
	if (!err && target->vm_end > source->vm_end)
		err = split_target(target_mm, vma_lookup(target_mm, source->vm_start), source->vm_end, 0);
	if (err)
		return ERR_PTR(err);
	target = vma_lookup(target_mm, source->vm_start);
	if (target->anon_vma || !list_empty(&target->anon_vma_chain)) {
		zap_vma_range(target, target->vm_start, target->vm_end - target->vm_start);
		mm_internals.unlink_anon_vmas(target);
	}
	return target;
}

/*
 * Share every source VMA of [start, end) into its twin in the target. Only
 * allocation can fail here (everything else was checked); the pages already
 * shared are then unmapped from the target again, so its range reads zeros
 * as before.
 */
static int share_range(struct mm_struct *source_mm, struct mm_struct *target_mm,
		       unsigned long start, unsigned long end, struct grove_share_attach *result)
{
	VMA_ITERATOR(vmi, source_mm, start);
	struct vm_area_struct *source;
	unsigned long before = anon_pages(target_mm);
	int err = 0;

	for_each_vma_range(vmi, source, end) {
		struct vm_area_struct *target = fit_target(target_mm, source);

		err = IS_ERR(target) ? PTR_ERR(target) : share_vma(target, source);
		if (err)
			break;
		result->vmas++;
	}
	flush_source(source_mm);
	if (err) {
		VMA_ITERATOR(undo, target_mm, start);
		struct vm_area_struct *target;

		for_each_vma_range(undo, target, end) {
			unsigned long from = max(start, target->vm_start);

			zap_vma_range(target, from, min(end, target->vm_end) - from);
		}
		result->vmas = 0;
		return err;
	}
	result->pages = anon_pages(target_mm) - before;
	return 0;
}

static struct task_struct *task_of_pidfd(int pidfd)
{
	unsigned int flags;

	return mm_internals.pidfd_get_task(pidfd, &flags);
}

/* Where shared memory comes from: a held process, or a snapshot (task NULL). */
struct source {
	struct task_struct *task;
	struct mm_struct *mm;
};

static const struct file_operations snapshot_fops;

static int get_snapshot(int fd, struct source *source)
{
	struct file *file = fget(fd);

	if (!file)
		return -EBADF;
	if (file->f_op != &snapshot_fops) {
		fput(file);
		return -EINVAL;
	}
	source->task = NULL;
	source->mm = file->private_data;
	mmget(source->mm);
	fput(file);
	return 0;
}

static int get_process(int pidfd, struct source *source)
{
	source->task = task_of_pidfd(pidfd);
	if (IS_ERR(source->task))
		return PTR_ERR(source->task);
	source->mm = get_task_mm(source->task);
	if (!source->mm) {
		put_task_struct(source->task);
		return -ESRCH;
	}
	return 0;
}

static void put_source(struct source *source)
{
	mmput(source->mm);
	if (source->task)
		put_task_struct(source->task);
}

/* A snapshot never runs; a process must be held while its memory is read. */
static bool source_is_held(struct source *source)
{
	return !source->task || all_threads_held(source->task);
}

static bool range_is_valid(unsigned long start, unsigned long end)
{
	return start < end && PAGE_ALIGNED(start) && PAGE_ALIGNED(end) && end <= TASK_SIZE_MAX;
}

/* Both mms write-locked, one pair at a time: two requests with source and
 * target swapped would otherwise take the locks in opposite orders. */
static int lock_pair(struct mm_struct *first, struct mm_struct *second)
{
	mutex_lock(&attach_mutex);
	if (mmap_write_lock_killable(first)) {
		mutex_unlock(&attach_mutex);
		return -EINTR;
	}
	mmap_write_lock_nested(second, SINGLE_DEPTH_NESTING);
	return 0;
}

static void unlock_pair(struct mm_struct *first, struct mm_struct *second)
{
	mmap_write_unlock(second);
	mmap_write_unlock(first);
	mutex_unlock(&attach_mutex);
}

static int attach(struct grove_share_attach *request)
{
	struct source source;
	struct task_struct *target_task;
	struct mm_struct *target_mm;
	int err;

	if (!range_is_valid(request->start, request->end) || request->reserved ||
	    (request->flags & ~GROVE_SHARE_FROM_SNAPSHOT))
		return -EINVAL;
	err = request->flags & GROVE_SHARE_FROM_SNAPSHOT ? get_snapshot(request->source_fd, &source) :
							    get_process(request->source_fd, &source);
	if (err)
		return err;
	target_task = task_of_pidfd(request->target_pidfd);
	if (IS_ERR(target_task)) {
		put_source(&source);
		return PTR_ERR(target_task);
	}
	target_mm = get_task_mm(target_task);
	err = !target_mm ? -ESRCH : target_mm == source.mm ? -EINVAL : lock_pair(source.mm, target_mm);
	if (!err) {
		err = source_is_held(&source) ? 0 : -EBUSY;
		if (!err)
			err = check_range(source.mm, target_mm, request);
		if (!err)
			err = share_range(source.mm, target_mm, request->start, request->end, request);
		unlock_pair(source.mm, target_mm);
	}
	if (target_mm)
		mmput(target_mm);
	put_task_struct(target_task);
	put_source(&source);
	return err;
}

/* ---- snapshots ------------------------------------------------------------ */

static int snapshot_release(struct inode *inode, struct file *file)
{
	mmput(file->private_data);
	return 0;
}

static const struct file_operations snapshot_fops = {
	.owner = THIS_MODULE,
	.release = snapshot_release,
};

/* An empty mm that belongs to no task (and so to no memory cgroup: its
 * pages are the source's, charged where they already are). */
static struct mm_struct *empty_snapshot(void)
{
	struct mm_struct *snapshot = mm_internals.mm_alloc();

	if (!snapshot)
		return NULL;
#ifdef CONFIG_MEMCG
	WRITE_ONCE(snapshot->owner, NULL);
#endif
	return snapshot;
}

/* A copy of a source VMA in the snapshot, sharing its pages. */
static int capture_vma(struct mm_struct *snapshot, struct vm_area_struct *source)
{
	struct vm_area_struct *copy = mm_internals.vm_area_dup(source);
	int err;

	if (!copy)
		return -ENOMEM;
	copy->vm_mm = snapshot;
	/* As a fork's child: nothing to keep resident. */
#if GROVE_MM_612
	vm_flags_clear(copy, LOCKED_FLAGS);
#else
	copy->vm_flags &= ~LOCKED_FLAGS;
#endif
	/* vm_area_dup() copies these pointers without references: the anon_vma
	 * is linked afresh below, and a snapshot needs no NUMA policy. */
	copy->anon_vma = NULL;
#ifdef CONFIG_NUMA
	copy->vm_policy = NULL;
#endif
	err = mm_internals.insert_vm_struct(snapshot, copy);
	if (err) {
		mm_internals.vm_area_free(copy);
		return err;
	}
	return share_vma(copy, source);
}

static int check_capture_range(struct mm_struct *source_mm, unsigned long start, unsigned long end)
{
	VMA_ITERATOR(vmi, source_mm, start);
	struct vm_area_struct *source;
	int shareable = 0;

	for_each_vma_range(vmi, source, end) {
		if (source->vm_start < start || source->vm_end > end)
			return -ERANGE;
		shareable += vma_is_shareable(source);
	}
	return shareable ? 0 : -ENXIO;
}

static int capture_range(struct mm_struct *source_mm, struct mm_struct *snapshot,
			 struct grove_share_capture *request)
{
	VMA_ITERATOR(vmi, source_mm, request->start);
	struct vm_area_struct *source;
	int err = 0;

	for_each_vma_range(vmi, source, request->end) {
		if (!vma_is_shareable(source))
			continue;
		err = capture_vma(snapshot, source);
		if (err)
			break;
		request->vmas++;
	}
	flush_source(source_mm);
	request->pages = anon_pages(snapshot);
	return err;
}

/* The snapshot, or an error; on error nothing of it is left. */
static struct mm_struct *capture(struct grove_share_capture *request)
{
	struct source source;
	struct mm_struct *snapshot;
	int err;

	if (!range_is_valid(request->start, request->end) || request->reserved)
		return ERR_PTR(-EINVAL);
	err = get_process(request->source_pidfd, &source);
	if (err)
		return ERR_PTR(err);
	snapshot = empty_snapshot();
	err = snapshot ? lock_pair(source.mm, snapshot) : -ENOMEM;
	if (!err) {
		err = source_is_held(&source) ? 0 : -EBUSY;
		if (!err)
			err = check_capture_range(source.mm, request->start, request->end);
		if (!err)
			err = capture_range(source.mm, snapshot, request);
		unlock_pair(source.mm, snapshot);
	}
	put_source(&source);
	if (!err)
		return snapshot;
	/* The snapshot goes with whatever it had shared already. */
	if (snapshot)
		mmput(snapshot);
	return ERR_PTR(err);
}

/* ---- requests ------------------------------------------------------------- */

static long attach_request(struct grove_share_attach __user *argument)
{
	struct grove_share_attach request;
	int err;

	if (copy_from_user(&request, argument, sizeof(request)))
		return -EFAULT;
	request.vmas = request.pages = request.refused_at = 0;
	err = attach(&request);
	/* A refusal says where, too. */
	if (copy_to_user(argument, &request, sizeof(request)))
		return -EFAULT;
	return err;
}

/* The descriptor is installed only once the results are out, so a request
 * that fails at any step leaves the caller no new descriptor. */
static long capture_request(struct grove_share_capture __user *argument)
{
	struct grove_share_capture request;
	struct mm_struct *snapshot;
	struct file *file;
	int fd;

	if (copy_from_user(&request, argument, sizeof(request)))
		return -EFAULT;
	request.vmas = request.pages = 0;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	snapshot = capture(&request);
	if (IS_ERR(snapshot)) {
		put_unused_fd(fd);
		return PTR_ERR(snapshot);
	}
	file = anon_inode_getfile("[grove-share-snapshot]", &snapshot_fops, snapshot, O_RDWR);
	if (IS_ERR(file)) {
		mmput(snapshot);
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	if (copy_to_user(argument, &request, sizeof(request))) {
		fput(file);
		put_unused_fd(fd);
		return -EFAULT;
	}
	fd_install(fd, file);
	return fd;
}

static long grove_share_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	/* The device is root's (0600), but a descriptor can be passed on: the
	 * caller itself must hold CAP_SYS_ADMIN in the host's namespace. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case GROVE_SHARE_ABI_VERSION:
		return GROVE_SHARE_ABI;
	case GROVE_SHARE_ATTACH:
		return attach_request((void __user *)arg);
	case GROVE_SHARE_CAPTURE:
		return capture_request((void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations grove_share_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = grove_share_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice grove_share_device = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "grove-share",
	.fops = &grove_share_fops,
	.mode = 0600,
};

static int __init grove_share_init(void)
{
	int err = check_kernel_build();

	if (!err)
		err = find_symbols();
	if (!err)
		err = misc_register(&grove_share_device);
	if (!err)
		pr_info("grove_share: ready (ABI %d)\n", GROVE_SHARE_ABI);
	return err;
}

static void __exit grove_share_exit(void)
{
	misc_deregister(&grove_share_device);
}

module_init(grove_share_init);
module_exit(grove_share_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Grove: share a frozen process's anonymous memory copy-on-write into another");
