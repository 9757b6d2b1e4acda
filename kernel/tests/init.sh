#!/bin/busybox sh
# shellcheck shell=dash # busybox's ash: dash is the nearest shell shellcheck knows
# /init of the qemu guest that proves grove_share (packed by kernel/test.sh).
# Sets up what the tests need (zram swap, ksmd, THP on madvise), loads the
# module, runs the tests (share_test: the module itself; fork_test: a whole
# fork through CRIU), unloads the module, and prints one result line
# that the host reads: the run passes only if it says PASS.
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

result=FAIL
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
# zram (with what it needs) for the swap, and nfnetlink: CRIU's kernel probe
# opens a netfilter netlink socket (its nftables check) and connects over
# loopback (its TCP repair check). build/host/kernel.sh wrote their order.
while read -r module; do
  [ "$module" = zram ] && options=num_devices=1 || options=
  insmod "/modules/$module.ko" ${options:+"$options"} || echo "# module $module did not load"
done < /modules/load-order
echo 128M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 ||
  echo "# no zram swap: the swapped-out case will fail"
ifconfig lo 127.0.0.1 up
echo 5000 > /sys/kernel/mm/ksm/pages_to_scan
echo 20 > /sys/kernel/mm/ksm/sleep_millisecs
echo 1 > /sys/kernel/mm/ksm/run

if ! insmod /modules/other-build/grove_share.ko 2>/dev/null &&
  dmesg | grep -q 'grove_share: built for kernel "another-build", running .*: refusing to load'; then
  echo "ok - a module built for another kernel build refuses to load"
  refused=yes
else
  echo "not ok - a module built for another kernel build loaded, or not for that reason"
  refused=no
fi

booted="$(dmesg | wc -l)"
mkdir -p /tmp /run/grove-criu
if [ "$refused" = yes ] && insmod /modules/grove_share.ko && /share_test && /fork_test && rmmod grove_share; then
  # The kernel would have panicked on a warning (panic_on_warn); this
  # catches what only logs, from the module's load on: bad page state,
  # SLUB's poison and redzone reports, list corruption.
  if dmesg | tail -n +"$((booted + 1))" | grep -E 'BUG|WARNING|Oops|[Bb]ad page|corrupt|Redzone|Poison|refcount'; then
    echo "# the kernel log above shows a problem"
  else
    result=PASS
  fi
fi
[ "$result" = PASS ] || dmesg | tail -n 40
echo "GROVE-KERNEL-TESTS: $result"
poweroff -f
