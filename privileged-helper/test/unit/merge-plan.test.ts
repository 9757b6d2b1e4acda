// A merge plan against real trees on disk (read inside each, host/in-root.ts):
// what one merge takes on is bounded, and a path several sources change is
// listed once, as the last one left it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MergePlan, type Trees } from '../../src/branches/merge-plan.js';

let dir: string;
let trees: Trees;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-merge-plan-'));
  trees = { base: path.join(dir, 'base'), target: path.join(dir, 'target'), source: path.join(dir, 'source') };
  for (const root of Object.values(trees)) mkdirSync(root);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sides = (name: string) => ({ target: { name: 'main' }, source: { id: `id-${name}`, name } });

/** Files the source added, `bytes` each. */
function added(count: number, bytes: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    writeFileSync(path.join(trees.source, `f${i}`), Buffer.alloc(bytes, 'x'));
    return `/f${i}`;
  });
}

describe('MergePlan', () => {
  it('takes on at most its bound of changed paths, and refuses the one past it in words', async () => {
    const plan = new MergePlan(new Map(), { paths: 3, writeBytes: 2 ** 20 });
    const paths = added(4, 1);
    for (const rel of paths.slice(0, 3)) await plan.mergePath(rel, trees, sides('a'));
    await expect(plan.mergePath(paths[3]!, trees, sides('a'))).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringMatching(/more than 3 paths: merge a narrower --scope/),
    });
  });

  it('holds at most its bound of bytes to write', async () => {
    const plan = new MergePlan(new Map(), { paths: 100, writeBytes: 1000 });
    const paths = added(3, 400);
    await plan.mergePath(paths[0]!, trees, sides('a'));
    await plan.mergePath(paths[1]!, trees, sides('a'));
    await expect(plan.mergePath(paths[2]!, trees, sides('a'))).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringMatching(/would write more than [\d.]+ MiB of files/),
    });
    expect(plan.changes.map((c) => c.path)).toEqual(['/f0', '/f1']);
  });

  it('lists a path two sources change once, as the later source left it, last', async () => {
    const plan = new MergePlan(new Map());
    writeFileSync(path.join(trees.base, 'a'), 'base\n');
    writeFileSync(path.join(trees.target, 'a'), 'base\n');
    writeFileSync(path.join(trees.source, 'a'), 'one\n');
    writeFileSync(path.join(trees.source, 'b'), 'b\n');
    await plan.mergePath('/a', trees, sides('first'));
    await plan.mergePath('/b', trees, sides('first'));
    // The second source forked from the target once the first's change was in it.
    const second = { base: path.join(dir, 'base2'), target: trees.target, source: path.join(dir, 'second') };
    for (const root of [second.base, second.source]) mkdirSync(root);
    writeFileSync(path.join(second.base, 'a'), 'one\n');
    writeFileSync(path.join(second.source, 'a'), 'two\n');
    await plan.mergePath('/a', second, sides('second'));
    expect(plan.changes.map((c) => [c.path, c.source])).toEqual([
      ['/b', 'first'],
      ['/a', 'second'],
    ]);
    expect(plan.planned.get('/a')).toMatchObject({ kind: 'file', bytes: Buffer.from('two\n') });
    expect(plan.conflicts).toEqual([]);
  });
});
