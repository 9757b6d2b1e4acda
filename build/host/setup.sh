#!/usr/bin/env bash
# Installs everything Grove needs on a Debian 12 host, idempotently: Debian
# packages, the npm dependencies, Grove's programs compiled from TypeScript,
# CRIU 4.2 (built from source into the cache) and the grove group. A second run only checks and returns in seconds.
# Caches live outside the repository, under $GROVE_CACHE (/var/cache/grove).
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
export GROVE_CACHE="${GROVE_CACHE:-/var/cache/grove}"
step() { printf '\n==> %s\n' "$*" >&2; }

[ "$(id -u)" -eq 0 ] || { echo "setup: run as root (Grove's helper manages btrfs, namespaces and containers)" >&2; exit 1; }
grep -q 'VERSION_CODENAME=bookworm' /etc/os-release || echo "setup: warning: tested on Debian 12 (bookworm) only" >&2

# Tools the helper runs (buildah and skopeo for images of one's own, umoci for
# the benchmark's comparison), CRIU's build dependencies, libseccomp for
# grove-enter, libnftnl and libmnl for grove-netlock, Chromium for the tests,
# a real registry (docker-registry, htpasswd) for the image tests, qemu
# with a static busybox for the kernel tier's tests (kernel/test.sh), the
# lint's shellcheck (build/lint-shell.sh), the modules CRIU's zdtm tests
# import (build/host/criu-zdtm.sh), and what each branch's Selkies
# stream runs with on the host (docs/stream.md): Debian's python3-venv, the
# libraries pixelflux links, and the X tools Selkies calls (xrandr, xdotool,
# xclip, xset).
packages=(
  btrfs-progs debootstrap crun iproute2 nftables util-linux procps psmisc xz-utils rsync diffutils
  buildah skopeo umoci git zstd isal openssl bubblewrap
  chromium qemu-system-x86 busybox-static cpio docker-registry apache2-utils
  build-essential pkgconf python3 shellcheck python3-yaml python3-protobuf
  libbsd-dev libnet1-dev libnftables-dev libnl-3-dev libnl-route-3-dev libprotobuf-c-dev
  libprotobuf-dev protobuf-c-compiler protobuf-compiler uuid-dev libcap-dev
  libseccomp-dev libnftnl-dev libmnl-dev
  python3-venv libgbm1 libpixman-1-0 libxkbcommon0 libdrm2 libwayland-server0
  x11-xserver-utils xdotool xclip
)
step "Debian packages"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
else
  echo "all ${#packages[@]} present" >&2
fi

step "Node.js"
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
[ "$node_major" -ge 20 ] || { echo "setup: Node.js ≥ 20 is required (found: $(node --version 2>/dev/null || echo none))" >&2; exit 1; }
echo "node $(node --version), npm $(npm --version)" >&2

step "npm dependencies"
stamp="$repo/node_modules/.grove-lock-hash"
want="$(sha256sum "$repo/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # Electron's binary cannot be downloaded here; its types are all we use.
  (cd "$repo" && ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm ci --no-audit --no-fund --cache "$GROVE_CACHE/npm" >&2)
  echo "$want" > "$stamp"
else
  echo "up to date" >&2
fi

step "Grove's programs: the helper, the CLI and the bench, compiled into dist/ (build/compile.sh)"
"$repo/build/compile.sh"

step "CRIU 4.2.1 (Debian's source, pinned by sha256 in build/host/criu.sh)"
"$repo/build/host/criu.sh"

step "native helpers (grove-enter cages what belongs to a branch; grove-mount makes idmapped and caged bind mounts; grove-netlock silences a netns while CRIU restores into it; grove-spawn starts the helper's programs; grove-action is what CRIU runs at a fork's actions; grove-share holds a fork's memory for the kernel tier; grove-shm-shared.so lets a stream's capture share memory with the branch's X server over TCP; grove-quota gives each branch its disk limit; peercred.node reads a peer's credentials; inroot.node opens a branch's files inside its root)"
"$repo/build/host/native.sh" "$GROVE_CACHE"

step "Selkies 2.1.0, each branch's desktop stream (pinned with hashes in build/host/selkies/requirements.lock)"
"$repo/build/host/selkies.sh"

step "kernel tier: grove_share.ko for this kernel (kernel/, docs/kernel-tier.md)"
headers="/lib/modules/$(uname -r)/build"
module_dir="$GROVE_CACHE/kernel/module/$(uname -r)"
if [ ! -e /proc/modules ]; then
  echo "this kernel ($(uname -r)) cannot load modules: forks copy memory (grove doctor says so)" >&2
elif [ ! -d "$headers" ]; then
  echo "no headers for $(uname -r) at $headers: grove_share is not built (install linux-headers-$(uname -r) to build it)" >&2
elif [ ! -e "$module_dir/grove_share.ko" ] || [ -n "$(find "$repo/kernel/grove-share" -newer "$module_dir/grove_share.ko")" ]; then
  if "$repo/kernel/build.sh" "$headers" "$module_dir" >&2; then
    echo "built $module_dir/grove_share.ko" >&2
  else
    echo "grove_share does not build for $(uname -r) (it is written for the 6.1 and 6.12 kernels): forks copy memory" >&2
  fi
else
  echo "up to date: $module_dir/grove_share.ko" >&2
fi

step "Debian's kernels (6.1 and 6.12) and headers for the kernel tier's tests under qemu"
"$repo/build/host/kernel.sh" >&2
"$repo/build/host/kernel.sh" 6.12 >&2

step "Podman's default seccomp profile (the tests check Grove's is at least as strict)"
podman_profile="$GROVE_CACHE/podman-seccomp.json"
if [ ! -s "$podman_profile" ]; then
  tmp="$(mktemp -d)"
  chmod 0777 "$tmp" # apt downloads as its own user, _apt
  (cd "$tmp" && apt-get download golang-github-containers-common >&2 && dpkg-deb -x golang-github-containers-common_*.deb x)
  cp "$tmp/x/usr/share/containers/seccomp.json" "$podman_profile"
  rm -rf "$tmp"
fi
echo "$podman_profile" >&2

step "groups: grove (persons) and grove-agent (agents)"
for g in grove grove-agent; do
  getent group "$g" >/dev/null || groupadd --system "$g"
  echo "group $g: $(getent group "$g")" >&2
done

step "user grove-gate (the egress gate runs as it, unprivileged)"
getent passwd grove-gate >/dev/null ||
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin grove-gate
echo "user grove-gate: $(id grove-gate)" >&2
