// The branch tree as a git graph: one row per branch, lanes and SVG curves,
// a colour per lane; below a branch, in the order they happened, its
// checkpoints (named dots on its line: a click offers roll back, naming and
// deleting) and the merges into it (a dot with an edge from each source). A
// main line a promotion retired stays, stopped, with its version. Rows are
// virtualised (only the visible ones and their edges are drawn), so 200
// branches stay cheap; live thumbnails are drawn for visible running
// branches only.
import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import type { AgentAction, Operation, Workspace } from '../../../main/src/api/contract.js';
import { describeActor } from '../../../privileged-helper/src/protocol/identity.js';
import { LANE_COLOURS, edgePath, mergePath, type LaidRow, type TreeLayout } from '../tree/layout.js';
import { NONE, isLive } from '../store/app.js';
import { DotRow } from './TreeDots.js';
import { lastCheckpoint, versionName } from '../store/versions.js';
import { agentNow } from '../store/agents.js';
import { useApi, useApp } from './context.js';
import { DiskFull } from './BranchDisk.js';
import { Desktop } from './Desktop.js';
import { age, useNow } from './now.js';

export const ROW_HEIGHT = 64;
/** A checkpoint's or a merge's row: a dot on its branch's line and one line of text. */
export const DOT_ROW_HEIGHT = 24;
export const HEADER_HEIGHT = 30;
const LANE_WIDTH = 18;
const OVERSCAN = 4;
/** Visible running rows beyond this many show a still picture, taken again every STILL_MS (each live one is a stream). */
const MAX_LIVE_THUMBNAILS = 8;
const STILL_MS = 10_000;

/** The state a person sees: the helper's state, or forking while a fork of it runs. */
export function shownState(b: Workspace, ops: readonly Operation[]): string {
  const fork = ops.find((o) => o.status === 'running' && o.kind === 'branch.fork' && o.target === b.name);
  if (fork) return fork.stages.some((s) => s.stage === 'dump') && !fork.stages.some((s) => s.stage === 'thaw') ? 'frozen' : 'forking';
  return b.state;
}

export function BranchTree() {
  const server = useApp((s) => s.server);
  const layout = useApp((s) => s.layout);
  const order = useApp((s) => s.order);
  const collapsed = useApp((s) => s.collapsed);
  const toggleTree = useApp((s) => s.toggleTree);
  const selection = useApp((s) => s.selection);
  const focus = useApp((s) => s.focus);
  const thumbnails = useApp((s) => s.thumbnails);
  const live = useApp(isLive);
  const select = useApp((s) => s.select);
  const moveFocus = useApp((s) => s.moveFocus);
  const setView = useApp((s) => s.setView);
  const scroller = useRef<HTMLDivElement>(null);
  const [viewport, setViewport] = useState({ top: 0, height: 600 });
  // Ages, and whether an agent is still busy (its last action within ACTIVE_MS).
  const now = useNow(5000);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const update = () => setViewport({ top: el.scrollTop, height: el.clientHeight });
    update();
    const ro = new ResizeObserver(update);
    ro.observe(el);
    el.addEventListener('scroll', update, { passive: true });
    return () => {
      ro.disconnect();
      el.removeEventListener('scroll', update);
    };
  }, []);

  const branches = useMemo(() => new Map((server?.branches ?? []).map((b) => [b.id, b])), [server]);
  const rows = useMemo(() => placeRows(layout, branches, collapsed), [layout, branches, collapsed]);
  // The dot whose actions are open (a checkpoint's or a merge's row key).
  const [openDot, setOpenDot] = useState<string | null>(null);

  // Keep the focused row in view.
  useEffect(() => {
    const el = scroller.current;
    const y = focus ? rows.yOf.get(focus) : undefined;
    if (!el || y === undefined) return;
    if (y < el.scrollTop) el.scrollTop = y;
    else if (y + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = y + ROW_HEIGHT - el.clientHeight;
  }, [focus, rows]);

  const top = viewport.top - OVERSCAN * ROW_HEIGHT;
  const bottom = viewport.top + viewport.height + OVERSCAN * ROW_HEIGHT;
  const inView = (y: number, height: number) => y + height >= top && y <= bottom;
  const visible = rows.shown.filter((r) => inView(r.y, r.height));
  const visibleIds = visible.filter((r) => r.row.kind === 'branch').map((r) => r.row.key);
  const headers = rows.headers.filter((h) => inView(h.y, HEADER_HEIGHT));
  // An edge is drawn when both its ends are shown and it passes through the view.
  const centre = (key: string, lane: number) => {
    const at = rows.byKey.get(key);
    return at ? { x: LANE_WIDTH / 2 + lane * LANE_WIDTH, y: at.y + at.height / 2 } : null;
  };
  const passes = (a: { y: number }, b: { y: number }) => Math.max(a.y, b.y) >= top && Math.min(a.y, b.y) <= bottom;
  const edges = layout.edges.flatMap((e) => {
    const [from, to] = [centre(e.from, e.fromLane), centre(e.to, e.toLane)];
    return from && to && passes(from, to) ? [{ key: `${e.from}-${e.to}`, d: edgePath(from, to, LANE_WIDTH / 2), lane: e.toLane }] : [];
  });
  const merges = layout.merges.flatMap((e) => {
    const [from, to] = [centre(e.from, e.fromLane), centre(e.to, e.toLane)];
    const track = LANE_WIDTH / 2 + e.track * LANE_WIDTH;
    return from && to && passes(from, to) ? [{ key: `${e.from}>${e.to}`, d: mergePath(from, to, track, LANE_WIDTH / 2), lane: e.fromLane }] : [];
  });
  const graphWidth = (layout.lanes + layout.tracks) * LANE_WIDTH + 8;

  const onKey = useCallback(
    (e: KeyboardEvent) => {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        moveFocus(e.key === 'ArrowDown' ? 1 : -1, e.shiftKey);
      } else if (e.key === 'Enter') {
        e.preventDefault();
        setView('desktop');
      } else if (e.key === 'Home' || e.key === 'End') {
        e.preventDefault();
        moveFocus(e.key === 'Home' ? -order.length : order.length);
      }
    },
    [moveFocus, setView, order.length],
  );

  const onRowClick = (id: string) => (e: MouseEvent) => select(id, e.shiftKey ? 'range' : e.ctrlKey || e.metaKey ? 'toggle' : 'single');

  let thumbs = 0;
  return (
    <div
      className={`tree ${live ? '' : 'stale'}`}
      ref={scroller}
      tabIndex={0}
      role="tree"
      aria-label="Branches"
      aria-multiselectable="true"
      onKeyDown={onKey}
      data-testid="branch-tree"
    >
      <div className="tree-inner" style={{ height: rows.height }}>
        {headers.map((h) => (
          <WorkspaceHeader key={h.tree} tree={h.tree} y={h.y} collapsed={collapsed.includes(h.tree)} onToggle={() => toggleTree(h.tree)} />
        ))}
        <svg className="tree-graph" width={graphWidth} height={rows.height} aria-hidden="true">
          {edges.map((e) => (
            <path key={e.key} d={e.d} className={`lane-stroke lane-${e.lane % LANE_COLOURS}`} fill="none" />
          ))}
          {merges.map((e) => (
            <path key={e.key} d={e.d} className={`lane-stroke merge-stroke lane-${e.lane % LANE_COLOURS}`} fill="none" data-testid="merge-edge" />
          ))}
          {visible.map(({ row }) => {
            const { x, y } = centre(row.key, row.lane)!;
            const lane = `lane-fill lane-${row.lane % LANE_COLOURS}`;
            if (row.kind === 'version') return <circle key={row.key} cx={x} cy={y} r={3.5} className={`${lane} version-dot`} />;
            if (row.kind === 'merge')
              return <rect key={row.key} x={x - 4} y={y - 4} width={8} height={8} transform={`rotate(45 ${x} ${y})`} className={lane} />;
            const b = branches.get(row.key);
            if (b?.retiredAt && b.state !== 'running')
              return <rect key={row.key} x={x - 4.5} y={y - 4.5} width={9} height={9} rx={2} className={`${lane} hollow retired-dot`} />;
            return <circle key={row.key} cx={x} cy={y} r={b?.main ? 6 : 4.5} className={`${lane} ${b?.state === 'running' ? '' : 'hollow'}`} />;
          })}
        </svg>
        {visible
          .filter((r) => r.row.kind !== 'branch')
          .map(({ row, y, height }) => (
            <DotRow
              key={row.key}
              row={row}
              top={y}
              height={height}
              indent={graphWidth}
              open={openDot === row.key}
              onToggle={() => setOpenDot(openDot === row.key ? null : row.key)}
              onClose={() => setOpenDot(null)}
            />
          ))}
        {visibleIds.map((id) => {
          const b = branches.get(id);
          if (!b) return null;
          const state = shownState(b, server?.operations ?? []);
          const checkpoint = lastCheckpoint(b, server?.versions ?? NONE);
          const picture = thumbnails && live && b.state === 'running' ? (thumbs++ < MAX_LIVE_THUMBNAILS ? 'live' : 'still') : null;
          return (
            <div
              key={id}
              role="treeitem"
              aria-selected={selection.includes(id)}
              className={`tree-row ${selection.includes(id) ? 'selected' : ''} ${focus === id ? 'focused' : ''}`}
              style={{ top: rows.byKey.get(id)!.y, height: ROW_HEIGHT, paddingLeft: graphWidth }}
              onClick={onRowClick(id)}
              onDoubleClick={() => setView('desktop')}
              data-testid={`branch-${b.name}`}
              data-state={state}
            >
              <div className="thumb">
                {picture === 'live' ? (
                  <Desktop branchId={id} viewOnly light className="mini" />
                ) : picture === 'still' ? (
                  <StillPicture branchId={id} />
                ) : (
                  <div className="thumb-off">{state}</div>
                )}
              </div>
              <div className="row-text">
                <div className="row-name">
                  {b.name}
                  {b.main && <span className="badge">main</span>}
                  {b.retiredAt && !b.main && (
                    <span
                      className="badge retired"
                      data-testid="retired"
                      title={`The main line until ${new Date(b.retiredAt).toLocaleString()}, when a promotion retired it`}
                    >
                      retired
                    </span>
                  )}
                  {b.madeBy?.role === 'agent' && (
                    <span className="agent-mark" data-testid="agent-mark" title={`Made by ${describeActor(b.madeBy)}`}>
                      agent {b.madeBy.user}
                    </span>
                  )}
                </div>
                <div className="row-meta">
                  <span className={`state state-${state}`} title={b.exitReason ?? undefined}>
                    {state}
                  </span>
                  <span title={b.createdAt}>{age(b.createdAt, now)}</span>
                  <span
                    className="row-version"
                    title={checkpoint ? `last checkpoint: ${versionName(checkpoint, server?.branches ?? NONE)}` : 'no checkpoint of its own yet'}
                  >
                    {checkpoint ? `✓ ${checkpoint.label ?? new Date(checkpoint.createdAt).toLocaleTimeString()}` : 'no checkpoint'}
                  </span>
                  {b.disk?.full && <DiskFull />}
                </div>
                <AgentNow doing={agentNow(server?.agents[id], now)} />
              </div>
            </div>
          );
        })}
      </div>
    </div>
  );
}

/** What an agent is doing on the branch right now: 'alice · typing'. */
function AgentNow({ doing }: { doing: AgentAction | null }) {
  if (!doing) return null;
  return (
    <div className="row-agent" data-testid="agent-now" title={`${describeActor(doing.by)}: ${doing.summary}, ${new Date(doing.at).toLocaleTimeString()}`}>
      <span className="agent-dot" aria-hidden="true" />
      {doing.by.user} · {doing.doing}
    </div>
  );
}

/** A still picture of a running branch's screen, from the helper, taken again every STILL_MS while the row is shown. */
function StillPicture({ branchId }: { branchId: string }) {
  const api = useApi();
  const [png, setPng] = useState<string | null>(null);
  useEffect(() => {
    let gone = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const take = async () => {
      // A picture that cannot be taken now (the branch is stopping) is no error to show: the last one stays.
      const shot = await api.request('branch.screenshot', { workspace: branchId, scale: 0.1 }).catch(() => null);
      if (gone) return;
      if (shot) setPng(shot.png);
      timer = setTimeout(() => void take(), STILL_MS);
    };
    void take();
    return () => {
      gone = true;
      clearTimeout(timer);
    };
  }, [api, branchId]);
  return png ? <img className="still" src={`data:image/png;base64,${png}`} alt="" data-testid="still-picture" /> : <div className="thumb-off">running</div>;
}

interface PlacedRow {
  row: LaidRow;
  y: number;
  height: number;
}

interface PlacedRows {
  /** The rows shown (not folded away), in order, with their tops and heights in pixels. */
  shown: PlacedRow[];
  byKey: Map<string, PlacedRow>;
  /** Each shown branch's top, in pixels. */
  yOf: Map<string, number>;
  headers: { tree: string; y: number }[];
  height: number;
}

/** Where rows go: a header above each workspace's rows (they are contiguous in the layout's order), none for a collapsed one's. */
function placeRows(layout: TreeLayout, branches: ReadonlyMap<string, Workspace>, collapsed: readonly string[]): PlacedRows {
  const shown: PlacedRow[] = [];
  const byKey = new Map<string, PlacedRow>();
  const yOf = new Map<string, number>();
  const headers: { tree: string; y: number }[] = [];
  let y = 0;
  let tree: string | null = null;
  for (const row of layout.rows) {
    const b = branches.get(row.branch);
    if (!b) continue;
    if (b.tree !== tree) {
      tree = b.tree;
      headers.push({ tree, y });
      y += HEADER_HEIGHT;
    }
    if (collapsed.includes(b.tree)) continue;
    const placed = { row, y, height: row.kind === 'branch' ? ROW_HEIGHT : DOT_ROW_HEIGHT };
    shown.push(placed);
    byKey.set(row.key, placed);
    if (row.kind === 'branch') yOf.set(row.key, y);
    y += placed.height;
  }
  return { shown, byKey, yOf, headers, height: y };
}

/** A workspace's header: its main line's name, its image and how many branches it has; a click folds it. */
function WorkspaceHeader({ tree, y, collapsed, onToggle }: { tree: string; y: number; collapsed: boolean; onToggle: () => void }) {
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const mine = branches.filter((b) => b.tree === tree);
  const main = mine.find((b) => b.main);
  const running = mine.filter((b) => b.state === 'running').length;
  return (
    <button
      className="tree-header"
      style={{ top: y, height: HEADER_HEIGHT }}
      onClick={onToggle}
      aria-expanded={!collapsed}
      data-testid={`workspace-${main?.name ?? tree}`}
      title={collapsed ? 'Show its branches' : 'Fold its branches away'}
    >
      <span className="caret" aria-hidden="true">
        {collapsed ? '▸' : '▾'}
      </span>
      <b>{main?.name ?? 'no main line'}</b>
      <span className="muted">
        {mine[0]?.image} · {mine.length} {mine.length === 1 ? 'branch' : 'branches'}, {running} running
      </span>
    </button>
  );
}
