#!/usr/bin/env bash
# Compiles Grove's programs from TypeScript into dist/, when a source changed
# since the last compile; otherwise it only compares file times and returns.
#   dist/privileged-helper/src/daemon.js   the helper (build/host/start-helper.sh)
#   dist/main/src/cli/grove.js             the CLI (main/bin/grove), with grove mcp and grove app
#   dist/privileged-helper/bench/main.js   the bench (grove bench), with the test
#                                          harness it starts its helpers with
# One esbuild run (build/bundle.mjs) bundles each program with the packages
# it uses (Node loads one file much faster than the hundreds of modules a
# call of the CLI would otherwise read) and splits what they share, and what
# the CLI needs for some commands only, into dist/chunks/. The native addons
# stay packages of their own. Source maps lead back to the TypeScript (node
# --enable-source-maps). It does not typecheck: npm run typecheck does.
#   build/compile.sh [--quiet]     --quiet: nothing on stderr unless it fails
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
dist="$repo/dist"
stamp="$dist/.compiled"
quiet=false
[ "${1:-}" = --quiet ] && quiet=true
say() { $quiet || echo "$*" >&2; }

# What the programs are made of: their sources (the bench's harness lives
# under test/system), the packages, and the compile itself.
sources=("$repo/main/src" "$repo/privileged-helper/src" "$repo/privileged-helper/bench" "$repo/privileged-helper/test/system")
inputs=("$repo/package.json" "$repo/package-lock.json" "$repo/build/compile.sh" "$repo/build/bundle.mjs")
[ -e "$repo/node_modules/.package-lock.json" ] && inputs+=("$repo/node_modules/.package-lock.json")

stale() {
  [ ! -e "$stamp" ] ||
    [ -n "$(find "${sources[@]}" -name '*.ts' -newer "$stamp" -print -quit)" ] ||
    [ -n "$(find "${inputs[@]}" -newer "$stamp" -print -quit)" ]
}

fail() {
  echo "compile: $*; the programs in $dist are older than their sources" >&2
  exit 1
}

if ! stale; then
  say "up to date: $dist"
  exit 0
fi
mkdir -p "$dist" || fail "cannot create $dist: run npm run build as its owner"
# One compile at a time; whoever waited finds the work done.
exec 9<"$dist"
flock 9
if ! stale; then
  say "up to date: $dist"
  exit 0
fi

started=$(date +%s%N)
# Its time is that of the sources as this compile reads them: one changed
# meanwhile is newer, and the next call compiles again.
touch "$stamp.next" || fail "cannot write into $dist: run npm run build as its owner"
node "$repo/build/bundle.mjs" || fail "esbuild failed (above)"
mv "$stamp.next" "$stamp"
say "compiled the helper, the CLI and the bench into $dist in $((($(date +%s%N) - started) / 1000000)) ms"
