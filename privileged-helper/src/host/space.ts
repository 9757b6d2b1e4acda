// Free space, and refusing an operation that would not fit before it starts
// (E_NO_SPACE, with the numbers), so that a full pool never yields children
// that cannot write or a checkpoint that dies half-way in CRIU.
import { statfs } from 'node:fs/promises';
import { GroveError } from '../protocol/wire.js';

export const MiB = 2 ** 20;

/**
 * Room a new branch needs for its first writes: a desktop's caches and
 * Chromium's profile grow its upper by tens of MiB in its first minutes.
 */
export const BRANCH_HEADROOM_BYTES = 256 * MiB;

/** Room a version needs beside its CRIU images: the snapshot of its files (metadata) and CRIU's own files. */
export const VERSION_HEADROOM_BYTES = 64 * MiB;

export interface Space {
  freeBytes: number;
  totalBytes: number;
}

/** Filesystems kept in a sparse file of another (the pool's loop file): root → the folder of its file. */
const backing = new Map<string, string>();

/**
 * Says that the filesystem mounted at `root` lives in a sparse file in
 * `fileDir`: a write into it may take as much of that filesystem, so its
 * free space is the lesser of the two (a full host disk is then an
 * E_NO_SPACE before an operation, never a failing write in one).
 */
export function backedBy(root: string, fileDir: string): void {
  backing.set(root, fileDir);
}

/** What an unprivileged writer could still write there (statfs's available blocks; the backing filesystem's too, see backedBy). */
export async function spaceAt(dir: string): Promise<Space> {
  const s = await statfs(dir);
  const own = { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
  const root = [...backing.keys()].find((r) => dir === r || dir.startsWith(`${r}/`));
  if (root === undefined) return own;
  const host = await statfs(backing.get(root)!);
  return { ...own, freeBytes: Math.min(own.freeBytes, host.bavail * host.bsize) };
}

export interface SpaceNeed {
  /** Where, in words: 'the pool', 'the scratch space'. */
  where: string;
  /** A directory on that filesystem. */
  dir: string;
  bytes: number;
  /** What the estimate is made of. */
  why: string;
}

/** Refuses with E_NO_SPACE, saying how much is needed and free, when any need does not fit. */
export async function requireSpace(operation: string, needs: readonly SpaceNeed[]): Promise<void> {
  for (const need of needs) {
    const { freeBytes } = await spaceAt(need.dir);
    if (freeBytes >= need.bytes) continue;
    throw new GroveError(
      'E_NO_SPACE',
      `${operation} needs about ${mib(need.bytes)} MiB in ${need.where} (${need.why}) and ${need.where} has ${mib(freeBytes)} MiB free: ` +
        'discard branches or delete versions (grove versions), then try again',
    );
  }
}

export function mib(bytes: number): number {
  return Math.ceil(bytes / MiB);
}
