#!/usr/bin/env bash
# Fuzzes, for a bounded time each, the parsers the helper runs on what a branch
# sends (docs/fuzzing.md): each target first replays its committed corpus, then
# tries coverage-guided inputs. Fails when an input fails; that input is saved
# in the target's corpus folder.
#   privileged-helper/test/fuzz/run.sh                        every target, CI's budget (about 3 minutes)
#   privileged-helper/test/fuzz/run.sh rfb                    one target
#   GROVE_FUZZ_SECONDS=900 privileged-helper/test/fuzz/run.sh gate-http
set -euo pipefail
cd "$(dirname "$0")/../../.."

# Seconds per target: the RFB client and the gate's HTTP reading, the largest, get the most.
declare -A budget=([rfb]=60 [gate-http]=60 [address]=30 [gate-ipc]=20)
if (($#)); then targets=("$@"); else targets=(rfb gate-http address gate-ipc); fi

failed=()
for target in "${targets[@]}"; do
  npx tsx privileged-helper/test/fuzz/fuzz.ts "$target" "${GROVE_FUZZ_SECONDS:-${budget[$target]:-60}}" || failed+=("$target")
done
if ((${#failed[@]})); then
  echo "fuzzing: ${failed[*]} failed (see above; docs/fuzzing.md says what to do)" >&2
  exit 1
fi
