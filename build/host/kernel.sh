#!/usr/bin/env bash
# Fetches a Debian 12 kernel that kernel/ is built and proven against and
# prints the folder it is in: vmlinuz (booted under qemu), headers (to build
# the module) and the modules the guests load (guest_modules below), with
# what they depend on, in the order modules/load-order gives. Nothing is installed: the packages are unpacked
# into $GROVE_CACHE/kernel/RELEASE, so the host's own kernel and boot loader
# are untouched. Idempotent.
#   build/host/kernel.sh          Debian 12's own kernel (linux-image-amd64: 6.1)
#   build/host/kernel.sh 6.12     the 6.12 series Debian 12 also ships (linux-image-6.12-amd64)
set -euo pipefail
cache="${GROVE_CACHE:-/var/cache/grove}/kernel"
meta="linux-image-${1:+$1-}amd64"

# The release the meta-package points at today (e.g. 6.1.0-57-amd64, 6.12.117+deb12-amd64).
release="$(apt-cache depends "$meta" | sed -n 's/^ *Depends: linux-image-\(.*-amd64\)$/\1/p' | head -n1)"
[ -n "$release" ] || { echo "kernel: cannot tell which kernel $meta is (apt-get update?)" >&2; exit 1; }
dir="$cache/$release"
# kernel/test.sh's guest: zram for its swap, nfnetlink for CRIU's kernel probe.
guest_modules=(zram nfnetlink)
# kernel/helper-test.sh's guest, which runs the whole helper on the host's
# files, boots only Debian 12's own kernel (its 6.12 lacks cgroup v1's memory
# controller, which the helper uses): virtio, 9p and overlay for its root,
# and what the helper and CRIU use on a host (btrfs on a loop device, veths,
# nftables with NAT and named counters, the socket-diag modules CRIU reads
# sockets with, conntrack netlink that CRIU dumps connections through).
# crc32c_generic: libcrc32c (btrfs, nf_tables) refuses to load without the
# crc32c it asks for by name.
[ -n "${1:-}" ] || guest_modules+=(virtio_pci 9p 9pnet_virtio overlay crc32c_generic btrfs loop veth nf_tables nft_ct nft_nat
  nft_chain_nat nft_objref nf_conntrack_netlink nft_reject_inet unix_diag inet_diag tcp_diag udp_diag netlink_diag af_packet_diag)
complete() {
  [ -s "$dir/release" ] && [ -s "$dir/modules/load-order" ] || return 1
  local module
  for module in "${guest_modules[@]}"; do
    grep -qx "$module" "$dir/modules/load-order" || grep -qs "/$module.ko" "$dir/modules/builtin" || return 1
  done
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
# The headers' common part and kbuild, as the headers package names them
# (linux-kbuild-6.1 for 6.1, linux-kbuild-6.12.117+deb12 for 6.12).
depends="$(apt-cache depends "linux-headers-$release" | sed -n 's/^ *|\{0,1\}Depends: //p')"
common="$(echo "$depends" | grep -x 'linux-headers-.*-common' | sed 's/^linux-headers-//' | head -n1)"
kbuild="$(echo "$depends" | grep -x 'linux-kbuild-.*' | head -n1)"
if [ -z "$common" ] || [ -z "$kbuild" ]; then
  echo "kernel: cannot tell linux-headers-$release's common headers and kbuild" >&2
  exit 1
fi
(cd "$tmp" && apt-get download -q "linux-image-$release" "linux-headers-$release" "linux-headers-$common" "$kbuild" >&2)
mkdir -p "$tmp/x"
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x"; done

mkdir -p "$tmp/out/modules"
cp "$tmp/x/boot/vmlinuz-$release" "$tmp/out/vmlinuz"
# Each guest module after those it depends on (its modinfo's depends=),
# uncompressed: busybox's insmod reads plain .ko files. One built into the
# kernel is not loaded.
cp "$tmp/x/lib/modules/$release/modules.builtin" "$tmp/out/modules/builtin"
loaded=()
add_module() {
  local name="$1" file dep
  [[ " ${loaded[*]} " == *" $name "* ]] && return
  grep -q "/$name.ko" "$tmp/out/modules/builtin" && return
  file="$(find "$tmp/x/lib/modules/$release/kernel" -name "$name.ko" -o -name "$name.ko.xz" | head -n1)"
  [ -n "$file" ] || { echo "kernel: $release has no module $name" >&2; exit 1; }
  case "$file" in *.xz) xz -dc "$file" > "$tmp/out/modules/$name.ko" ;; *) cp "$file" "$tmp/out/modules/$name.ko" ;; esac
  for dep in $(strings "$tmp/out/modules/$name.ko" | sed -n 's/^depends=//p' | tr ',' ' '); do add_module "$dep"; done
  loaded+=("$name")
}
for module in "${guest_modules[@]}"; do add_module "$module"; done
printf '%s\n' "${loaded[@]}" > "$tmp/out/modules/load-order"
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
