import { describe, expect, it } from 'vitest';
import { edgePath, layoutTree, mergePath, type BranchLike } from '../src/tree/layout.js';

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

describe('checkpoints and merges', () => {
  const at = (sec: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sec)).toISOString();
  const node = (id: string, parent: string | null, sec: number, merges: BranchLike['merges'] = []): BranchLike => ({ id, parent, createdAt: at(sec), merges });
  const rowsOf = (l: ReturnType<typeof layoutTree>) => l.rows.map((r) => `${r.key}@${r.lane}`);

  it("puts a branch's checkpoints on its line, among its children in the order they happened", () => {
    const l = layoutTree(
      [node('main', null, 0), node('c1', 'main', 20), node('c2', 'main', 40)],
      [
        { id: 'v1', branch: 'main', createdAt: at(10) },
        { id: 'v2', branch: 'main', createdAt: at(30) },
        { id: 'v3', branch: 'c1', createdAt: at(35) },
        { id: 'vgone', branch: 'discarded', createdAt: at(36) },
      ],
    );
    expect(rowsOf(l)).toEqual(['main@0', 'v:v1@0', 'c1@1', 'v:v3@1', 'v:v2@0', 'c2@1']);
    // The branch rows keep their own order and depths; each branch's line runs to its last dot.
    expect(l.nodes.map((n) => n.id)).toEqual(['main', 'c1', 'c2']);
    expect(l.edges).toContainEqual({ from: 'main', to: 'v:v2', fromRow: 0, fromLane: 0, toRow: 4, toLane: 0 });
    expect(l.edges).toContainEqual({ from: 'c1', to: 'v:v3', fromRow: 2, fromLane: 1, toRow: 3, toLane: 1 });
    expect(l.rows.find((r) => r.key === 'v:v2')).toMatchObject({ kind: 'version', branch: 'main', ref: 'v2' });
  });

  it('draws a merge as a dot on its target with an edge from where each source stood then, on a track right of every lane', () => {
    const merged = [{ sources: [{ id: 'c1', name: 'c1' }], at: at(50) }];
    const l = layoutTree(
      [node('main', null, 0, merged), node('c1', 'main', 20), node('c2', 'main', 30)],
      [
        { id: 'v1', branch: 'c1', createdAt: at(40) },
        { id: 'late', branch: 'c1', createdAt: at(60) },
      ],
    );
    expect(rowsOf(l)).toEqual(['main@0', 'c1@1', 'v:v1@1', 'v:late@1', 'c2@1', 'm:main:0@0']);
    expect(l.merges).toEqual([{ from: 'v:v1', to: 'm:main:0', fromRow: 2, fromLane: 1, toRow: 5, toLane: 0, track: 2 }]);
    expect(l.tracks).toBe(1);
    expect(l.rows.at(-1)).toMatchObject({ kind: 'merge', branch: 'main', ref: 0 });
  });

  it('gives overlapping merges tracks of their own and reuses a track once it is free', () => {
    const l = layoutTree([
      node('main', null, 0, [
        { sources: [{ id: 'a', name: 'a' }], at: at(50) },
        { sources: [{ id: 'b', name: 'b' }], at: at(60) },
      ]),
      node('a', 'main', 10),
      node('b', 'main', 20),
      node('c', 'main', 70, [{ sources: [{ id: 'main', name: 'main' }], at: at(80) }]),
    ]);
    expect(l.merges.map((m) => [m.from, m.to, m.track])).toEqual([
      ['a', 'm:main:0', 2],
      ['b', 'm:main:1', 3],
      // main stood at its second merge when it was merged into c: that track is free again below it.
      ['m:main:1', 'm:c:0', 2],
    ]);
  });

  it('leaves out the edge of a source that is not in the layout (another workspace, or gone)', () => {
    const l = layoutTree([node('main', null, 0, [{ sources: [{ id: 'gone', name: 'old' }], at: at(5) }])]);
    expect(l.rows.map((r) => r.key)).toEqual(['main', 'm:main:0']);
    expect(l.merges).toEqual([]);
    expect(l.tracks).toBe(0);
  });

  it("never crosses a row's dot or text: tree lines pass only deeper rows, merges only turn where nothing else runs", () => {
    let seed = 11;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const list: BranchLike[] = [node('n0', null, 0)];
    const versions: { id: string; branch: string; createdAt: string }[] = [];
    for (let i = 1; i < 120; i++) {
      const sec = i * 10;
      const merges = rand() < 0.15 ? [{ sources: [{ id: `n${Math.floor(rand() * i)}`, name: 'x' }], at: at(sec + 5) }] : [];
      list.push(node(`n${i}`, `n${Math.floor(rand() * i)}`, sec, merges));
      if (rand() < 0.4) versions.push({ id: `v${i}`, branch: `n${Math.floor(rand() * i)}`, createdAt: at(sec + 3) });
    }
    const l = layoutTree(list, versions);
    expect(l.rows).toHaveLength(list.length + versions.length + list.filter((b) => b.merges!.length).length);
    expect(l.merges.length).toBeGreaterThan(5);
    // Vertical runs of tree lines, by lane.
    const runs = l.edges.map((e) => ({ lane: e.fromLane, from: e.fromRow, to: e.toRow, owner: e.from }));
    for (const run of runs)
      for (const r of l.rows.slice(run.from + 1, run.to)) {
        const own = r.branch === run.owner && r.lane === run.lane;
        if (r.lane <= run.lane && !own) throw new Error(`${r.key} lies on the line of ${run.owner}`);
      }
    const width = l.lanes + l.tracks;
    for (const m of l.merges) {
      expect(m.track).toBeGreaterThanOrEqual(l.lanes);
      expect(m.track).toBeLessThan(width); // text starts right of the last track
      // Its turns: at its source's row and its dot's row no tree line runs right of the row's lane.
      for (const [row, lane] of [
        [m.fromRow, m.fromLane],
        [m.toRow, m.toLane],
      ] as const)
        for (const run of runs) if (run.from < row && row < run.to && run.lane > lane) throw new Error(`merge ${m.from}→${m.to} crosses ${run.owner}'s line`);
    }
  });
});

describe('edgePath', () => {
  it('is a straight line within one lane', () => {
    expect(edgePath({ x: 15, y: 10 }, { x: 15, y: 70 }, 5)).toBe('M15 10V70');
  });
  it("runs down the parent's lane and turns into the child's at its row", () => {
    expect(edgePath({ x: 5, y: 10 }, { x: 15, y: 70 }, 5)).toBe('M5 10V65Q5 70 10 70H15');
  });
});

describe('mergePath', () => {
  it('leaves its source to the right, runs along its track and turns left into the dot', () => {
    expect(mergePath({ x: 15, y: 10 }, { x: 5, y: 100 }, 45, 5)).toBe('M15 10H40Q45 10 45 15V95Q45 100 40 100H5');
  });
  it('runs up when the source is below the dot', () => {
    expect(mergePath({ x: 15, y: 100 }, { x: 5, y: 10 }, 45, 5)).toBe('M15 100H40Q45 100 45 95V15Q45 10 40 10H5');
  });
});
