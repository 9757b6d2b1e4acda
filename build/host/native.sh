#!/usr/bin/env bash
# Builds the helper's native programs (privileged-helper/native/) into
# DIR/bin and its Node addons into DIR/lib, each only when its source is newer:
#   build/host/native.sh DIR                build/host/setup.sh, into the cache
#   build/host/native.sh --sanitized DIR    AddressSanitizer and UBSan builds for
#                                           the tests (build/host/native-sanitized.sh)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
native="$repo/privileged-helper/native"

sanitized=false
if [ "${1:-}" = --sanitized ]; then sanitized=true; shift; fi
[ $# -eq 1 ] || { echo "usage: build/host/native.sh [--sanitized] DIR" >&2; exit 2; }
out_dir="$1"

program_flags=()
addon_flags=()
# Static: CRIU starts grove-action at each action, one inside a fork's freeze; no loader to run.
action_flags=(-static)
if $sanitized; then
  sanitize=(-g -fno-omit-frame-pointer -fno-sanitize-recover=all)
  program_flags=("${sanitize[@]}" -fsanitize=address -fsanitize=undefined)
  # No AddressSanitizer in an addon: its runtime must be the first library of
  # the process, which for node means preloading it into node and, through the
  # environment, into every program the tests start (rsync fails under it).
  addon_flags=("${sanitize[@]}" -fsanitize=undefined)
  # AddressSanitizer cannot link statically; the tests run no freeze.
  action_flags=()
fi

build() { # SOURCE TARGET CC-ARGS...
  local src="$native/$1" out="$out_dir/$2"; shift 2
  if [ ! -e "$out" ] || [ "$src" -nt "$out" ]; then
    mkdir -p "$(dirname "$out")"
    # Two commands, not `cc && mv`: set -e stops at a failed compile only outside an && list.
    cc -O2 -Wall -Wextra -Werror -o "$out.tmp" "$src" "$@"
    mv "$out.tmp" "$out"
    echo "built $out" >&2
  else
    echo "up to date: $out" >&2
  fi
}
node_headers="$(dirname "$(command -v node)")/../include/node"

build grove-enter.c bin/grove-enter "${program_flags[@]}" -lseccomp
build grove-mount.c bin/grove-mount "${program_flags[@]}"
build grove-netlock.c bin/grove-netlock "${program_flags[@]}" -lnftnl -lmnl
build grove-spawn.c bin/grove-spawn "${program_flags[@]}"
build grove-action.c bin/grove-action "${program_flags[@]}" "${action_flags[@]}"
build grove-share.c bin/grove-share "${program_flags[@]}" -I"$repo/kernel/grove-share"
build grove-quota.c bin/grove-quota "${program_flags[@]}"
build grove-shm-shared.c lib/grove-shm-shared.so "${addon_flags[@]}" -shared -fPIC -ldl
build peercred.c lib/peercred.node "${addon_flags[@]}" -shared -fPIC -DNODE_GYP_MODULE_NAME=peercred -I"$node_headers"
build inroot.c lib/inroot.node "${addon_flags[@]}" -shared -fPIC -DNODE_GYP_MODULE_NAME=inroot -I"$node_headers"
