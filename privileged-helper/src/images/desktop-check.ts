// Whether an image can be a workspace's desktop: Grove starts every branch as
// `tini -- /usr/local/lib/grove/session.sh`, which starts Xvnc and openbox.
// An image that lacks any of them would start a branch that never shows a
// desktop; it is refused at `grove ws create` with what is missing and how to
// add it. The image's files are looked at from the host, so every path is
// resolved inside the image's root by hand: a link in a pulled image pointing
// at /etc is followed to the image's /etc, never the host's.
import { lstat, readlink } from 'node:fs/promises';
import path from 'node:path';

/** What a desktop needs, by the path it is found at, and what provides it. */
const NEEDED: readonly { paths: readonly string[]; what: string }[] = [
  { paths: ['/usr/local/lib/grove/session.sh'], what: "Grove's desktop session (/usr/local/lib/grove/session.sh)" },
  { paths: ['/usr/bin/tini', '/sbin/tini'], what: 'tini (package tini)' },
  { paths: ['/bin/bash', '/usr/bin/bash'], what: 'bash (package bash)' },
  { paths: ['/usr/bin/Xvnc', '/usr/bin/Xtigervnc'], what: 'Xvnc (package tigervnc-standalone-server)' },
  { paths: ['/usr/bin/openbox'], what: 'openbox (package openbox)' },
];

/** How many links one path may pass through, as the kernel allows (ELOOP past it). */
const MAX_LINKS = 40;

/** What the image rooted at `root` lacks to be a desktop, in words; empty when it has it all. */
export async function missingForDesktop(root: string): Promise<string[]> {
  const missing: string[] = [];
  for (const need of NEEDED) {
    const found = await Promise.all(need.paths.map((p) => kindInside(root, p)));
    if (!found.includes('file')) missing.push(need.what);
  }
  // /root is bound from each branch's own files: it must be a folder of the image, not a link.
  if ((await kindInside(root, '/root', { followLast: false })) !== 'directory') missing.push('a /root folder (the home every branch gets a copy of)');
  return missing;
}

/** How to give an image what it lacks, for the error a refused workspace gets. */
export function howToAddDesktop(name: string): string {
  return `build it FROM grove/desktop (a Containerfile whose first line is "FROM grove/desktop"), or install tigervnc-standalone-server openbox tini and copy Grove's session into ${name}`;
}

type Kind = 'file' | 'directory' | 'other' | null;

/**
 * What `p` is inside the tree at `root`: each component is looked up without
 * following links, and a link is replaced by its target resolved inside
 * `root` ("/" and ".." never leave it).
 */
export async function kindInside(root: string, p: string, o: { followLast?: boolean } = {}): Promise<Kind> {
  const followLast = o.followLast ?? true;
  let todo = p.split('/').filter(Boolean);
  const at: string[] = [];
  let links = 0;
  while (todo.length > 0) {
    const part = todo.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      at.pop();
      continue;
    }
    const host = path.join(root, ...at, part);
    const st = await lstat(host).catch(() => null);
    if (!st) return null; // nothing at this path in the tree
    if (st.isSymbolicLink() && (todo.length > 0 || followLast)) {
      if (++links > MAX_LINKS) return null;
      const target = await readlink(host);
      if (target.startsWith('/')) at.length = 0;
      todo = [...target.split('/').filter(Boolean), ...todo];
      continue;
    }
    if (todo.length > 0 && !st.isDirectory()) return null;
    at.push(part);
    if (todo.length === 0) return st.isDirectory() ? 'directory' : st.isFile() ? 'file' : 'other';
  }
  return 'directory'; // the root itself
}
