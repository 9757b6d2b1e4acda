#!/usr/bin/env bash
# Proves grove_share under qemu: builds the module against the Debian kernel
# build/host/kernel.sh keeps in the cache, packs it with the tests into an
# initramfs, boots that kernel with software emulation and passes only if
# the guest prints its PASS line. Any oops or warning panics the guest
# (panic_on_warn), SLUB checks every object (slub_debug) and freed pages
# are zeroed (init_on_free), so a page or anon_vma used after free shows.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"

kernel="$("$repo/build/host/kernel.sh")"
work="$(mktemp -d /tmp/grove-kernel-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "building grove_share.ko against $(cat "$kernel/release")" >&2
"$here/build.sh" "$kernel/headers" "$work/module" >/dev/null
mkdir -p "$work/root/bin" "$work/root/modules"
cc -static -O2 -Wall -Wextra -Werror -o "$work/root/share_test" "$here/tests/share_test.c"
cp /bin/busybox "$work/root/bin/busybox"
cp "$here/tests/init.sh" "$work/root/init"
cp "$work/module/grove_share.ko" "$kernel"/modules/*.ko "$work/root/modules/"
(cd "$work/root" && find . | cpio --quiet -o -H newc | gzip -1) > "$work/initrd"

echo "booting $(cat "$kernel/release") under qemu (software emulation: a few minutes)" >&2
status=0
timeout --kill-after=10 900 qemu-system-x86_64 -accel tcg -smp 2 -m 1536 -nographic -nodefaults -no-reboot \
  -serial stdio -monitor none -kernel "$kernel/vmlinuz" -initrd "$work/initrd" \
  -append 'console=ttyS0 panic=-1 oops=panic panic_on_warn=1 slub_debug=FZPU slub_nomerge init_on_free=1 quiet' \
  | tee "$work/console.log" || status=$?
[ "$status" -eq 0 ] || echo "qemu exited with $status (124: timed out)" >&2
grep -q '^GROVE-KERNEL-TESTS: PASS' "$work/console.log"
