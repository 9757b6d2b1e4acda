#!/usr/bin/env bash
# Runs CRIU's own zdtm tests that our CRIU patches add (the test/zdtm/static/*.c
# files that build/host/criu-patches/*.patch create), and upstream's zdtm
# tests of the code our patches change, against the CRIU that
# build/host/criu.sh installed. Ours cover the fixes offered as upstream
# candidates, in the form CRIU's maintainers run (criu-patches/README.md).
# The tests are built in a scratch copy of the source tree CRIU was built from
# ($GROVE_CACHE/criu-build/tree, left by criu.sh), so the cache is not touched.
# Needs root, and Debian's python3 with python3-yaml and python3-protobuf
# (build/host/setup.sh installs them).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="${GROVE_CACHE:-/var/cache/grove}"
criu="$CACHE/criu/sbin/criu"
tree="$CACHE/criu-build/tree"
log() { printf '[criu-zdtm] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root: zdtm dumps and restores its tests as root"
if [ ! -x "$criu" ] || [ ! -d "$tree/test/zdtm" ]; then
  die "no built CRIU in $CACHE (run build/host/setup.sh)"
fi

mapfile -t ours < <(sed -n 's|^+++ b/test/zdtm/static/\([^/]*\)\.c$|\1|p' "$repo"/build/host/criu-patches/*.patch | sort -u)
[ ${#ours[@]} -gt 0 ] || die "no patch adds a zdtm test"
for test in "${ours[@]}"; do
  [ -e "$tree/test/zdtm/static/$test.c" ] || die "$tree has no $test.c: it is not built from these patches (run build/host/setup.sh)"
done
# Upstream's own tests of the code those fixes and some speed-ups change,
# so that a patch that breaks what CRIU did right fails here too: POSIX
# locks (0003), unix sockets and the descriptors they carry (0004, 0007),
# shared memory (0008), a file mapping's mode (0009), tmpfs (0014, 0016).
upstream=(
  file_locks00 file_locks01 file_locks02 file_locks03 file_locks04 file_locks05
  scm00 scm01 scm02 scm03 scm04 scm05 scm06 scm09 sockets00 socket_queues sk-unix-unconn sk-unix-rel
  shm shm-mp maps_file_prot tempfs
)
tests=("${ours[@]}" "${upstream[@]}")

# zdtm runs each test as an unprivileged uid, so CRIU needs CAP_SYS_RESOURCE
# over it (prlimit() of another user's process). Where root lacks that
# capability (some containers and sandboxes drop it from the bounding set),
# only the uns flavor can work: the test runs in a user namespace CRIU's root
# owns, and has every capability there.
cap_sys_resource=24
if (($(grep '^CapEff:' /proc/self/status | awk '{print "0x" $2}') >> cap_sys_resource & 1)); then
  flavors=(h ns uns)
else
  flavors=(uns)
  log "root lacks CAP_SYS_RESOURCE here: running the uns flavor only (h and ns fail at CRIU's prlimit() of the test)"
fi

scratch="$(mktemp -d /var/tmp/grove-zdtm.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
# zdtm's temporary roots (uns flavor) go here too, and with it; the test's
# unprivileged uid must reach them.
chmod 0755 "$scratch"
export TMPDIR="$scratch"
cp -a "$tree" "$scratch/criu"
# zdtm.py and the python package it imports (pycriu, whose protobuf modules
# `make lib` generates) run under Debian's python3, which has the modules it
# needs, not whichever python3 comes first in PATH.
export PATH="/usr/sbin:/usr/bin:/sbin:/bin"
make -C "$scratch/criu" -j"$(nproc)" lib >&2
make -C "$scratch/criu/test/zdtm/lib" -j"$(nproc)" >&2
make -C "$scratch/criu/test/zdtm/static" -j"$(nproc)" "${tests[@]}" >&2

log "running ${tests[*]} in ${flavors[*]}"
args=()
for test in "${tests[@]}"; do args+=(-t "zdtm/static/$test"); done
cd "$scratch/criu/test"
python3 zdtm.py run "${args[@]}" -f "$(IFS=,; echo "${flavors[*]}")" --keep-going --criu-bin "$criu"
