#!/bin/sh
# CRIU action script for forks, checkpoints and rollbacks (one file for dump and
# restore; CRIU runs it with CRTOOLS_SCRIPT_ACTION set, in another working
# directory, so every path here is absolute and comes from the environment).
#  post-dump: the tree is still frozen, so a snapshot taken now is the same
#    instant as the memory images (GROVE_SNAPSHOT_FROM -> GROVE_SNAPSHOT_TO,
#    read-only unless GROVE_SNAPSHOT_WRITABLE: a fork's only child's files),
#    and so is the kernel tier's capture of its anonymous memory (into the
#    holder at GROVE_SHARE_SOCKET; native/grove-share.c). A fork's images
#    lack that memory, so a failed capture fails the dump; a checkpoint's
#    hold all of it (GROVE_SHARE_CAPTURED set), so there the capture only
#    says it was made, by creating that file.
#  post-resume (dump): the tree runs again and CRIU saves its private pages
#    from the twins (criu-patches/0007): the dump's instant is fixed, which
#    the helper waits for by watching for the file GROVE_THAWED_FILE.
#  pre-resume: every socket is restored and no task runs yet; traffic may flow
#    again (this opens netns.ts lockForRestore's lock), before CRIU takes the restored
#    connections out of repair mode (criu-patches/0002). With the kernel
#    tier, the memory CRIU left empty (--skip-private-anon-pages,
#    criu-patches/0006) is attached from the capture first; if that fails,
#    CRIU kills the tree rather than let it run without its memory. The tree
#    joins its branch's cpu group (GROVE_CPU_CGROUP) before any of it runs:
#    CRIU restored it outside, at the helper's weight (cgroups.ts
#    restorePlacement); a process it cannot move fails the restore the same way.

# Moves process $1 and all its descendants into the cpu group GROVE_CPU_CGROUP
# (cgroup v1: writing a pid moves all its threads). One that exited meanwhile
# has nothing left to move. Shell builtins only: a fork per thread took
# seconds on a loaded host.
join_cpu_group() {
  echo "$1" 2>/dev/null >"$GROVE_CPU_CGROUP/cgroup.procs" || [ ! -e "/proc/$1" ] || return 1
  for kids in /proc/"$1"/task/*/children; do
    line=
    read -r line <"$kids" 2>/dev/null || true # one line, without a newline
    for kid in $line; do join_cpu_group "$kid" || return 1; done
  done
}

case "$CRTOOLS_SCRIPT_ACTION" in
  post-dump)
    if [ -n "${GROVE_SHARE_SOCKET:-}" ]; then
      if "$GROVE_SHARE_TOOL" capture "$GROVE_SHARE_SOCKET" "$CRTOOLS_INIT_PID" >/dev/null; then
        [ -z "${GROVE_SHARE_CAPTURED:-}" ] || : >"$GROVE_SHARE_CAPTURED"
      elif [ -z "${GROVE_SHARE_CAPTURED:-}" ]; then
        exit 1
      fi
    fi
    if [ -n "${GROVE_SNAPSHOT_TO:-}" ]; then
      ro=-r
      [ -z "${GROVE_SNAPSHOT_WRITABLE:-}" ] || ro=
      exec /usr/bin/btrfs subvolume snapshot $ro -- "$GROVE_SNAPSHOT_FROM" "$GROVE_SNAPSHOT_TO" >/dev/null
    fi ;;
  post-resume)
    if [ -n "${GROVE_THAWED_FILE:-}" ]; then
      : >"$GROVE_THAWED_FILE"
    fi ;;
  pre-resume)
    if [ -n "${GROVE_SHARE_SOCKET:-}" ]; then
      "$GROVE_SHARE_TOOL" attach "$GROVE_SHARE_SOCKET" "$CRTOOLS_INIT_PID" >/dev/null || exit 1
    fi
    # The lock opens (by an addition, which nftables commits at once:
    # netns.ts, native/grove-netlock.c) while the tree joins its cpu group:
    # both are on the child's way to its first frame, and neither waits for
    # the other.
    opening=
    if [ -n "${GROVE_LOCKED_NETNS:-}" ]; then
      "$GROVE_NETLOCK_TOOL" open "$GROVE_LOCKED_NETNS" "$GROVE_LOCK_TABLE" &
      opening=$!
    fi
    if [ -n "${GROVE_CPU_CGROUP:-}" ] && ! join_cpu_group "$CRTOOLS_INIT_PID"; then
      wait
      exit 1
    fi
    if [ -n "$opening" ]; then
      wait "$opening" || exit 1
    fi ;;
esac
exit 0
