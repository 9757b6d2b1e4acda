// Lays out branch trees like a git graph: every branch gets a row (y) and a
// lane (x). Rows are a pre-order walk (a parent above its children, children
// oldest first, trees oldest first). The edge to a child runs in the child's
// lane from the parent's row down to the child's row, so a lane is reserved
// for that interval only; afterwards it is free again (lane reuse). The first
// child continues its parent's lane when it can (a straight line).

export interface BranchLike {
  id: string;
  parent: string | null;
  createdAt: string;
}

export interface LaidNode {
  id: string;
  row: number;
  lane: number;
  depth: number;
  parent: string | null;
}

export interface LaidEdge {
  from: string;
  to: string;
  fromRow: number;
  fromLane: number;
  toRow: number;
  toLane: number;
}

export interface TreeLayout {
  nodes: LaidNode[];
  edges: LaidEdge[];
  lanes: number;
  byId: Map<string, LaidNode>;
}

export function layoutTree(branches: readonly BranchLike[]): TreeLayout {
  const ids = new Set(branches.map((b) => b.id));
  const children = new Map<string | null, BranchLike[]>();
  for (const b of branches) {
    const parent = b.parent && ids.has(b.parent) ? b.parent : null; // a missing parent makes a root
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    list.push(b);
  }
  // ISO timestamps compare as plain strings (localeCompare is far slower).
  const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  const byAge = (a: BranchLike, b: BranchLike) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id);
  for (const list of children.values()) list.sort(byAge);

  // Pre-order rows, iteratively (deep trees must not overflow the stack).
  const order: { b: BranchLike; parent: string | null; depth: number }[] = [];
  const stack = [...(children.get(null) ?? [])].reverse().map((b) => ({ b, parent: null as string | null, depth: 0 }));
  while (stack.length) {
    const item = stack.pop()!;
    order.push(item);
    const kids = children.get(item.b.id) ?? [];
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ b: kids[i]!, parent: item.b.id, depth: item.depth + 1 });
  }

  const rowOf = new Map<string, number>();
  order.forEach((o, row) => rowOf.set(o.b.id, row));

  // busyUntil[lane]: the last row through which the lane is reserved. When a
  // parent is placed, each child's edge is reserved at once, from the
  // parent's row through the child's row, so the subtrees of earlier
  // children (the rows in between) route around it; afterwards the lane is
  // free again. A lane reserved exactly through row r is the lane of the node
  // at row r itself, which its first child continues.
  const busyUntil: number[] = [];
  const planned = new Map<string, number>();
  const nodes: LaidNode[] = [];
  const edges: LaidEdge[] = [];
  const byId = new Map<string, LaidNode>();
  const lowestFree = (row: number) => {
    let lane = 0;
    while ((busyUntil[lane] ?? -1) > row) lane++;
    return lane;
  };

  for (const [row, o] of order.entries()) {
    const lane = o.parent === null ? lowestFree(row) : planned.get(o.b.id)!;
    busyUntil[lane] = Math.max(busyUntil[lane] ?? -1, row);
    const node: LaidNode = { id: o.b.id, row, lane, depth: o.depth, parent: o.parent };
    nodes.push(node);
    byId.set(node.id, node);
    if (o.parent !== null) {
      const p = byId.get(o.parent)!;
      edges.push({ from: p.id, to: node.id, fromRow: p.row, fromLane: p.lane, toRow: row, toLane: lane });
    }
    (children.get(o.b.id) ?? []).forEach((kid, i) => {
      const kidLane = i === 0 && (busyUntil[lane] ?? -1) <= row ? lane : lowestFree(row);
      busyUntil[kidLane] = rowOf.get(kid.id)!;
      planned.set(kid.id, kidLane);
    });
  }
  const lanes = nodes.reduce((m, n) => Math.max(m, n.lane + 1), 1);
  return { nodes, edges, lanes, byId };
}

/** The SVG path of an edge: straight down in one lane, or a curve into the child's lane and then down. */
export function edgePath(e: LaidEdge, laneWidth: number, rowHeight: number, x0 = laneWidth / 2, y0 = rowHeight / 2): string {
  const x1 = x0 + e.fromLane * laneWidth;
  const y1 = y0 + e.fromRow * rowHeight;
  const x2 = x0 + e.toLane * laneWidth;
  const y2 = y0 + e.toRow * rowHeight;
  if (x1 === x2) return `M${x1} ${y1}V${y2}`;
  const bend = y1 + Math.min(rowHeight, y2 - y1);
  const mid = (y1 + bend) / 2;
  return `M${x1} ${y1}C${x1} ${mid} ${x2} ${mid} ${x2} ${bend}V${y2}`;
}

export const LANE_COLOURS = 8;
