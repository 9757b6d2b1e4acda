#!/usr/bin/env bash
# Fetches the Debian 12 kernel that kernel/ is built and proven against and
# prints the folder it is in: vmlinuz (booted under qemu), headers (to build
# the module) and the few modules the guest loads (zram for its swap,
# nfnetlink for CRIU's kernel probe). Nothing is installed:
# the packages are unpacked into $GROVE_CACHE/kernel/RELEASE, so the host's
# own kernel and boot loader are untouched. Idempotent.
set -euo pipefail
cache="${GROVE_CACHE:-/var/cache/grove}/kernel"

# The release Debian's linux-image-amd64 points at today (e.g. 6.1.0-57-amd64).
release="$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: linux-image-\(.*-amd64\)$/\1/p' | head -n1)"
[ -n "$release" ] || { echo "kernel: cannot tell which kernel linux-image-amd64 is (apt-get update?)" >&2; exit 1; }
dir="$cache/$release"
guest_modules=(mm/zsmalloc.ko drivers/block/zram/zram.ko net/netfilter/nfnetlink.ko)
complete() {
  [ -s "$dir/release" ] || return 1
  for module in "${guest_modules[@]}"; do [ -e "$dir/modules/$(basename "$module")" ] || return 1; done
}
if complete; then
  echo "$dir"
  exit 0
fi

echo "fetching Debian's $release kernel and headers into $dir" >&2
mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
chmod 0777 "$tmp" # apt downloads as its own user, _apt
common="${release%-amd64}-common"
kbuild="linux-kbuild-$(echo "$release" | cut -d. -f1,2)"
(cd "$tmp" && apt-get download -q "linux-image-$release" "linux-headers-$release" "linux-headers-$common" "$kbuild" >&2)
mkdir -p "$tmp/x"
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x"; done

mkdir -p "$tmp/out/modules"
cp "$tmp/x/boot/vmlinuz-$release" "$tmp/out/vmlinuz"
for module in "${guest_modules[@]}"; do cp "$tmp/x/lib/modules/$release/kernel/$module" "$tmp/out/modules/"; done
# The headers' tree, with the links and the one absolute path that assume
# it lives in /usr/src.
mv "$tmp/x/usr/src/linux-headers-$release" "$tmp/out/headers"
mv "$tmp/x/usr/src/linux-headers-$common" "$tmp/out/headers-common"
mv "$tmp/x/usr/lib/$kbuild" "$tmp/out/kbuild"
for tree in headers headers-common; do
  for link in scripts tools; do
    [ -L "$tmp/out/$tree/$link" ] && ln -sfn ../kbuild/"$link" "$tmp/out/$tree/$link"
  done
done
sed -i "s|^include /usr/src/linux-headers-$common/|include $dir/headers-common/|" "$tmp/out/headers/Makefile"
echo "$release" > "$tmp/out/release"
rm -rf "$dir"
mv "$tmp/out" "$dir"
echo "$dir"
