#!/usr/bin/env bash
# Builds what the Electron package carries: the shell (electron/*.cts →
# electron/dist/*.cjs), the controller bundle it imports, and the helper
# bundle the systemd service runs. The renderer is built by build:renderer.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p electron --noEmit false
npx esbuild main/src/app/start.ts --bundle --platform=node --format=esm --target=node20 \
  --outfile=electron/dist/controller.mjs --external:bufferutil --external:utf-8-validate --log-level=warning
# The helper keeps its two native modules external (they must be built for the
# runtime that runs it); everything else is bundled.
npx esbuild privileged-helper/src/daemon.ts --bundle --platform=node --format=esm --target=node20 \
  --outfile=dist/helper/daemon.mjs --external:better-sqlite3 --external:node-pty --log-level=warning \
  --banner:js="import { createRequire as __groveRequire } from 'node:module'; const require = __groveRequire(import.meta.url);"
# The bundle finds its files as the helper does in a checkout
# (privileged-helper/src/protocol/grove-files.ts): under a package.json named
# grove, the image recipes in privileged-helper/image.
cp package.json dist/helper/package.json
rm -rf dist/helper/privileged-helper
mkdir -p dist/helper/privileged-helper
cp -r privileged-helper/image dist/helper/privileged-helper/image
