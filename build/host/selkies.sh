#!/usr/bin/env bash
# Installs Selkies (the per-branch desktop stream, docs/stream.md) into a
# virtual environment of Debian's python3 under $GROVE_CACHE/selkies, from
# build/host/selkies/requirements.lock only: every file pinned by its sha256,
# wheels only (nothing is built, nothing runs from an sdist). Idempotent: a
# working install of the same lock file returns at once. Nothing is fetched
# when a stream starts.
set -euo pipefail

CACHE="${GROVE_CACHE:-/var/cache/grove}"
PREFIX="$CACHE/selkies"
lock="$(cd "$(dirname "$0")" && pwd)/selkies/requirements.lock"
log() { printf '[selkies] %s\n' "$*" >&2; }

want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [ "$(cat "$PREFIX/.lock-hash" 2>/dev/null)" = "$want" ] && "$PREFIX/venv/bin/python" -c 'import selkies, pixelflux' 2>/dev/null; then
  log "up to date: $PREFIX/venv"
  exit 0
fi

# A fresh environment each time, so no package of an older lock is left
# over; the stamp is written last, so an interrupted install is redone.
rm -rf "$PREFIX/venv" "$PREFIX/.lock-hash"
mkdir -p "$PREFIX"
log "creating $PREFIX/venv with $(/usr/bin/python3 --version)"
/usr/bin/python3 -m venv "$PREFIX/venv"
log "installing $(grep -c '^[a-z]' "$lock") pinned packages from $lock"
"$PREFIX/venv/bin/pip" install --no-input --disable-pip-version-check --progress-bar off \
  --cache-dir "$CACHE/pip" --require-hashes --only-binary :all: -r "$lock" >&2
"$PREFIX/venv/bin/python" -c 'import selkies, pixelflux' || { log "the installed Selkies does not import"; exit 1; }
echo "$want" >"$PREFIX/.lock-hash"
log "installed $(grep -m1 '^selkies==' "$lock" | cut -d' ' -f1) into $PREFIX/venv"
