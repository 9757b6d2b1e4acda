#!/usr/bin/env bash
# Builds grove_share.ko against one kernel's headers.
#   kernel/build.sh HEADERS_DIR OUT_DIR [GROVE_SHARE_BUILT_FOR=BUILD]
# (the last only in kernel/test.sh: a module that claims another kernel build)
# HEADERS_DIR is a kernel's build tree (/lib/modules/$(uname -r)/build on a
# host, or the headers build/host/kernel.sh unpacked into the cache). Kbuild
# writes next to the sources, so they are copied to OUT_DIR first.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
headers="$1" out="$2"
shift 2
mkdir -p "$out"
cp "$here/grove-share/grove_share.c" "$here/grove-share/grove_share.h" "$here/grove-share/Kbuild" "$out/"
# pahole is not installed: no BTF for the module (it is not needed to load it).
make -s -C "$headers" M="$out" CONFIG_DEBUG_INFO_BTF_MODULES= "$@" modules >&2
echo "$out/grove_share.ko"
