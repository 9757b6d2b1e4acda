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

  it('continues the parent lane with the first child and opens a new lane for the second', () => {
    const l = layoutTree([b('a'), b('a1', 'a'), b('a2', 'a')]);
    expect(lanes(l)).toEqual({ a: [0, 0], a1: [1, 0], a2: [2, 1] });
    expect(l.edges).toEqual([
      { from: 'a', to: 'a1', fromRow: 0, fromLane: 0, toRow: 1, toLane: 0 },
      { from: 'a', to: 'a2', fromRow: 0, fromLane: 0, toRow: 2, toLane: 1 },
    ]);
    expect(l.lanes).toBe(2);
  });

  it('routes a later sibling around the subtree of an earlier one', () => {
    // a ─┬─ a1 ─┬─ a11
    //    │      └─ a12
    //    └─ a2
    const l = layoutTree([b('a'), b('a1', 'a'), b('a11', 'a1'), b('a12', 'a1'), b('a2', 'a')]);
    const pos = lanes(l);
    expect(pos.a2).toEqual([4, 1]); // lane 1 was reserved from row 0 to row 4 when a was placed
    expect(pos.a12![1]).toBe(2); // so a1's second child cannot use lane 1
    expect(pos.a11).toEqual([2, 0]);
  });

  it('reuses a lane once the edge that held it has ended', () => {
    // Two trees one after the other: the second tree starts again in lane 0,
    // and a branch's second child reuses the lane freed below an earlier edge.
    const l = layoutTree([b('a'), b('a1', 'a'), b('a2', 'a'), b('c'), b('c1', 'c'), b('c2', 'c'), b('c3', 'c')]);
    const pos = lanes(l);
    expect(pos.c).toEqual([3, 0]);
    expect(pos.c2).toEqual([5, 1]); // lane 1 was a2's and is free again
    expect(pos.c3).toEqual([6, 2]);
    expect(l.lanes).toBe(3);
  });

  it('never gives two overlapping edges the same lane', () => {
    // A random tree of 200 branches: every edge's lane interval is disjoint
    // from every other edge's interval in the same lane (touching only where
    // a child continues its parent's lane).
    const list: BranchLike[] = [b('n0')];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 1; i < 200; i++) list.push(b(`n${i}`, rand() < 0.05 ? null : `n${Math.floor(rand() * i)}`));
    const l = layoutTree(list);
    expect(l.nodes).toHaveLength(200);
    expect(new Set(l.nodes.map((n) => n.row)).size).toBe(200);
    for (const e of l.edges) {
      for (const f of l.edges) {
        if (e === f || e.toLane !== f.toLane) continue;
        const overlap = Math.min(e.toRow, f.toRow) - Math.max(e.fromRow, f.fromRow);
        if (overlap > 0) throw new Error(`edges ${e.from}→${e.to} and ${f.from}→${f.to} overlap in lane ${e.toLane}`);
      }
      // No node sits on an edge's vertical run except its ends.
      for (const n of l.nodes) {
        if (n.lane === e.toLane && n.row > e.fromRow && n.row < e.toRow) throw new Error(`node ${n.id} lies on edge ${e.from}→${e.to}`);
      }
    }
    expect(l.lanes).toBeLessThan(40);
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
  it('curves into the child lane within one row, then runs straight down', () => {
    const d = edgePath({ from: 'a', to: 'b', fromRow: 0, fromLane: 0, toRow: 3, toLane: 2 }, 10, 20);
    expect(d).toBe('M5 10C5 20 25 20 25 30V70');
  });
});
