#!/usr/bin/env bash
# Runs every test: installs what is missing, then typecheck, lint, unit tests
# and the system tests (real helper, btrfs, crun, netns and CRIU, as root),
# then the kernel tier's module under qemu (kernel/test.sh), then the app's
# end-to-end tests (Chromium against `grove app --web`).
# The system tests run their own helper instance and remove all it made.
set -euo pipefail
repo="$(cd "$(dirname "$0")" && pwd)"
step() { printf '\n==> %s\n' "$*" >&2; }
cd "$repo"

build/host/setup.sh

step "typecheck"
npm run --silent typecheck
step "lint"
npm run --silent lint
step "unit, renderer and system tests"
npx vitest run
step "kernel tier: grove_share under qemu (kernel/test.sh)"
kernel/test.sh
step "end-to-end tests of the app (Playwright + Debian's Chromium, real helper)"
npm run --silent test:e2e
