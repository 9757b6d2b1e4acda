// Files as a tree in a user namespace sees them. Its processes run as the
// host ids hostBase.. (registry/id-ranges.ts); the image its branches share is
// owned by host root on disk, so each branch reads it through an idmapped
// mount (native/grove-mount.c, host/overlay.ts) that shows uid/gid N as hostBase+N. What the
// branch writes lands in its own upper as the host ids it runs as, so its
// own files (upper, home) are shifted on disk once, when they are made.
import { lchown, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/** A tree's range of host uids and gids (registry/id-ranges.ts gives them out). */
export interface IdRange {
  hostBase: number;
  size: number;
}

/** Shifts the ownership of `dir` and everything under it by hostBase (files the image's root owns become the tree's root's). */
export async function shiftOwnership(dir: string, range: IdRange): Promise<void> {
  const st = await lstat(dir);
  if (st.uid >= range.size || st.gid >= range.size) throw new Error(`${dir} is already owned by ${st.uid}:${st.gid}, outside the ids a branch maps`);
  await lchown(dir, range.hostBase + st.uid, range.hostBase + st.gid);
  if (!st.isDirectory()) return;
  for (const entry of await readdir(dir)) await shiftOwnership(path.join(dir, entry), range);
}

/** The host ids of a tree's root, which the helper gives what it writes into a branch. */
export function rootOwner(range: IdRange | null): { uid: number; gid: number } | null {
  return range && { uid: range.hostBase, gid: range.hostBase };
}
