#!/usr/bin/env bash
# Proves grove_share under qemu: builds the module against a Debian kernel
# that build/host/kernel.sh keeps in the cache (kernel/test.sh: Debian 12's
# 6.1; kernel/test.sh 6.12: the 6.12 series it also ships), packs it with the tests into an
# initramfs, boots that kernel with software emulation and passes only if
# the guest prints its PASS line. Any oops or warning panics the guest
# (panic_on_warn), SLUB checks every object (slub_debug) and freed pages
# are zeroed (init_on_free), so a page or anon_vma used after free shows.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"

kernel="$("$repo/build/host/kernel.sh" "$@")"
work="$(mktemp -d /tmp/grove-kernel-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "building grove_share.ko against $(cat "$kernel/release")" >&2
# W=1: the kernel's extra warnings, its -Wextra without those its own headers
# trip (plain -Wextra fails on them), made errors by the Kbuild's -Werror. Only
# here, against the two kernels the tests pin: on a host's own kernel a module
# that does not build means no kernel tier, so setup.sh builds it as before.
"$here/build.sh" "$kernel/headers" "$work/module" W=1 >/dev/null
# The same module claiming another build of the kernel: the guest checks it refuses to load.
"$here/build.sh" "$kernel/headers" "$work/other-build" GROVE_SHARE_BUILT_FOR=another-build >/dev/null
mkdir -p "$work/root/bin" "$work/root/modules/other-build"
cp "$work/other-build/grove_share.ko" "$work/root/modules/other-build/"
for test in share_test fork_test; do
  cc -static -O2 -Wall -Wextra -Werror -o "$work/root/$test" "$here/tests/$test.c" "$here/tests/guest.c"
done
# Grove's CRIU (build/host/criu.sh) with the libraries it links, for the
# whole fork in the guest (fork_test.c).
criu="${GROVE_CACHE:-/var/cache/grove}/criu/sbin/criu"
mkdir -p "$work/root/criu"
cp "$criu" "$work/root/criu/criu"
for lib in $(ldd "$criu" | grep -o '/[^ ]*'); do
  mkdir -p "$work/root$(dirname "$lib")"
  cp -L "$lib" "$work/root$lib"
done
# The helper's own pieces of a fork through the kernel tier.
cc -static -O2 -Wall -Wextra -Werror -I"$here/grove-share" -o "$work/root/grove-share" "$repo/privileged-helper/native/grove-share.c"
cc -static -O2 -Wall -Wextra -Werror -o "$work/root/grove-action" "$repo/privileged-helper/native/grove-action.c"
cp /bin/busybox "$work/root/bin/busybox"
cp "$here/tests/init.sh" "$work/root/init"
cp "$work/module/grove_share.ko" "$kernel"/modules/*.ko "$kernel/modules/load-order" "$work/root/modules/"
(cd "$work/root" && find . | cpio --quiet -o -H newc | gzip -1) > "$work/initrd"

echo "booting $(cat "$kernel/release") under qemu (software emulation: a few minutes)" >&2
status=0
# Two NUMA nodes: the tests migrate shared pages from one to the other.
timeout --kill-after=10 900 qemu-system-x86_64 -accel tcg -smp 2,sockets=2 -m 1536 -nographic -nodefaults -no-reboot \
  -object memory-backend-ram,id=m0,size=768M -object memory-backend-ram,id=m1,size=768M \
  -numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1 \
  -serial stdio -monitor none -kernel "$kernel/vmlinuz" -initrd "$work/initrd" \
  -append 'console=ttyS0 panic=-1 oops=panic panic_on_warn=1 slub_debug=FZPU slub_nomerge init_on_free=1 quiet' \
  | tee "$work/console.log" || status=$?
[ "$status" -eq 0 ] || echo "qemu exited with $status (124: timed out)" >&2
grep -q '^GROVE-KERNEL-TESTS: PASS' "$work/console.log"
