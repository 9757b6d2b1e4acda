#!/bin/busybox sh
# shellcheck shell=dash # busybox's ash: dash is the nearest shell shellcheck knows
# /init of the qemu guest in which the helper itself forks through the
# kernel tier (packed by kernel/helper-test.sh). The guest's root is the
# host's own files (9p, read-only) under a tmpfs overlay, so the helper, node,
# crun, CRIU and the image cache are the host's, and whatever the run writes
# stays in the guest. It mounts what a host has (cgroup v1 as this host
# does), runs privileged-helper/test/guest/kernel-tier-fork.ts, unloads the
# module, and prints one result line that the host reads.
#
# Two stages: the first, in the initramfs, builds that root; the second runs
# in it, after switch_root (a chroot would not do: the kernel refuses a
# chrooted caller a user namespace, and the helper makes them).
if [ "${1:-}" != in-root ]; then
/bin/busybox mkdir -p /proc /sys /dev /host /upper /newroot
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

while read -r module; do
  # No swap here: a page swapped out has no frame, and the checks compare frames.
  [ "$module" = zram ] && continue
  insmod "/modules/$module.ko" || echo "# module $module did not load"
done < /modules/load-order

if ! {
  mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose host /host &&
    mount -t tmpfs -o size=5g,mode=0755 upper /upper && mkdir -p /upper/files /upper/work &&
    mount -t overlay -o lowerdir=/host,upperdir=/upper/files,workdir=/upper/work root /newroot
}; then
  echo "GROVE-HELPER-GUEST-RUN: FAIL (no root from the host)"
  poweroff -f
  exit 1
fi
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
# cgroup v1, as the helper finds it on this host (host/cgroups.ts).
mount -t tmpfs -o mode=0755 cgroup /newroot/sys/fs/cgroup
for controller in cpu cpuacct cpuset memory devices freezer blkio pids; do
  mkdir -p "/newroot/sys/fs/cgroup/$controller"
  mount -t cgroup -o "$controller" cgroup "/newroot/sys/fs/cgroup/$controller"
done
mkdir -p /newroot/sys/fs/cgroup/systemd /newroot/sys/fs/cgroup/unified
mount -t cgroup -o none,name=systemd cgroup /newroot/sys/fs/cgroup/systemd
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup/unified
ifconfig lo 127.0.0.1 up
# The host has no module tools: the helper loads grove_share with busybox's insmod.
mkdir -p /newroot/grove-guest /newroot/usr/local/sbin
cp /bin/busybox /init /guest.env /modules/grove_share.ko /newroot/grove-guest/
ln -sf /grove-guest/busybox /newroot/usr/local/sbin/insmod
exec switch_root /newroot /grove-guest/busybox sh /grove-guest/init in-root
fi

# In the host's files, as the guest's root.
busybox=/grove-guest/busybox
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
# shellcheck disable=SC1091 # kernel/helper-test.sh writes it into the guest only
. /grove-guest/guest.env # REPO: the repository's path on the host
result=FAIL
booted="$($busybox dmesg | wc -l)"
if (cd "$REPO" && node --import ./node_modules/tsx/dist/loader.mjs privileged-helper/test/guest/kernel-tier-fork.ts /grove-guest/grove_share.ko) |
  tee /tmp/run.log && grep -q '^GROVE-HELPER-GUEST: PASS' /tmp/run.log && $busybox rmmod grove_share; then
  # As kernel/tests/init.sh: what the kernel logs without panicking.
  if $busybox dmesg | tail -n +"$((booted + 1))" | grep -E 'BUG|WARNING|Oops|[Bb]ad page|corrupt|Redzone|Poison|refcount'; then
    echo "# the kernel log above shows a problem"
  else
    result=PASS
  fi
fi
[ "$result" = PASS ] || $busybox dmesg | tail -n 40
echo "GROVE-HELPER-GUEST-RUN: $result"
$busybox poweroff -f
