#!/usr/bin/env bash
# Builds the native programs with AddressSanitizer (LeakSanitizer with it) and
# UBSan into a scratch directory (build/host/native.sh --sanitized), and runs
# the unit tests that start them against those builds, through the helper's
# per-tool paths (GROVE_SPAWN, GROVE_ENTER, ...). It fails if a test fails or
# if a sanitizer reported anything, even in a program whose output no test reads.
# The addons get UBSan only (native.sh says why). grove-mount and grove-quota
# are built but run by no unit test: the system tests start them.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

scratch="$(mktemp -d /tmp/grove-sanitized.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
build/host/native.sh --sanitized "$scratch"

export GROVE_SPAWN="$scratch/bin/grove-spawn" GROVE_ENTER="$scratch/bin/grove-enter"
export GROVE_ACTION="$scratch/bin/grove-action" GROVE_NETLOCK="$scratch/bin/grove-netlock"
export GROVE_SHARE="$scratch/bin/grove-share" GROVE_MOUNT="$scratch/bin/grove-mount"
export GROVE_QUOTA="$scratch/bin/grove-quota"
export GROVE_INROOT="$scratch/lib/inroot.node" GROVE_PEERCRED="$scratch/lib/peercred.node"
# AddressSanitizer's and LeakSanitizer's reports go to files, one per process,
# so that one in a program whose output no test reads (grove-spawn's leaks at
# its end) still fails the run. UBSan's go there from the addons; from the
# programs, GCC's runtime that combines both prints them on stderr whatever
# log_path says, and ends the program (-fno-sanitize-recover): its test sees that.
mkdir "$scratch/reports"
export ASAN_OPTIONS="log_path=$scratch/reports/report" UBSAN_OPTIONS="log_path=$scratch/reports/report:print_stacktrace=1"

# The unit tests that fail when these programs are missing: grove-spawn runs
# every program of run(), inroot.node opens the files diffs and merges read.
status=0
npx vitest run --project unit --project privileged \
  privileged-helper/test/unit/run.test.ts \
  privileged-helper/test/privileged/grove-enter.test.ts \
  privileged-helper/test/privileged/grove-action.test.ts \
  privileged-helper/test/unit/share-holder.test.ts \
  privileged-helper/test/unit/version-captures.test.ts \
  privileged-helper/test/privileged/peer-identity.test.ts \
  privileged-helper/test/unit/caller-files.test.ts \
  privileged-helper/test/unit/diff.test.ts \
  privileged-helper/test/unit/diff-under.test.ts \
  privileged-helper/test/unit/merge-plan.test.ts || status=$?

reports=("$scratch"/reports/*)
if [ -e "${reports[0]}" ]; then
  for report in "${reports[@]}"; do
    printf '\n--- %s\n' "$(basename "$report")" >&2
    cat "$report" >&2
  done
  echo "native-sanitized: the sanitizers reported ${#reports[@]} time(s) (above)" >&2
  exit 1
fi
exit "$status"
