// Lays out branch trees as an outline: every branch gets a row (y) and a
// lane (x) that is its depth. Rows are a pre-order walk (a parent above its
// children); a workspace's roots stay together (a promotion can leave
// several), workspaces oldest first. Below a branch's row come, in the order
// they happened, its checkpoints and the merges into it (small rows: dots on
// its line, in its lane) and its children's subtrees. The edge to a child
// runs down its parent's lane to the child's row and turns into the child's
// lane there: the rows it passes are the parent's own dots and its other
// descendants, in deeper lanes, so no line crosses a row and lanes are as few
// as levels. A merge's edge leaves its source's row to the right, past every
// lane, runs down (or up) a track of its own there and turns left into the
// merge's dot: at a branch's or dot's row no line is right of its lane, so it
// crosses no line of the tree, only other merges' tracks.

export interface BranchLike {
  id: string;
  parent: string | null;
  createdAt: string;
  /** The workspace it belongs to: its roots are laid out together. */
  tree?: string;
  /** Merges written into it: an edge from each source that is in the layout. */
  merges?: readonly MergeLike[];
}

export interface VersionLike {
  id: string;
  /** The branch it was taken of: its dot is on that branch's line (none when the branch is gone). */
  branch: string;
  createdAt: string;
}

export interface MergeLike {
  sources: readonly { id: string; name: string }[];
  at: string;
}

export interface LaidNode {
  id: string;
  row: number;
  lane: number;
  depth: number;
  parent: string | null;
}

/** A row: a branch (key: its id), a checkpoint's dot (key 'v:' + its id) or a merge's dot (key 'm:' + its branch + ':' + its index). */
export interface LaidRow {
  key: string;
  kind: 'branch' | 'version' | 'merge';
  /** The branch whose row or line it is. */
  branch: string;
  row: number;
  lane: number;
  /** A version's id (kind 'version'), the merge's index in its branch's merges (kind 'merge'), the branch's id. */
  ref: string | number;
  /** When it was made (a branch), taken (a checkpoint) or written (a merge). */
  at: string;
}

/** A line between two rows (by key): to a child, or down a branch's own line to its last dot. */
export interface LaidEdge {
  from: string;
  to: string;
  fromRow: number;
  fromLane: number;
  toRow: number;
  toLane: number;
}

/** A merge's edge: from its source's row (or its last dot before the merge) to the merge's dot, along `track` (a lane right of every branch's). */
export interface LaidMerge extends LaidEdge {
  track: number;
}

export interface TreeLayout {
  nodes: LaidNode[];
  /** Every row in order: branches and their dots. */
  rows: LaidRow[];
  edges: LaidEdge[];
  merges: LaidMerge[];
  /** Lanes of branches (levels); merge tracks come after them. */
  lanes: number;
  tracks: number;
  byId: Map<string, LaidNode>;
}

// ISO timestamps compare as plain strings (localeCompare is far slower).
const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

type Item =
  | { kind: 'branch'; at: string; b: BranchLike; parent: string | null; depth: number }
  | { kind: 'version'; at: string; v: VersionLike; branch: string; depth: number }
  | { kind: 'merge'; at: string; index: number; branch: string; depth: number };

export function layoutTree(branches: readonly BranchLike[], versions: readonly VersionLike[] = []): TreeLayout {
  const ids = new Set(branches.map((b) => b.id));
  const children = new Map<string | null, BranchLike[]>();
  for (const b of branches) {
    const parent = b.parent && ids.has(b.parent) ? b.parent : null; // a missing parent makes a root
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    list.push(b);
  }
  const byAge = (a: BranchLike, b: BranchLike) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id);
  for (const list of children.values()) list.sort(byAge);
  const versionsOf = new Map<string, VersionLike[]>();
  for (const v of versions) {
    if (!ids.has(v.branch)) continue;
    let list = versionsOf.get(v.branch);
    if (!list) versionsOf.set(v.branch, (list = []));
    list.push(v);
  }
  // A workspace's roots together, at the place of its oldest.
  const roots = children.get(null) ?? [];
  const treeRank = new Map<string, number>();
  for (const r of roots) if (!treeRank.has(r.tree ?? r.id)) treeRank.set(r.tree ?? r.id, treeRank.size);
  roots.sort((a, b) => treeRank.get(a.tree ?? a.id)! - treeRank.get(b.tree ?? b.id)! || byAge(a, b));

  // Pre-order rows, iteratively (deep trees must not overflow the stack).
  const nodes: LaidNode[] = [];
  const rows: LaidRow[] = [];
  const edges: LaidEdge[] = [];
  const byId = new Map<string, LaidNode>();
  const lastDot = new Map<string, LaidRow>();
  const rowOf = new Map<string, LaidRow>();
  const stack: Item[] = [...roots].reverse().map((b) => ({ kind: 'branch', at: b.createdAt, b, parent: null, depth: 0 }));
  while (stack.length) {
    const item = stack.pop()!;
    if (item.kind !== 'branch') {
      const key = item.kind === 'version' ? `v:${item.v.id}` : `m:${item.branch}:${item.index}`;
      const ref = item.kind === 'version' ? item.v.id : item.index;
      const row: LaidRow = { key, kind: item.kind, branch: item.branch, row: rows.length, lane: item.depth, ref, at: item.at };
      rows.push(row);
      rowOf.set(key, row);
      lastDot.set(item.branch, row);
      continue;
    }
    const { b, parent, depth } = item;
    const node: LaidNode = { id: b.id, row: rows.length, lane: depth, depth, parent };
    nodes.push(node);
    byId.set(node.id, node);
    const row: LaidRow = { key: b.id, kind: 'branch', branch: b.id, row: node.row, lane: depth, ref: b.id, at: b.createdAt };
    rows.push(row);
    rowOf.set(b.id, row);
    if (parent !== null) {
      const p = byId.get(parent)!;
      edges.push({ from: p.id, to: node.id, fromRow: p.row, fromLane: p.lane, toRow: node.row, toLane: node.lane });
    }
    const line: Item[] = [
      ...(versionsOf.get(b.id) ?? []).map((v): Item => ({ kind: 'version', at: v.createdAt, v, branch: b.id, depth })),
      ...(b.merges ?? []).map((m, index): Item => ({ kind: 'merge', at: m.at, index, branch: b.id, depth })),
      ...(children.get(b.id) ?? []).map((c): Item => ({ kind: 'branch', at: c.createdAt, b: c, parent: b.id, depth: depth + 1 })),
    ];
    // Stable: at the same instant a checkpoint comes before the merge it was taken for, and both before a child.
    line.sort((x, y) => cmp(x.at, y.at));
    for (let i = line.length - 1; i >= 0; i--) stack.push(line[i]!);
  }
  // A branch's own line runs down to its last dot.
  for (const [branch, dot] of lastDot) {
    const head = byId.get(branch)!;
    edges.push({ from: branch, to: dot.key, fromRow: head.row, fromLane: head.lane, toRow: dot.row, toLane: dot.lane });
  }
  const lanes = nodes.reduce((m, n) => Math.max(m, n.lane + 1), 1);
  const merges = mergeEdges(branches, rows, rowOf, lanes);
  const tracks = merges.reduce((m, e) => Math.max(m, e.track - lanes + 1), 0);
  return { nodes, rows, edges, merges, lanes, tracks, byId };
}

/** Each merge's edges from its sources (those in the layout), each given the leftmost track free over the rows it spans. */
function mergeEdges(branches: readonly BranchLike[], rows: readonly LaidRow[], rowOf: ReadonlyMap<string, LaidRow>, lanes: number): LaidMerge[] {
  const planned: LaidEdge[] = [];
  for (const b of branches) {
    (b.merges ?? []).forEach((m, index) => {
      const to = rowOf.get(`m:${b.id}:${index}`)!;
      for (const s of m.sources) {
        const from = sourceRow(s.id, m.at, rows, rowOf.get(s.id));
        if (from && from.key !== to.key) planned.push({ from: from.key, to: to.key, fromRow: from.row, fromLane: from.lane, toRow: to.row, toLane: to.lane });
      }
    });
  }
  const span = (e: LaidEdge) => [Math.min(e.fromRow, e.toRow), Math.max(e.fromRow, e.toRow)] as const;
  planned.sort((a, b) => span(a)[0] - span(b)[0] || span(a)[1] - span(b)[1]);
  const trackEnds: number[] = [];
  return planned.map((e) => {
    const [start, end] = span(e);
    let t = trackEnds.findIndex((last) => last < start);
    if (t < 0) t = trackEnds.push(end) - 1;
    else trackEnds[t] = end;
    return { ...e, track: lanes + t };
  });
}

/** Where a source stood when it was merged: its last dot before the merge, else its own row (null when it is not laid out). */
function sourceRow(source: string, at: string, rows: readonly LaidRow[], head: LaidRow | undefined): LaidRow | null {
  if (!head) return null;
  let best = head;
  // Its dots follow its row, in the order they happened, among its descendants' rows (all in deeper lanes).
  const onItsLine = (row: LaidRow) => row.lane > head.lane || (row.lane === head.lane && row.branch === source);
  for (let r = head.row + 1; r < rows.length && onItsLine(rows[r]!); r++) {
    const row = rows[r]!;
    if (row.branch === source && row.at <= at) best = row;
  }
  return best;
}

export interface Point {
  x: number;
  y: number;
}

/** The SVG path of an edge: down the parent's lane to the child's row, then a rounded turn (radius r at most) into the child's lane. */
export function edgePath(from: Point, to: Point, r: number): string {
  if (from.x === to.x) return `M${from.x} ${from.y}V${to.y}`;
  const turn = Math.min(r, to.y - from.y);
  return `M${from.x} ${from.y}V${to.y - turn}Q${from.x} ${to.y} ${from.x + turn} ${to.y}H${to.x}`;
}

/** The SVG path of a merge's edge: right from its source to the track at x `track`, along it to the merge's row, left into the merge's dot. */
export function mergePath(from: Point, to: Point, track: number, r: number): string {
  const dir = to.y >= from.y ? 1 : -1;
  const turn = Math.min(r, Math.abs(to.y - from.y) / 2, track - from.x, track - to.x);
  return (
    `M${from.x} ${from.y}H${track - turn}Q${track} ${from.y} ${track} ${from.y + dir * turn}` +
    `V${to.y - dir * turn}Q${track} ${to.y} ${track - turn} ${to.y}H${to.x}`
  );
}

export const LANE_COLOURS = 8;
