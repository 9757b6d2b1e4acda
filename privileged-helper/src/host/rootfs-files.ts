// Reading and writing files inside a branch's root from the host, as root,
// without following any symlink the branch may have planted (a link to /etc
// on the host must not turn a write into the branch into a write to the host).
import { constants } from 'node:fs';
import { lchown, lstat, mkdir, open } from 'node:fs/promises';
import path from 'node:path';

async function safeDir(rootfs: string, relDir: string, owner: FileOwner = null): Promise<string> {
  let dir = rootfs;
  for (const part of relDir.split('/').filter(Boolean)) {
    dir = path.join(dir, part);
    const st = await lstat(dir).catch(() => null);
    if (st === null) {
      await mkdir(dir, { mode: 0o755 });
      if (owner) await lchown(dir, owner.uid, owner.gid);
    } else if (!st.isDirectory()) throw new Error(`${dir} is not a directory (a symlink?): refusing to write into it`);
  }
  return dir;
}

export async function readInside(rootfs: string, rel: string): Promise<string> {
  const dir = await safeDir(rootfs, path.dirname(rel));
  const fh = await open(path.join(dir, path.basename(rel)), constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => null);
  if (!fh) return '';
  try {
    return await fh.readFile('utf8');
  } finally {
    await fh.close();
  }
}

/** Host ids to give what is written (a branch in a user namespace: its root's, see host/idmap.ts); null keeps root's. */
export type FileOwner = { uid: number; gid: number } | null;

export async function writeInside(rootfs: string, rel: string, text: string, owner: FileOwner): Promise<void> {
  const dir = await safeDir(rootfs, path.dirname(rel), owner);
  const fh = await open(path.join(dir, path.basename(rel)), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
  try {
    if (owner) await fh.chown(owner.uid, owner.gid);
    await fh.writeFile(text);
  } finally {
    await fh.close();
  }
}

