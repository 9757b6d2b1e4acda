/*
 * grove-quota: btrfs simple quotas (squota, Linux >= 6.7) on the pool, which
 * btrfs-progs 6.2 (Debian 12) cannot enable. A simple quota charges each
 * extent to the subvolume that wrote it, once, at allocation: a snapshot
 * starts at nothing and is charged only for what it writes after, and no
 * backreference walk runs at snapshot or delete (what made full qgroups too
 * slow for a fork's freeze; docs/disk-quotas.md).
 *
 *   grove-quota enable MOUNT
 *       turns simple quotas on for the btrfs filesystem mounted at MOUNT,
 *       unless quotas are on already. Prints the mode then in force and the
 *       filesystem's id (where /sys/fs/btrfs/ID/qgroups counts each
 *       subvolume's bytes): "simple ID", or "full ID" (qgroups someone
 *       enabled before: limits hold there too, only snapshots cost more).
 *
 *   grove-quota limit SUBVOLUME BYTES [SUBVOLUME BYTES]...
 *       the most each SUBVOLUME's own qgroup may be charged (0: no limit);
 *       a write past it fails with EDQUOT. Prints each one's id, a line each.
 *
 * Exits 0, or 1 with the reason on stderr (2: usage). Built by
 * build/host/setup.sh; called through host/run.ts (host/quota.ts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Newer than Debian 12's kernel headers (Linux 6.7). */
#ifndef BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA
#define BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA 4
#endif
#ifndef BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE
#define BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE (1ULL << 3)
#endif

static void die(const char *what, const char *path)
{
	fprintf(stderr, "grove-quota: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: grove-quota enable MOUNT\n       grove-quota limit SUBVOLUME BYTES [SUBVOLUME BYTES]...\n");
	exit(2);
}

static int open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) die("open", path);
	return fd;
}

/* The id of the subvolume whose root directory FD is (anything else is refused). */
static uint64_t subvolume_id(int fd, const char *path)
{
	struct stat st;
	if (fstat(fd, &st) != 0) die("stat", path);
	if (st.st_ino != BTRFS_FIRST_FREE_OBJECTID) {
		errno = EINVAL;
		die("not a subvolume:", path);
	}
	struct btrfs_ioctl_ino_lookup_args args = { .treeid = 0, .objectid = BTRFS_FIRST_FREE_OBJECTID };
	if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args) != 0) die("BTRFS_IOC_INO_LOOKUP", path);
	return args.treeid;
}

/* "off", "simple" or "full", from the quota tree's status item (no quota tree: off). */
static const char *mode(int fd, const char *path)
{
	struct btrfs_ioctl_search_args args = { 0 };
	struct btrfs_ioctl_search_key *key = &args.key;
	key->tree_id = BTRFS_QUOTA_TREE_OBJECTID;
	key->min_type = key->max_type = BTRFS_QGROUP_STATUS_KEY;
	key->max_transid = UINT64_MAX;
	key->nr_items = 1;
	if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &args) != 0) {
		if (errno == ENOENT) return "off";
		die("BTRFS_IOC_TREE_SEARCH", path);
	}
	struct btrfs_ioctl_search_header header;
	struct btrfs_qgroup_status_item status;
	memcpy(&header, args.buf, sizeof header);
	if (key->nr_items == 0 || header.len < sizeof status) return "off";
	memcpy(&status, args.buf + sizeof header, sizeof status);
	uint64_t flags = le64toh(status.flags);
	if (!(flags & BTRFS_QGROUP_STATUS_FLAG_ON)) return "off";
	return flags & BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE ? "simple" : "full";
}

static void enable(const char *mount)
{
	int fd = open_dir(mount);
	if (strcmp(mode(fd, mount), "off") == 0) {
		struct btrfs_ioctl_quota_ctl_args args = { .cmd = BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA };
		if (ioctl(fd, BTRFS_IOC_QUOTA_CTL, &args) != 0) die("BTRFS_IOC_QUOTA_CTL (enable simple quotas)", mount);
	}
	struct btrfs_ioctl_fs_info_args info = { 0 };
	if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) != 0) die("BTRFS_IOC_FS_INFO", mount);
	const unsigned char *id = info.fsid;
	printf("%s %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", mode(fd, mount), id[0], id[1], id[2], id[3], id[4],
	       id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12], id[13], id[14], id[15]);
}

static uint64_t bytes(const char *text)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(text, &end, 10);
	if (errno || *end || end == text || text[0] == '-') usage();
	return n;
}

/* A simple quota charges a subvolume's referenced and exclusive bytes alike: the referenced limit is the one set. */
static void limit(const char *path, uint64_t max)
{
	int fd = open_dir(path);
	struct btrfs_ioctl_qgroup_limit_args args = { .qgroupid = subvolume_id(fd, path) };
	args.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	/* With the flag set, the kernel takes (u64)-1 for "no limit". */
	args.lim.max_rfer = max == 0 ? UINT64_MAX : max;
	if (ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &args) != 0) die("BTRFS_IOC_QGROUP_LIMIT", path);
	printf("%" PRIu64 "\n", (uint64_t)args.qgroupid);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "enable") == 0) enable(argv[2]);
	else if (argc >= 4 && argc % 2 == 0 && strcmp(argv[1], "limit") == 0) {
		for (int i = 2; i < argc; i += 2) bytes(argv[i + 1]); /* every size checked before the first is set */
		for (int i = 2; i < argc; i += 2) limit(argv[i], bytes(argv[i + 1]));
	} else usage();
	return 0;
}
