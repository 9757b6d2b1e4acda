// Files of a branch's tree opened from the host as if the tree were the whole
// filesystem (native/inroot.c: openat2 with RESOLVE_IN_ROOT): no link the
// branch plants or swaps in mid-walk, and no "..", leads out of the tree.
import { closeSync, existsSync, fstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { open, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { inrootAddonPath } from '../tool-paths.js';

interface Addon {
  openInRoot(root: string, rel: string): number;
}

/** Nothing at the path. */
const ABSENT = new Set(['ENOENT', 'ENOTDIR']);
/** Something that is not a regular file or folder one may open: a link (O_NOFOLLOW), a socket, a device on a nodev mount. */
const UNOPENABLE = new Set(['ELOOP', 'ENXIO', 'ENODEV', 'EACCES', 'EPERM', 'EXDEV']);

let addon: Addon | null = null;

function load(): Addon {
  if (addon) return addon;
  const file = inrootAddonPath(process.env);
  if (!existsSync(file)) throw new Error(`${file} is missing: run build/host/setup.sh (the helper opens branches' files with it)`);
  addon = createRequire(import.meta.url)(file) as Addon;
  return addon;
}

/**
 * A read-only handle on the regular file `rel` of the tree at `root`,
 * resolved inside it; null when there is none (missing, not a regular file,
 * or a link loop). The descriptor openat2 gave is re-opened through
 * /proc/self/fd, which names that very file, never a path again.
 */
export async function openFileInRoot(root: string, rel: string): Promise<FileHandle | null> {
  const fd = openOrWhy(root, rel);
  if (typeof fd === 'string') return null;
  try {
    if (!fstatSync(fd).isFile()) return null; // a fifo, a device, a folder: never read
    return await open(`/proc/self/fd/${fd}`, 'r');
  } finally {
    closeSync(fd);
  }
}

/** What is at `rel` in the tree at `root`, resolved inside it (the last component not followed). */
export function kindInRoot(root: string, rel: string): 'none' | 'dir' | 'other' {
  const fd = openOrWhy(root, rel);
  if (fd === 'absent') return 'none';
  if (fd === 'unopenable') return 'other';
  try {
    return fstatSync(fd).isDirectory() ? 'dir' : 'other';
  } finally {
    closeSync(fd);
  }
}

/**
 * The target of the link `rel` in the tree at `root`; null when it is no
 * link. Its folder is opened inside the tree, and the link read through that
 * descriptor by its last name alone, so no path is resolved again.
 */
export function readLinkInRoot(root: string, rel: string): string | null {
  const name = path.posix.basename(rel);
  const dir = openOrWhy(root, path.posix.dirname(rel));
  if (typeof dir === 'string' || name === '' || name === '..') return null;
  try {
    if (!fstatSync(dir).isDirectory()) return null;
    return readlinkSync(`/proc/self/fd/${dir}/${name}`);
  } catch (err) {
    if (['EINVAL', 'ENOENT'].includes((err as NodeJS.ErrnoException).code ?? '')) return null; // not a link, or gone
    throw err;
  } finally {
    closeSync(dir);
  }
}

function openOrWhy(root: string, rel: string): number | 'absent' | 'unopenable' {
  try {
    return load().openInRoot(root, rel);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (ABSENT.has(code)) return 'absent';
    if (UNOPENABLE.has(code)) return 'unopenable';
    throw err;
  }
}
