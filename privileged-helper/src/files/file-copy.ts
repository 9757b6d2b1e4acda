// Files into and out of a running branch, as `docker cp` copies them: a file
// or a folder, into an existing folder (under its own name) or as a new path.
//
// The branch's side is never touched from the host. Its tar runs inside the
// branch (exec-service.ts startInBranch: its namespaces, root, cgroups and
// cage), so every path there is resolved by the kernel inside the branch's
// root with the branch root's permissions: a link the branch plants, or swaps
// in mid-copy, leads somewhere else in the branch, never to the host. The
// host's side runs as the caller (host/as-caller.ts): a copy in reads only
// what they may read; a copy out writes only where they may write, without
// the branch's owners, modes' set-id bits or device nodes, and through a
// private folder beside the destination, so a name the branch chose never
// lands anywhere but there. Between the two the helper only counts bytes.
import path from 'node:path';
import type { ExecService, ExecTarget } from '../exec/exec-service.js';
import { asCaller, type Caller } from '../host/as-caller.js';
import { callerBytes, callerPath, callerTarCommand } from '../host/caller-files.js';
import { pipePrograms, SAID_INVALID, SAID_NOT_FOUND } from '../host/pipe-programs.js';
import { requireSpace } from '../host/space.js';
import type { CopyResult } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';

/**
 * Inside the branch: puts the single entry of the tar on stdin at $1.
 * $1 the destination; $2 the entry's name; $3 "into" when an existing folder
 * at $1 receives the entry under its own name (cp), "as" when $1 becomes it
 * (a project, whose parent folders are made). A link at the destination is
 * refused: the caller named a path, not where it points.
 */
const PUT_IN_BRANCH = `set -eu
dest=$1 name=$2 mode=$3
say() { echo "grove: $*" >&2; exit ${SAID_INVALID}; }
[ -L "$dest" ] && say "$dest is a symlink in the branch: name the path it points to"
if [ "$mode" = into ] && [ -d "$dest" ]; then target=$dest/$name; else target=$dest; fi
[ -L "$target" ] && say "$target is a symlink in the branch"
parent=$(dirname -- "$target")
if [ "$mode" = as ]; then mkdir -p -- "$parent"; fi
[ -d "$parent" ] || say "$parent is not a folder in the branch"
tmp=$(mktemp -d -- "$parent/.grove-copy.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
tar --extract --no-same-owner --file - --directory "$tmp"
[ -e "$tmp/$name" ] || say "nothing named $name came"
if [ -d "$tmp/$name" ] && [ -d "$target" ]; then rmdir -- "$target" 2>/dev/null || say "$target is a folder that is not empty"; fi
mv -T -- "$tmp/$name" "$target"
`;

/** Inside the branch: a tar of $1 (a file, a folder, or a link as itself) on stdout, its one entry named after it. */
const TAKE_FROM_BRANCH = `set -eu
src=$1
[ -e "$src" ] || [ -L "$src" ] || { echo "grove: there is no $src in the branch" >&2; exit ${SAID_NOT_FOUND}; }
exec tar --create --file - --directory "$(dirname -- "$src")" -- "$(basename -- "$src")"
`;

/**
 * On the host, as the caller: puts the single entry named $2 of the tar on
 * stdin at $1 (into an existing folder under its name, else as $1). The
 * branch chose every name and byte of the tar: it is unpacked in a private
 * folder (GNU tar refuses names with "..", and makes links that point out
 * last), and only the entry asked for is moved out of it.
 */
const PUT_ON_HOST = `set -eu
dest=$1 name=$2
say() { echo "grove: $*" >&2; exit ${SAID_INVALID}; }
if [ -d "$dest" ]; then target=$dest/$name; else target=$dest; fi
parent=$(dirname -- "$target")
[ -d "$parent" ] || say "$parent is not a folder"
tmp=$(mktemp -d -- "$parent/.grove-copy.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
tar --extract --no-same-owner --no-same-permissions --file - --directory "$tmp"
[ -e "$tmp/$name" ] || [ -L "$tmp/$name" ] || say "the branch sent nothing named $name"
if [ -d "$tmp/$name" ] && [ -e "$target" ]; then say "$target exists"; fi
mv -T -- "$tmp/$name" "$target"
`;

export type CopyProgress = (bytes: number, total: number | null) => void;

export interface CopyDeps {
  exec: ExecService;
  /** Where branches' files are (the pool), for the room a copy in needs. */
  poolDir: string;
}

export class FileCopy {
  constructor(private readonly d: CopyDeps) {}

  /** Copies the caller's `from` into the branch at `to`; `as`: `to` becomes it (a project) rather than receiving it. */
  async copyIn(
    target: ExecTarget,
    what: { branch: string; from: string; to: string; as?: boolean },
    caller: Caller,
    progress?: CopyProgress,
  ): Promise<CopyResult> {
    const started = Date.now();
    const source = await callerPath(caller, what.from);
    const total = await callerBytes(caller, source);
    await requireSpace(`copying ${source.real} into '${what.branch}'`, [{ where: 'the pool', dir: this.d.poolDir, bytes: total, why: 'the copy' }]);
    const dest = what.as ? branchPath(what.to) : intoPath(what.to);
    const inBranch = await this.d.exec.inBranchCommand(target, ['sh', '-c', PUT_IN_BRANCH, 'sh', dest, path.basename(source.real), what.as ? 'as' : 'into']);
    const bytes = await pipePrograms({
      from: { command: await callerTarCommand(caller, source), name: `reading ${source.real}` },
      to: { ...inBranch, name: `writing ${what.to} in '${what.branch}'`, end: (c) => this.d.exec.end(c) },
      onBytes: throttled((n) => progress?.(n, total)),
    });
    return { bytes, ms: Date.now() - started };
  }

  /** Copies the branch's `from` to the caller's `to` on the host, written as the caller. */
  async copyOut(target: ExecTarget, what: { branch: string; from: string; to: string }, caller: Caller, progress?: CopyProgress): Promise<CopyResult> {
    const started = Date.now();
    const from = branchPath(what.from);
    const inBranch = await this.d.exec.inBranchCommand(target, ['sh', '-c', TAKE_FROM_BRANCH, 'sh', from]);
    const bytes = await pipePrograms({
      from: { ...inBranch, name: `reading ${what.from} in '${what.branch}'`, end: (c) => this.d.exec.end(c) },
      to: { command: await asCaller(caller, ['sh', '-c', PUT_ON_HOST, 'sh', what.to, path.posix.basename(from)]), name: `writing ${what.to}` },
      onBytes: throttled((n) => progress?.(n, null)),
    });
    return { bytes, ms: Date.now() - started };
  }
}

/** A path in the branch as the scripts take it: normalized, without a trailing slash, and never the branch's root itself. */
function branchPath(p: string): string {
  const normal = path.posix.normalize(p).replace(/\/+$/, '');
  if (normal === '' || normal === '/') throw new GroveError('E_INVALID_PARAMS', "name a file or folder in the branch, not its root '/'");
  return normal;
}

/** Where a copy in goes: as branchPath, but the root may receive a file or folder under its own name. */
function intoPath(p: string): string {
  return path.posix.normalize(p) === '/' ? '/' : branchPath(p);
}

/** At most one call every half second (and none in between): progress events for a copy, not one per chunk. */
function throttled(fn: (n: number) => void): (n: number) => void {
  let last = 0;
  return (n) => {
    const now = Date.now();
    if (now - last < 500) return;
    last = now;
    fn(n);
  };
}
