#!/bin/bash
# Build the Grove desktop root filesystem (Debian bookworm, X11 via TigerVNC,
# openbox, xterm, an editor, tmux and Chromium) into an EMPTY existing directory.
#
#   build.sh ROOTFS
#
# Environment:
#   GROVE_CACHE  download cache root (default /var/cache/grove); the .debs are
#                kept in $GROVE_CACHE/apt-archives and reused by later builds.
#
# Progress: a line "::stage NAME" on stdout before each stage
# (debootstrap, packages, session, cleanup); the tools' own output passes
# through. Exits non-zero on any failure. Must run as root.
set -euo pipefail

PACKAGES=(
  tigervnc-standalone-server openbox xterm chromium fonts-dejavu-core python3
  tini procps iproute2 x11-utils x11-xserver-utils xdotool mousepad tmux
)
SUITE=bookworm

die() { echo "build.sh: $*" >&2; exit 1; }
stage() { echo "::stage $1"; }

[ $# -eq 1 ] || die "usage: build.sh ROOTFS"
[ "$(id -u)" -eq 0 ] || die "must run as root"
[ -d "$1" ] || die "$1: not a directory"
ROOTFS="$(realpath -e "$1")"
[ "$ROOTFS" != / ] || die "refusing to build into /"
[ -z "$(ls -A "$ROOTFS")" ] || die "$ROOTFS: not empty"

HERE="$(dirname "$(realpath -e "${BASH_SOURCE[0]}")")"
for f in session.sh start.html; do
  [ -f "$HERE/$f" ] || die "$HERE/$f missing"
done

GROVE_CACHE="${GROVE_CACHE:-/var/cache/grove}"
case "$GROVE_CACHE" in /*) ;; *) die "GROVE_CACHE must be an absolute path" ;; esac
DEB_CACHE="$GROVE_CACHE/apt-archives"
mkdir -p "$DEB_CACHE/partial"
# One build at a time may use the shared download cache (apt locks it and
# would fail a second, concurrent build instead of waiting).
exec 9>"$DEB_CACHE/.build.lock"
flock -n 9 || { echo "build.sh: waiting for another image build to finish with the download cache"; flock 9; }

# --- Archive addresses, as the host's apt uses them ------------------------
# Prints "main URI" and "security URI" lines. deb822 files first, then the
# one-line format.
host_archives() {
  local files=()
  shopt -s nullglob
  files=(/etc/apt/sources.list.d/*.sources)
  shopt -u nullglob
  if [ ${#files[@]} -gt 0 ]; then
    # One paragraph per entry; a paragraph ends at a blank line.
    awk '
      function flush() {
        if (uris != "" && types ~ /(^|[ \t])deb([ \t]|$)/ && enabled !~ /^[ \t]*no/) {
          split(uris, u, /[ \t]+/)
          kind = (suites ~ /-security/ || u[1] ~ /security/) ? "security" : "main"
          print kind, u[1]
        }
        uris = ""; suites = ""; types = ""; enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      {
        line = $0; key = tolower(line); sub(/:.*/, "", key)
        val = line; sub(/^[^:]*:[ \t]*/, "", val)
        if (key == "uris") uris = val
        else if (key == "suites") suites = val
        else if (key == "types") types = val
        else if (key == "enabled") enabled = tolower(val)
      }
      END { flush() }
    ' "${files[@]}"
  fi
  local lists=()
  shopt -s nullglob
  lists=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list)
  shopt -u nullglob
  if [ ${#lists[@]} -gt 0 ]; then
    # deb [options] URI suite components...
    awk '
      $1 != "deb" { next }
      {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        uri = $(i); suite = $(i + 1)
        kind = (suite ~ /-security/ || uri ~ /security/) ? "security" : "main"
        print kind, uri
      }
    ' "${lists[@]}" 2>/dev/null || true
  fi
}

ARCHIVES="$(host_archives)"
MIRROR="$(awk '$1 == "main" { print $2; exit }' <<<"$ARCHIVES")"
SECURITY="$(awk '$1 == "security" { print $2; exit }' <<<"$ARCHIVES")"
[ -n "$MIRROR" ] || die "no Debian archive address found in the host's apt configuration"
MIRROR="${MIRROR%/}"
if [ -z "$SECURITY" ]; then
  echo "build.sh: warning: host has no security archive entry; deriving it from $MIRROR" >&2
  SECURITY="${MIRROR%/debian}/debian-security"
fi
SECURITY="${SECURITY%/}"
echo "build.sh: archive $MIRROR, security $SECURITY, cache $DEB_CACHE"

# --- Stage: debootstrap -----------------------------------------------------
stage debootstrap
debootstrap --variant=minbase --cache-dir="$DEB_CACHE" "$SUITE" "$ROOTFS" "$MIRROR"

# --- Stage: packages (chroot, private mount + pid namespace) ---------------
stage packages

cat >"$ROOTFS/usr/sbin/policy-rc.d" <<'POLICY'
#!/bin/sh
# Never start services while installing packages (no init in a workspace).
exit 101
POLICY
chmod 755 "$ROOTFS/usr/sbin/policy-rc.d"

rm -f "$ROOTFS/etc/apt/sources.list"
cat >"$ROOTFS/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES

# Runs as PID 1 of a new pid namespace with a private mount namespace: the
# mounts below vanish, and any stray process is killed, when it exits, even on
# failure.
chroot_phase() {
  set -euo pipefail
  local root="$1" cache="$2"; shift 2
  mount -t proc proc "$root/proc"
  mount -t sysfs -o ro sysfs "$root/sys"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  mkdir -p "$root/var/cache/apt/archives"
  mount --bind "$cache" "$root/var/cache/apt/archives"
  # shellcheck disable=SC2016 # the script's "$@" and $(...) are the chroot's bash's to expand
  chroot "$root" /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    /bin/bash -c '
      set -euo pipefail
      apt-get update
      # Base packages from debootstrap: take bookworm-updates/-security fixes.
      apt-get upgrade -y
      apt-get install -y --no-install-recommends "$@"
      echo "build.sh: $(dpkg-query -W -f=. | wc -c) packages installed"
    ' packages "$@"
}

unshare --mount --propagation private --pid --fork --kill-child \
  /bin/bash -c "$(declare -f chroot_phase); chroot_phase \"\$@\"" \
  chroot_phase "$ROOTFS" "$DEB_CACHE" "${PACKAGES[@]}"

# --- Stage: session files ---------------------------------------------------
stage session
install -D -m 755 "$HERE/session.sh" "$ROOTFS/usr/local/lib/grove/session.sh"
install -D -m 644 "$HERE/start.html" "$ROOTFS/usr/local/share/grove/start.html"
install -d -m 755 "$ROOTFS/etc/grove/services.d"

# --- Stage: cleanup -----------------------------------------------------------
stage cleanup
rm -rf "$ROOTFS"/var/lib/apt/lists/*
# .debs live in the shared cache, not in the image.
find "$ROOTFS/var/cache/apt" -mindepth 1 -maxdepth 1 -name '*.bin' -delete
find "$ROOTFS/var/cache/apt/archives" -mindepth 1 -maxdepth 1 -name '*.deb' -delete
rm -rf "$ROOTFS"/tmp/* "$ROOTFS"/tmp/.[!.]* "$ROOTFS"/var/tmp/*
# Each workspace gets its own identity.
: >"$ROOTFS/etc/machine-id"
if [ -f "$ROOTFS/var/lib/dbus/machine-id" ] && [ ! -L "$ROOTFS/var/lib/dbus/machine-id" ]; then
  rm -f "$ROOTFS/var/lib/dbus/machine-id"
fi
rm -f "$ROOTFS/etc/hostname"
# debootstrap copied the build host's resolver configuration; do not ship it.
rm -f "$ROOTFS/etc/resolv.conf"
: >"$ROOTFS/etc/resolv.conf"
echo "build.sh: done: $ROOTFS ($(du -sh --apparent-size "$ROOTFS" | cut -f1) apparent)"
