#!/usr/bin/env bash
# Builds CRIU 4.2.x from Debian unstable's *source* package and installs it under
# $GROVE_CACHE/criu (outside the repository). Bookworm's criu 3.17 fails on this
# kernel (vDSO bounds) and newer Debian binaries need a newer glibc, so we build.
# Idempotent: a second run with a working install built from the same
# criu-patches/ returns at once.
set -euo pipefail

CACHE="${GROVE_CACHE:-/var/cache/grove}"
PREFIX="$CACHE/criu"
WANT_MAJOR_MINOR="4.2"
here="$(cd "$(dirname "$0")" && pwd)"
log() { printf '[criu] %s\n' "$*" >&2; }

# Our patches on top of the source (criu-patches/*.patch, applied in name
# order): an install built from another set of patches or another RUNDIR is
# rebuilt. The stamp $PREFIX/.patches holds the sha256 of the patches
# concatenated ("none" if there are none) and the RUNDIR line.
# CRIU keeps its kernel-probe cache (criu.kdat) in RUNDIR, and only on a
# tmpfs; /run is not one on every host, so the helper mounts a small tmpfs
# here (privileged-helper/src/host/criu/kdat-cache.ts, KDAT_DIR).
RUNDIR="/run/grove-criu"

patches_sum() {
  local files=("$here"/criu-patches/*.patch)
  { if [ -e "${files[0]}" ]; then cat "${files[@]}"; else echo none; fi; echo "RUNDIR=$RUNDIR"; } | sha256sum | cut -d' ' -f1
}

installed_ok() {
  [ -x "$PREFIX/sbin/criu" ] || return 1
  "$PREFIX/sbin/criu" --version 2>/dev/null | grep -q "Version: $WANT_MAJOR_MINOR" || return 1
  [ "$(cat "$PREFIX/.patches" 2>/dev/null)" = "$(patches_sum)" ]
}

if installed_ok; then
  log "present: $("$PREFIX/sbin/criu" --version | head -1)"
  exit 0
fi

work="$CACHE/criu-build"
mkdir -p "$work/lists/partial" "$work/src"

# A private sources list for unstable's *source* packages only: it reuses the
# archive address the system is already configured with, and never touches the
# system's own apt configuration or installs a binary from unstable.
archive_uri() {
  local uri
  uri="$(grep -hoE '^URIs:\s*\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
  if [ -z "$uri" ]; then
    uri="$(grep -hoE '^deb\s+\S+' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
  fi
  [ -n "$uri" ] || { log "cannot find the Debian archive address in the apt configuration"; exit 1; }
  printf '%s' "$uri"
}
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s sid main\n' "$(archive_uri)" > "$work/sid.list"
apt_private=(-o "Dir::Etc::SourceList=$work/sid.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$work/lists")

if ! ls "$work"/src/criu_4.2*.orig.tar.* >/dev/null 2>&1; then
  log "fetching unstable's criu source package"
  apt-get "${apt_private[@]}" -q update >&2
  # Only the orig tarball is needed; unpacking is done by hand below.
  (cd "$work/src" && apt-get "${apt_private[@]}" -q --download-only source criu >&2) || true
  ls "$work"/src/criu_4.2*.orig.tar.* >/dev/null 2>&1 || { log "no criu 4.2 source tarball could be fetched"; exit 1; }
fi

tarball="$(printf '%s\n' "$work"/src/criu_4.2*.orig.tar.* | sort -V | tail -1)"
srcdir="$work/tree"
rm -rf "$srcdir"; mkdir -p "$srcdir"
log "unpacking $(basename "$tarball")"
tar -xf "$tarball" -C "$srcdir" --strip-components=1

for patch in "$here"/criu-patches/*.patch; do
  [ -e "$patch" ] || continue
  log "applying $(basename "$patch")"
  patch -d "$srcdir" -p1 < "$patch" >&2
done

log "building (about 3 minutes on 2 cores)"
make -C "$srcdir" -j"$(nproc)" RUNDIR="$RUNDIR" criu >&2
rm -rf "$PREFIX"
make -C "$srcdir" install-criu PREFIX="$PREFIX" RUNDIR="$RUNDIR" >&2
patches_sum > "$PREFIX/.patches"
installed_ok || { log "build finished but $PREFIX/sbin/criu is not 4.2"; exit 1; }
log "installed: $("$PREFIX/sbin/criu" --version | head -1)"
