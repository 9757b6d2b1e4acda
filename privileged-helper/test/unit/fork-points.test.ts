// Fork points in the registry: which merge base two branches have, and which
// fork points are kept (a branch or version descends from them) or pruned.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ForkPoints } from '../../src/branches/fork-points.js';
import type { Crun } from '../../src/host/crun.js';
import { HostLedger } from '../../src/workspaces/ledger.js';
import { closeTempRegistry, openTempRegistry, workspaceRecord, type TempRegistry } from './registry-fixture.js';

let t: TempRegistry;
let points: ForkPoints;
let net = 0;

beforeEach(() => {
  t = openTempRegistry('grove-fork-points-');
  // Only directories are recorded here: the ledger never reaches crun.
  points = new ForkPoints(t.reg, new HostLedger(t.reg, {} as Crun));
  t.reg.insertWorkspace(workspaceRecord({ id: 'aaaa0000', name: 'main', netIndex: net++ }));
});

afterEach(() => closeTempRegistry(t));

/** Forks `source` into `children` (new branch ids), with a fork point `id` whose "snapshot" is a directory. */
function fork(id: string, source: string, children: string[]): string {
  const dir = path.join(t.dir, id);
  mkdirSync(dir);
  t.reg.recordObject({ kind: 'directory', name: dir, owner: id });
  for (const child of children) {
    t.reg.insertWorkspace(workspaceRecord({ id: child, name: `b-${child}`, netIndex: net++, parentId: source, treeId: 'aaaa0000', isMain: false }));
  }
  t.reg.insertForkPoint(
    { id, path: dir, sourceId: source, parentId: t.reg.forkPointOf(source), treeId: 'aaaa0000', madeAt: new Date().toISOString() },
    children,
  );
  return dir;
}

describe('merge base', () => {
  it('of a child and its parent, of siblings, of cousins, and of branches forked at different times', () => {
    fork('point-1', 'aaaa0000', ['bbbb0001', 'bbbb0002']);
    fork('point-2', 'aaaa0000', ['bbbb0003']);
    fork('point-3', 'bbbb0001', ['cccc0001']);
    expect(points.base('aaaa0000', 'bbbb0001').id).toBe('point-1');
    expect(points.base('bbbb0001', 'aaaa0000').id).toBe('point-1');
    expect(points.base('bbbb0001', 'bbbb0002').id).toBe('point-1');
    // Forked from main at two times: main as the older fork left it.
    expect(points.base('bbbb0003', 'bbbb0001').id).toBe('point-1');
    expect(points.base('aaaa0000', 'cccc0001').id).toBe('point-1');
    expect(points.base('bbbb0001', 'cccc0001').id).toBe('point-3');
    expect(points.base('bbbb0002', 'cccc0001').id).toBe('point-1');
  });

  it('survives the discard of the branch in between', () => {
    fork('point-1', 'aaaa0000', ['bbbb0001']);
    fork('point-2', 'bbbb0001', ['cccc0001']);
    t.reg.deleteWorkspace('bbbb0001');
    expect(points.base('aaaa0000', 'cccc0001').id).toBe('point-1');
  });

  it('is refused for a branch and itself, and for branches of no common fork', () => {
    t.reg.insertWorkspace(workspaceRecord({ id: 'dddd0000', name: 'other', netIndex: net++ }));
    expect(() => points.base('aaaa0000', 'aaaa0000')).toThrow(/into itself/);
    expect(() => points.base('aaaa0000', 'dddd0000')).toThrow(/no fork point in common/);
  });
});

describe('pruning', () => {
  it('keeps a fork point while a branch or a version descends from it, through discarded branches, then removes it', async () => {
    const p1 = fork('point-1', 'aaaa0000', ['bbbb0001']);
    const p2 = fork('point-2', 'bbbb0001', ['cccc0001']);
    t.reg.insertVersion({ id: 'eeee0001', branchId: 'cccc0001', treeId: 'aaaa0000', label: null, createdAt: new Date().toISOString(), saved: true });
    t.reg.deleteWorkspace('bbbb0001');
    expect(await points.prune()).toEqual([]);
    t.reg.deleteWorkspace('cccc0001');
    expect(await points.prune()).toEqual([]); // the version still descends from point-2, and so from point-1
    t.reg.deleteVersion('eeee0001');
    expect(await points.prune()).toEqual(['point-2', 'point-1']);
    expect([existsSync(p1), existsSync(p2)]).toEqual([false, false]);
    expect(t.reg.listForkPoints()).toEqual([]);
    expect(t.reg.objects()).toEqual([]);
  });

  it('a branch rolled back to a version descends from the version’s fork point', async () => {
    fork('point-1', 'aaaa0000', ['bbbb0001']);
    t.reg.insertVersion({ id: 'eeee0001', branchId: 'bbbb0001', treeId: 'aaaa0000', label: null, createdAt: new Date().toISOString(), saved: true });
    t.reg.setVersionOrigin('aaaa0000', 'eeee0001');
    expect(t.reg.forkPointOf('aaaa0000')).toBe('point-1');
    t.reg.deleteWorkspace('bbbb0001');
    t.reg.deleteVersion('eeee0001');
    expect(await points.prune()).toEqual([]);
  });
});
