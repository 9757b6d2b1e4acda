// One file's three-way text merge, by git's own machinery (`git merge-file`):
// what the target and a source each made of the base, hunk by hunk, with
// git's conflict markers where both changed the same lines. The three sides
// are copied into a private folder of the helper's first: git never opens a
// path inside a branch.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run } from '../host/run.js';
import { GroveError } from '../protocol/wire.js';

export interface TextSides {
  base: Buffer;
  target: Buffer;
  source: Buffer;
}

export interface TextMerge {
  /** The merged text; where conflicts are, both sides and the base's lines between git's markers (diff3 style). */
  text: Buffer;
  /** How many conflicting hunks (0: merged cleanly). */
  conflicts: number;
}

/** `labels` name the sides in the markers (the branches' names). */
export async function mergeText(sides: TextSides, labels: { target: string; source: string }): Promise<TextMerge> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'grove-merge-file-'));
  try {
    for (const [name, bytes] of Object.entries(sides)) await writeFile(path.join(dir, name), bytes, { mode: 0o600 });
    // -p: the result on stdout, nothing rewritten; the exit code is the number of conflicts, negative (255) on an error.
    // --diff3: a conflict shows the fork point's lines too, so a person sees what each side changed (the app's side by side).
    const res = await run('git', ['merge-file', '-p', '--diff3', '-L', labels.target, '-L', 'fork point', '-L', labels.source, 'target', 'base', 'source'], {
      cwd: dir,
      allowFailure: true,
    });
    if (res.exitCode < 0 || res.exitCode > 127)
      throw new GroveError('E_HOST', `git merge-file: exit ${res.exitCode}: ${res.stderr.trim().split('\n').slice(-3).join('; ')}`);
    return { text: Buffer.from(res.stdout, 'utf8'), conflicts: res.exitCode };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
