import { describe, expect, it } from 'vitest';
import { edgePath, layoutTree, type BranchLike } from '../src/tree/layout.js';

let clock = 0;
const b = (id: string, parent: string | null = null): BranchLike => ({ id, parent, createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, clock++)).toISOString() });
const lanes = (l: ReturnType<typeof layoutTree>) => Object.fromEntries(l.nodes.map((n) => [n.id, [n.row, n.lane]]));

describe('layoutTree', () => {
  it('puts a single branch in row 0, lane 0', () => {
    const l = layoutTree([b('a')]);
    expect(lanes(l)).toEqual({ a: [0, 0] });
    expect(l.edges).toEqual([]);
    expect(l.lanes).toBe(1);
  });

  it('orders rows parent first, children oldest first, subtrees contiguous', () => {
    const a = b('a');
    const a1 = b('a1', 'a');
    const a2 = b('a2', 'a');
    const a11 = b('a11', 'a1');
    // Given out of order: the layout sorts.
    const l = layoutTree([a2, a11, a, a1]);
    expect(l.nodes.map((n) => n.id)).toEqual(['a', 'a1', 'a11', 'a2']);
    expect(l.nodes.map((n) => n.depth)).toEqual([0, 1, 2, 1]);
  });

  it('gives each branch the lane of its depth, and each child an edge from its parent', () => {
    const l = layoutTree([b('a'), b('a1', 'a'), b('a2', 'a')]);
    expect(lanes(l)).toEqual({ a: [0, 0], a1: [1, 1], a2: [2, 1] });
    expect(l.edges).toEqual([
      { from: 'a', to: 'a1', fromRow: 0, fromLane: 0, toRow: 1, toLane: 1 },
      { from: 'a', to: 'a2', fromRow: 0, fromLane: 0, toRow: 2, toLane: 1 },
    ]);
    expect(l.lanes).toBe(2);
  });

  it('keeps the lanes as few as the levels, however bushy the tree', () => {
    // Eleven branches three levels deep took eight lanes as a git graph; as levels they take three.
    const list = [b('r')];
    for (let i = 1; i <= 3; i++) list.push(b(`r${i}`, 'r'));
    for (let i = 1; i <= 4; i++) list.push(b(`r1${i}`, 'r1'));
    for (let i = 1; i <= 3; i++) list.push(b(`r2${i}`, 'r2'));
    expect(layoutTree(list).lanes).toBe(3);
  });

  it("keeps a workspace's roots together, workspaces oldest first", () => {
    // A promotion can leave a workspace with several roots, made after another workspace's.
    const t1 = { ...b('t1'), tree: 't1' };
    const t2 = { ...b('t2'), tree: 't2' };
    const t1b = { ...b('t1b'), tree: 't1' };
    expect(layoutTree([t2, t1b, t1]).nodes.map((n) => n.id)).toEqual(['t1', 't1b', 't2']);
  });

  it('never runs a line through another branch: only descendants, in deeper lanes, sit beside an edge', () => {
    const list: BranchLike[] = [b('n0')];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 1; i < 200; i++) list.push(b(`n${i}`, rand() < 0.05 ? null : `n${Math.floor(rand() * i)}`));
    const l = layoutTree(list);
    expect(l.nodes).toHaveLength(200);
    expect(new Set(l.nodes.map((n) => n.row)).size).toBe(200);
    for (const e of l.edges) {
      for (const n of l.nodes) {
        if (n.row > e.fromRow && n.row < e.toRow && n.lane <= e.fromLane) throw new Error(`node ${n.id} lies on edge ${e.from}→${e.to}`);
      }
    }
    expect(l.lanes).toBe(Math.max(...l.nodes.map((n) => n.depth)) + 1);
  });

  it('treats a branch whose parent is gone as a root', () => {
    const l = layoutTree([b('x', 'gone'), b('x1', 'x')]);
    expect(l.byId.get('x')!.parent).toBeNull();
    expect(l.edges.map((e) => `${e.from}>${e.to}`)).toEqual(['x>x1']);
  });

  it('lays out 200 branches in well under a frame', () => {
    const list: BranchLike[] = [b('r')];
    for (let i = 1; i < 200; i++) list.push(b(`k${i}`, i < 20 ? 'r' : `k${(i % 19) + 1}`));
    layoutTree(list); // warm up the JIT
    const times = Array.from({ length: 5 }, () => {
      const t = performance.now();
      layoutTree(list);
      return performance.now() - t;
    }).sort((x, y) => x - y);
    expect(times[2]).toBeLessThan(16); // the median, on a loaded 2-core machine
  });
});

describe('edgePath', () => {
  it('is a straight line within one lane', () => {
    expect(edgePath({ from: 'a', to: 'b', fromRow: 0, fromLane: 1, toRow: 3, toLane: 1 }, 10, 20)).toBe('M15 10V70');
  });
  it("runs down the parent's lane and turns into the child's at its row", () => {
    const d = edgePath({ from: 'a', to: 'b', fromRow: 0, fromLane: 0, toRow: 3, toLane: 1 }, 10, 20);
    expect(d).toBe('M5 10V65Q5 70 10 70H15');
  });
});
