// Lays out branch trees as an outline: every branch gets a row (y) and a
// lane (x) that is its depth. Rows are a pre-order walk (a parent above its
// children, children oldest first); a workspace's roots stay together (a
// promotion can leave several), workspaces oldest first. The edge to a child
// runs down its parent's lane to the child's row and turns into the child's
// lane there: the rows it passes are the parent's other descendants, all in
// deeper lanes, so no line crosses a row and lanes are as few as levels.

export interface BranchLike {
  id: string;
  parent: string | null;
  createdAt: string;
  /** The workspace it belongs to: its roots are laid out together. */
  tree?: string;
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
  // A workspace's roots together, at the place of its oldest.
  const roots = children.get(null) ?? [];
  const treeRank = new Map<string, number>();
  for (const r of roots) if (!treeRank.has(r.tree ?? r.id)) treeRank.set(r.tree ?? r.id, treeRank.size);
  roots.sort((a, b) => treeRank.get(a.tree ?? a.id)! - treeRank.get(b.tree ?? b.id)! || byAge(a, b));

  // Pre-order rows, iteratively (deep trees must not overflow the stack).
  const nodes: LaidNode[] = [];
  const edges: LaidEdge[] = [];
  const byId = new Map<string, LaidNode>();
  const stack = [...roots].reverse().map((b) => ({ b, parent: null as string | null, depth: 0 }));
  while (stack.length) {
    const { b, parent, depth } = stack.pop()!;
    const node: LaidNode = { id: b.id, row: nodes.length, lane: depth, depth, parent };
    nodes.push(node);
    byId.set(node.id, node);
    if (parent !== null) {
      const p = byId.get(parent)!;
      edges.push({ from: p.id, to: node.id, fromRow: p.row, fromLane: p.lane, toRow: node.row, toLane: node.lane });
    }
    const kids = children.get(b.id) ?? [];
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ b: kids[i]!, parent: b.id, depth: depth + 1 });
  }
  const lanes = nodes.reduce((m, n) => Math.max(m, n.lane + 1), 1);
  return { nodes, edges, lanes, byId };
}

/** The SVG path of an edge: down the parent's lane to the child's row, then a rounded turn into the child's lane. */
export function edgePath(e: LaidEdge, laneWidth: number, rowHeight: number, x0 = laneWidth / 2, y0 = rowHeight / 2): string {
  const x1 = x0 + e.fromLane * laneWidth;
  const y1 = y0 + e.fromRow * rowHeight;
  const x2 = x0 + e.toLane * laneWidth;
  const y2 = y0 + e.toRow * rowHeight;
  if (x1 === x2) return `M${x1} ${y1}V${y2}`;
  const r = Math.min(laneWidth / 2, y2 - y1);
  return `M${x1} ${y1}V${y2 - r}Q${x1} ${y2} ${x1 + r} ${y2}H${x2}`;
}

export const LANE_COLOURS = 8;
