#!/usr/bin/env bash
# Proves that the helper itself forks and rolls back through grove_share: boots
# Debian 12's 6.1 kernel (the helper needs cgroup v1 memory, which Debian's
# 6.12 leaves out) under qemu with the host's own files as the guest's root
# (9p, read-only, under a tmpfs overlay), loads nothing itself and lets the
# helper load the module (kernel/tests/helper-init.sh,
# privileged-helper/test/guest/kernel-tier-fork.ts). Passes only if the guest
# prints its PASS line. Needs what ./test.sh sets up: the helper's
# dependencies, the desktop image in the image cache, Grove's CRIU.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
cache="${GROVE_CACHE:-/var/cache/grove}"

kernel="$("$repo/build/host/kernel.sh")"
work="$(mktemp -d /tmp/grove-kernel-helper-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
ls "$cache"/images/desktop-*.btrfs >/dev/null 2>&1 || { echo "helper-test: no desktop image in $cache/images (the system tests build it)" >&2; exit 1; }

echo "building grove_share.ko against $(cat "$kernel/release")" >&2
"$here/build.sh" "$kernel/headers" "$work/module" >/dev/null
mkdir -p "$work/root/bin" "$work/root/modules"
cp /bin/busybox "$work/root/bin/busybox"
cp "$here/tests/helper-init.sh" "$work/root/init"
cp "$work/module/grove_share.ko" "$kernel"/modules/*.ko "$kernel/modules/load-order" "$work/root/modules/"
printf 'REPO=%q\n' "$repo" > "$work/root/guest.env"
(cd "$work/root" && find . | cpio --quiet -o -H newc | gzip -1) > "$work/initrd"

# One host thread runs both virtual CPUs (thread=single): with a thread per
# CPU (qemu's default here), Node processes in the guest died now and then at
# their start (SIGILL from a failed V8 check, SIGSEGV in the egress gate), in
# two of three CI runs on 2026-12-04 (the cause is not known: an emulation
# race is the likely one). Round-robin takes ~8 minutes instead of ~4.5.
echo "booting $(cat "$kernel/release") under qemu with the helper on the host's files (software emulation: many minutes)" >&2
status=0
timeout --kill-after=10 2400 qemu-system-x86_64 -accel tcg,thread=single -smp 2 -m 8192 -nographic -nodefaults -no-reboot \
  -serial stdio -monitor none -kernel "$kernel/vmlinuz" -initrd "$work/initrd" \
  -virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
  -append 'console=ttyS0 panic=-1 oops=panic panic_on_warn=1 quiet' \
  | tee "$work/console.log" || status=$?
[ "$status" -eq 0 ] || echo "qemu exited with $status (124: timed out)" >&2
grep -q '^GROVE-HELPER-GUEST-RUN: PASS' "$work/console.log"
