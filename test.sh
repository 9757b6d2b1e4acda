#!/usr/bin/env bash
# Runs every test: installs what is missing, then typecheck, lint, unit tests
# and the system tests (real helper, btrfs, crun, netns and CRIU, as root),
# the native programs' unit tests again under sanitizers, CRIU's own zdtm tests
# of our CRIU patches, then the kernel tier
# under qemu (kernel/test.sh: the module; kernel/helper-test.sh: the helper
# forking through it), then the app's end-to-end tests (Chromium against
# `grove app --web`).
# The system tests run their own helper instance and remove all it made.
set -euo pipefail
repo="$(cd "$(dirname "$0")" && pwd)"
step() { printf '\n==> %s\n' "$*" >&2; }
cd "$repo"

# One test run per machine at a time: two at once share its CPUs (the system
# tests wait on real desktops, so they fail on nothing but time-outs) and its
# package installs. A second run waits here, saying for whom. flock -o keeps
# the lock out of what the tests start (a helper they leave running must not
# hold it after the run).
lock=/run/grove-test-run.lock
if [[ -z "${GROVE_TEST_RUN_LOCKED:-}" ]]; then
  flock -n "$lock" true || step "another test run holds this machine ($(cat "$lock.owner" 2>/dev/null || echo "$lock")): waiting for it to end"
  GROVE_TEST_RUN_LOCKED=1 exec flock -o "$lock" "$repo/test.sh" "$@"
fi
echo "pid $$ in $repo since $(date -u +%H:%M:%S) UTC" > "$lock.owner"

build/host/setup.sh

# Every stage runs, whatever the ones before it did, so that one run shows
# all that is wrong; the summary at the end says which failed, and the run
# fails if any did. Only a failed setup stops it: nothing can run without it.
results=()
stage() { # NAME COMMAND...
  local name="$1" started=$SECONDS
  shift
  step "$name"
  if "$@"; then
    results+=("passed  $name ($((SECONDS - started)) s)")
  else
    results+=("FAILED  $name ($((SECONDS - started)) s, exit $?)")
  fi
}

stage "typecheck" npm run --silent typecheck
stage "lint" npm run --silent lint
stage "unit tests, as an unprivileged user (build/host/unit-unprivileged.sh)" build/host/unit-unprivileged.sh
stage "privileged, renderer and system tests" npx vitest run --project privileged --project renderer --project system
stage "the native programs' unit tests against AddressSanitizer and UBSan builds (build/host/native-sanitized.sh)" build/host/native-sanitized.sh
stage "CRIU's zdtm tests of our upstream-candidate CRIU fixes, against the built CRIU (build/host/criu-zdtm.sh)" build/host/criu-zdtm.sh
stage "fuzzing: the RFB client and the egress gate's parsers, coverage-guided, about 3 minutes (privileged-helper/test/fuzz/run.sh)" privileged-helper/test/fuzz/run.sh
stage "kernel tier: grove_share under qemu, on Debian 12's 6.1 (kernel/test.sh)" kernel/test.sh
stage "kernel tier: grove_share under qemu, on the 6.12 Debian 12 also ships (kernel/test.sh 6.12)" kernel/test.sh 6.12
stage "kernel tier: the helper itself forks and rolls back through grove_share under qemu (kernel/helper-test.sh)" kernel/helper-test.sh
stage "packaging: the Electron package's files against a stub Electron (build/check-packaging.sh)" build/check-packaging.sh
stage "end-to-end tests of the app (Playwright + Debian's Chromium, real helper)" npm run --silent test:e2e

step "summary"
printf '  %s\n' "${results[@]}" >&2
if printf '%s\n' "${results[@]}" | grep -q '^FAILED'; then
  echo "test.sh: $(printf '%s\n' "${results[@]}" | grep -c '^FAILED') of ${#results[@]} stages failed" >&2
  exit 1
fi
echo "test.sh: all ${#results[@]} stages passed" >&2
