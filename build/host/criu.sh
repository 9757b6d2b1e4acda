#!/usr/bin/env bash
# Builds CRIU 4.2.1 from Debian unstable's *source* package and installs it under
# $GROVE_CACHE/criu (outside the repository). Bookworm's criu 3.17 fails on this
# kernel (vDSO bounds) and newer Debian binaries need a newer glibc, so we build.
# Idempotent: a second run with a working install built from the same source,
# criu-patches/ and RUNDIR returns at once.
#   criu.sh --tree-only   fetches, checks, unpacks and patches the source into
#                         $GROVE_CACHE/criu-build/tree and stops there (for work
#                         on the patches: build/host/criu-patches/README.md).
set -euo pipefail

CACHE="${GROVE_CACHE:-/var/cache/grove}"
PREFIX="$CACHE/criu"
here="$(cd "$(dirname "$0")" && pwd)"
log() { printf '[criu] %s\n' "$*" >&2; }
die() { local line; for line in "$@"; do log "$line"; done; exit 1; }

tree_only=false
case "${1:-}" in
  "") ;;
  --tree-only) tree_only=true ;;
  *) die "unknown argument: $1 (the only one is --tree-only)" ;;
esac

# The one source the patches are written for: upstream's release tarball of
# CRIU_VERSION, checked by its sha256, the only file the build unpacks (Debian's
# own packaging and patches are not used). It is fetched as the orig tarball of
# unstable's criu source package, whichever Debian revision of that version
# unstable carries (each revision ships the same upstream tarball, and unstable
# keeps only its newest). Another version, or a tarball with another sum,
# stops the setup: the patches are known to apply and work on this source only.
# To move to another version: set CRIU_VERSION and CRIU_ORIG_SHA256 to the new
# one's, run `GROVE_CACHE=<scratch dir> criu.sh --tree-only`, which fetches it
# and stops on the sha256 saying what it found, check that file and copy its
# sum here, then refresh the patches on the new source (criu-patches/README.md).
CRIU_VERSION="4.2.1"
CRIU_ORIG_SHA256="29ec0ee09e296479fe7048c80980e8ef1d0684d0b0204c2b101dfea19f6725b9"
CRIU_ORIG_TARBALL="criu_${CRIU_VERSION}.orig.tar.xz"

# Our patches on top of the source (criu-patches/*.patch, applied in name
# order): an install built from another source, another set of patches or
# another RUNDIR is rebuilt. The stamp $PREFIX/.build-stamp holds the sha256
# of the source pin, the patches concatenated ("none" if there are none) and
# the RUNDIR line.
# CRIU keeps its kernel-probe cache (criu.kdat) in RUNDIR, and only on a
# tmpfs; /run is not one on every host, so the helper mounts a small tmpfs
# here (privileged-helper/src/host/criu/kdat-cache.ts, KDAT_DIR).
RUNDIR="/run/grove-criu"

build_stamp() {
  local files=("$here"/criu-patches/*.patch)
  {
    echo "SOURCE=$CRIU_VERSION $CRIU_ORIG_SHA256"
    if [ -e "${files[0]}" ]; then cat "${files[@]}"; else echo none; fi
    echo "RUNDIR=$RUNDIR"
  } | sha256sum | cut -d' ' -f1
}

installed_ok() {
  [ -x "$PREFIX/sbin/criu" ] || return 1
  "$PREFIX/sbin/criu" --version 2>/dev/null | grep -qx "Version: $CRIU_VERSION" || return 1
  [ "$(cat "$PREFIX/.build-stamp" 2>/dev/null)" = "$(build_stamp)" ]
}

work="$CACHE/criu-build"
srcdir="$work/tree"

# A private sources list for unstable's *source* packages only: it reuses the
# archive address the system is already configured with, and never touches the
# system's own apt configuration or installs a binary from unstable.
archive_uri() {
  local uri
  uri="$(grep -hoE '^URIs:\s*\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
  if [ -z "$uri" ]; then
    uri="$(grep -hoE '^deb\s+\S+' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
  fi
  [ -n "$uri" ] || die "cannot find the Debian archive address in the apt configuration"
  printf '%s' "$uri"
}
write_private_sources() {
  mkdir -p "$work/lists/partial" "$work/src"
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s sid main\n' "$(archive_uri)" > "$work/sid.list"
  apt_private=(-o "Dir::Etc::SourceList=$work/sid.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$work/lists")
}

source_fetched() { [ -e "$work/src/$CRIU_ORIG_TARBALL" ]; }

# Fetches unstable's criu source package into $work/src unless the pinned
# tarball is there already. Once unstable moves to another upstream version,
# the pinned one cannot be fetched from it any more.
fetch_source() {
  source_fetched && return 0
  log "fetching unstable's criu $CRIU_VERSION source package"
  apt-get "${apt_private[@]}" -q update >&2
  # apt-get fails if any file of the package fails, and some mirrors do not
  # serve the Debian tarball, which is not used: what counts is the orig tarball.
  (cd "$work/src" && apt-get "${apt_private[@]}" -q --download-only source criu >&2) || true
  source_fetched && return 0
  local offered
  offered="$(apt-cache "${apt_private[@]}" showsrc criu 2>/dev/null | awk '$1 == "Version:" {print $2}' | sort -uV | paste -sd' ' || true)"
  die "expected criu $CRIU_VERSION (the version pinned in $0), but Debian unstable offers ${offered:-no criu at all}." \
    "To update the pin: set CRIU_VERSION and CRIU_ORIG_SHA256 in $0 (the comment above them says how) and refresh the patches on the new source." \
    "Or put upstream's $CRIU_ORIG_TARBALL (from snapshot.debian.org, or CRIU's release of $CRIU_VERSION) into $work/src."
}

check_sha256() { # FILE EXPECTED
  local found
  found="$(sha256sum "$work/src/$1" | cut -d' ' -f1)"
  [ "$found" = "$2" ] && return 0
  die "$work/src/$1 is not the pinned criu $CRIU_VERSION: expected sha256 $2, found $found." \
    "A damaged download: delete the file and run again to fetch it anew." \
    "A new upload of the package: check what changed, then update the pin in $0 (the comment above CRIU_VERSION says how)."
}

verify_source() {
  check_sha256 "$CRIU_ORIG_TARBALL" "$CRIU_ORIG_SHA256"
}

# Upstream's tarball with our patches, in name order, in a fresh $srcdir.
prepare_tree() {
  rm -rf "$srcdir"; mkdir -p "$srcdir"
  log "unpacking $CRIU_ORIG_TARBALL"
  tar -xf "$work/src/$CRIU_ORIG_TARBALL" -C "$srcdir" --strip-components=1
  local patch
  for patch in "$here"/criu-patches/*.patch; do
    [ -e "$patch" ] || continue
    log "applying $(basename "$patch")"
    patch -d "$srcdir" -p1 < "$patch" >&2
  done
}

build_and_install() {
  log "building (about 3 minutes on 2 cores)"
  make -C "$srcdir" -j"$(nproc)" RUNDIR="$RUNDIR" criu >&2
  rm -rf "$PREFIX"
  make -C "$srcdir" install-criu PREFIX="$PREFIX" RUNDIR="$RUNDIR" >&2
  build_stamp > "$PREFIX/.build-stamp"
  installed_ok || die "build finished but $PREFIX/sbin/criu is not $CRIU_VERSION"
  log "installed: $("$PREFIX/sbin/criu" --version | head -1)"
}

if ! $tree_only && installed_ok; then
  log "present: $("$PREFIX/sbin/criu" --version | head -1)"
  exit 0
fi
write_private_sources
fetch_source
verify_source
prepare_tree
if $tree_only; then
  log "patched source in $srcdir"
  exit 0
fi
build_and_install
