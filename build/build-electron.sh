#!/usr/bin/env bash
# Builds what the Electron package carries: the shell (electron/*.cts →
# electron/dist/*.cjs), the controller bundle it imports, and the helper
# bundle the systemd service runs. The renderer is built by build:renderer.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p electron --noEmit false
# The controller bundle it imports and the helper bundle, one file each, with
# the options of every Grove bundle (build/bundle.mjs); the helper keeps its
# two native modules external (they must be built for the runtime that runs it).
node build/bundle.mjs --electron
# The bundle finds its files as the helper does in a checkout
# (privileged-helper/src/protocol/grove-files.ts): under a package.json named
# grove, the image recipes in privileged-helper/image.
cp package.json dist/helper/package.json
rm -rf dist/helper/privileged-helper
mkdir -p dist/helper/privileged-helper
cp -r privileged-helper/image dist/helper/privileged-helper/image
