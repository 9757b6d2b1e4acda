#!/usr/bin/env bash
# The unit project as an unprivileged user (nobody), so that a unit test that
# needs root fails here instead of passing quietly as root: such a test
# belongs in the privileged project (vitest.config.ts). Compiles Grove's
# programs first, as root, since the unit tests' own compile could not write.
#   build/host/unit-unprivileged.sh [VITEST ARGS...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
build/compile.sh --quiet
home="$(mktemp -d /tmp/grove-unit-home.XXXXXX)"
trap 'rm -rf "$home"' EXIT
chown nobody: "$home"
# The config is loaded by vite's runner: bundling it would write into node_modules.
setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
  env HOME="$home" npx vitest run --project unit --configLoader runner "$@"
