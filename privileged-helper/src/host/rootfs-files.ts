// Reading and writing files inside a branch's root from the host, as root,
// without following any symlink the branch may have planted (a link to /etc
// on the host must not turn a write into the branch into a write to the host).
import { constants } from 'node:fs';
import { lchown, lstat, mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

async function safeDir(rootfs: string, relDir: string, owner: FileOwner = null): Promise<string> {
  let dir = rootfs;
  for (const part of relDir.split('/').filter(Boolean)) {
    dir = path.join(dir, part);
    // Taken as missing, and made: mkdir says what else is wrong.
    const st = await lstat(dir).catch(() => null);
    if (st === null) {
      await mkdir(dir, { mode: 0o755 });
      if (owner) await lchown(dir, owner.uid, owner.gid);
    } else if (!st.isDirectory()) throw new Error(`${dir} is not a directory (a symlink?): refusing to write into it`);
  }
  return dir;
}

/** More than any identity or configuration file Grove edits holds; a branch may have made one any size. */
export const MAX_READ_BYTES = 1 << 20;

/**
 * Never blocks and never makes a terminal the helper's: a branch may have left
 * a FIFO or a device where a file should be (opening a FIFO with no writer
 * waits for good).
 */
const NEVER_WAIT = constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** A file of the branch's root, '' when there is none; refused when it is not a regular file or is over MAX_READ_BYTES. */
export async function readInside(rootfs: string, rel: string): Promise<string> {
  const dir = await safeDir(rootfs, path.dirname(rel));
  // None there, or a link (never followed; writeInside refuses one).
  const fh = await open(path.join(dir, path.basename(rel)), constants.O_RDONLY | NEVER_WAIT).catch(() => null);
  if (!fh) return '';
  try {
    await requireRegular(fh, rel);
    const { bytesRead, buffer } = await fh.read(Buffer.alloc(MAX_READ_BYTES + 1), 0, MAX_READ_BYTES + 1, 0);
    if (bytesRead > MAX_READ_BYTES) throw new Error(`/${rel} in the branch is over ${MAX_READ_BYTES} bytes: Grove does not read it`);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await fh.close();
  }
}

async function requireRegular(fh: FileHandle, rel: string): Promise<void> {
  if (!(await fh.stat()).isFile()) throw new Error(`/${rel} in the branch is not a regular file: Grove does not touch it`);
}

/** Host ids to give what is written (a branch in a user namespace: its root's, see host/idmap.ts); null keeps root's. */
export type FileOwner = { uid: number; gid: number } | null;

export async function writeInside(rootfs: string, rel: string, text: string, owner: FileOwner): Promise<void> {
  const dir = await safeDir(rootfs, path.dirname(rel), owner);
  const fh = await open(path.join(dir, path.basename(rel)), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | NEVER_WAIT, 0o644);
  try {
    await requireRegular(fh, rel);
    if (owner) await fh.chown(owner.uid, owner.gid);
    await fh.writeFile(text);
  } finally {
    await fh.close();
  }
}
