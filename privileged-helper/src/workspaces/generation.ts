// A branch's fork generation, as a virtual machine's generation ID is
// (vmgenid): programs in a branch learn from it that they are a new copy and
// must renew what has to be unique (random seeds, session tokens). One line
// in /run/grove/generation, `COUNTER ID`: how many times the branch's
// processes were taken into a new copy along its line, and a random 128-bit
// id, new at every boot, fork, rollback and restore. The source of a fork
// keeps its own. docs/fork-generation.md says how a program watches it.
//
// It is written into the branch's root before its processes run again (so
// they read the new one from their first instruction on), and renamed into
// place once more from inside the branch after they run (announce), which
// is what an inotify watch on /run/grove sees: a watch restored with the
// processes is not there yet when the root is written.
import { randomBytes } from 'node:crypto';
import type { ExecService, ExecTarget } from '../exec/exec-service.js';
import { openFileInRoot } from '../host/in-root.js';
import { writeInside, type FileOwner } from '../host/rootfs-files.js';
import { GroveError } from '../protocol/wire.js';

/** Where the generation is, inside the branch. */
export const GENERATION_FILE = '/run/grove/generation';

export interface Generation {
  counter: number;
  /** 32 hex digits. */
  id: string;
}

/** The generation a file says; null for anything else (the file is the branch's, and it may have written anything). */
export function parseGeneration(text: string): Generation | null {
  const m = /^(\d{1,15}) ([0-9a-f]{32})\n?$/.exec(text);
  return m ? { counter: Number(m[1]), id: m[2]! } : null;
}

export function formatGeneration(g: Generation): string {
  return `${g.counter} ${g.id}\n`;
}

/** The generation after `previous` (none: the branch's first). */
export function nextGeneration(previous: Generation | null): Generation {
  return { counter: (previous?.counter ?? 0) + 1, id: randomBytes(16).toString('hex') };
}

/**
 * Writes the next generation into a branch's root while none of its
 * processes runs (a new branch's root, a fork's child's, a rollback's), and
 * returns it, to announce once they run.
 */
export async function renewGeneration(rootfs: string, owner: FileOwner): Promise<Generation> {
  const next = nextGeneration(await generationIn(rootfs));
  await writeInside(rootfs, GENERATION_FILE.slice(1), formatGeneration(next), owner);
  return next;
}

/** The generation in a branch's root, read inside it (in-root.ts); null when there is none that reads as one. */
async function generationIn(rootfs: string): Promise<Generation | null> {
  const fh = await openFileInRoot(rootfs, GENERATION_FILE);
  if (!fh) return null;
  try {
    const { bytesRead, buffer } = await fh.read(Buffer.alloc(64), 0, 64, 0);
    return parseGeneration(buffer.subarray(0, bytesRead).toString('latin1'));
  } finally {
    await fh.close();
  }
}

/**
 * Renames the generation into place again from inside the running branch,
 * as its own root (the helper resolves no path of the branch's while its
 * processes run): one IN_MOVED_TO on /run/grove for watchers.
 */
export async function announceGeneration(exec: Pick<ExecService, 'run'>, target: ExecTarget, g: Generation): Promise<void> {
  const script = 'mkdir -p /run/grove && printf "%s" "$1" >/run/grove/.generation && mv -f /run/grove/.generation /run/grove/generation';
  const res = await exec.run(target, { argv: ['/bin/sh', '-c', script, 'sh', formatGeneration(g)], timeoutMs: 10_000 }, null);
  if (res.exitCode !== 0) throw new GroveError('E_HOST', `the branch's new generation could not be announced: ${res.stderr.trim() || `exit ${res.exitCode}`}`);
}
