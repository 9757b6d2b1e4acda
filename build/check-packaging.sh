#!/usr/bin/env bash
# Checks the electron-builder configuration without an Electron binary (none
# can be downloaded here): builds the shell, then `--linux dir` against a stub
# Electron dist. It proves the config, the file sets and app.asar, and that
# the controller bundle the shell imports loads under Node; it cannot run the
# window.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
stub="$(mktemp -d /tmp/grove-stub-electron.XXXXXX)"
trap 'rm -rf "$stub"' EXIT
printf '#!/bin/sh\necho "stub electron: not runnable" >&2; exit 1\n' > "$stub/electron"
chmod +x "$stub/electron"
echo "41.7.1" > "$stub/version"
npm run --silent build:electron
# Electron's main process loads the controller as Node would: its bundled
# CommonJS packages need the bundle's require().
node --input-type=module -e '
const { startApp } = await import(process.argv[1]);
if (typeof startApp !== "function") throw new Error("the controller bundle exports no startApp");' "$repo/electron/dist/controller.mjs"
npx electron-builder --linux dir --config build/electron-builder.yml \
  -c.electronDist="$stub" -c.electronVersion=41.7.1 -c.directories.output="$stub/out" >&2
test -f "$stub/out/linux-unpacked/resources/app.asar"
test -f "$stub/out/linux-unpacked/resources/helper/grove-helper.service"
test -f "$stub/out/linux-unpacked/resources/helper/daemon.mjs"
test -f "$stub/out/linux-unpacked/resources/helper/package.json"
test -x "$stub/out/linux-unpacked/resources/helper/privileged-helper/image/desktop/build.sh"
npx asar list "$stub/out/linux-unpacked/resources/app.asar" 2>/dev/null | grep -q '/electron/dist/main.cjs' ||
  node -e 'const a=require("@electron/asar");const l=a.listPackage(process.argv[1]);if(!l.some(f=>f.endsWith("/electron/dist/main.cjs")))process.exit(1)' "$stub/out/linux-unpacked/resources/app.asar"
echo "packaging config OK: the controller bundle loads; app.asar, helper bundle with its image recipes and service unit in place (stub Electron, not runnable)"
