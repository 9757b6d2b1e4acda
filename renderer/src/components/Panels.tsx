// The main panels: a branch's desktop, the compare grid, the diff view, the
// activity log, and the operations in progress.
import { useEffect, useRef, useState } from 'react';
import type RFB from '@novnc/novnc';
import type { ActivityEntry, TreeDiff } from '../../../main/src/api/contract.js';
import { actorName } from '../../../main/src/api/words.js';
import { NONE, branchById } from '../store/app.js';
import { AgentFeed, AgentPointer } from './AgentOverlay.js';
import { useApp } from './context.js';
import { Desktop } from './Desktop.js';
import { StreamFrame } from './StreamFrame.js';
import { useNow } from './now.js';

export function DesktopPanel({ branchId }: { branchId: string }) {
  const branch = useApp((s) => branchById(s, branchId));
  const framesStreams = useApp((s) => s.server?.desktopView === 'stream');
  const [scale, setScale] = useState(true);
  const [clip, setClip] = useState('');
  const rfb = useRef<RFB | null>(null);
  if (!branch) return null;
  if (branch.state === 'exited')
    return (
      <Empty
        title={`${branch.name} has exited`}
        body={`${branch.exitReason ?? 'Its processes ended.'} Start it again from its files, or roll it back to a version.`}
      />
    );
  if (branch.state !== 'running') return <Empty title={`${branch.name} is ${branch.state}`} body="Start it to see its desktop." />;
  if (framesStreams)
    return (
      <div className="desktop-panel">
        <StreamFrame branchId={branchId}>
          <AgentPointer branchId={branchId} />
          <AgentFeed branchId={branchId} />
        </StreamFrame>
      </div>
    );
  return (
    <div className="desktop-panel">
      <div className="panel-bar">
        <label className="check">
          <input type="checkbox" checked={scale} onChange={(e) => setScale(e.target.checked)} /> Scale to fit
        </label>
        <input className="clip" placeholder="Clipboard: text here is sent to the desktop's clipboard" value={clip} onChange={(e) => setClip(e.target.value)} />
        <button onClick={() => rfb.current?.clipboardPasteFrom(clip)} disabled={!clip}>
          Send clipboard
        </button>
        <button onClick={() => rfb.current?.focus()} title="Keys you type go to the desktop until you click elsewhere in the app">
          Type into the desktop
        </button>
      </div>
      <Desktop branchId={branchId} scale={scale} onClipboard={setClip} rfbRef={(r) => (rfb.current = r)} className="full">
        <AgentPointer branchId={branchId} />
        <AgentFeed branchId={branchId} />
      </Desktop>
    </div>
  );
}

export function CompareGrid({ ids }: { ids: string[] }) {
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const framesStreams = useApp((s) => s.server?.desktopView === 'stream');
  const shown = branches.filter((b) => ids.includes(b.id) && b.state === 'running');
  if (shown.length < 2)
    return (
      <Empty
        title="Compare branches side by side"
        body="Select two or more running branches in the tree (Ctrl-click or Shift-click) to see their desktops here together."
      />
    );
  return (
    <div className="compare" style={{ gridTemplateColumns: `repeat(${Math.ceil(Math.sqrt(shown.length))}, 1fr)` }}>
      {shown.map((b) => (
        <div key={b.id} className="compare-cell" data-testid={`compare-${b.name}`}>
          <div className="compare-title">{b.name}</div>
          {framesStreams ? (
            <StreamFrame branchId={b.id}>
              <AgentPointer branchId={b.id} />
            </StreamFrame>
          ) : (
            <Desktop branchId={b.id} viewOnly={false} scale>
              <AgentPointer branchId={b.id} />
            </Desktop>
          )}
        </div>
      ))}
    </div>
  );
}

export function DiffPanel({ ids }: { ids: string[] }) {
  const act = useApp((s) => s.act);
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const [diff, setDiff] = useState<TreeDiff | null>(null);
  const [loading, setLoading] = useState(false);
  const [open, setOpen] = useState<string | null>(null);
  const [a, b] = ids;
  const branch = branches.find((x) => x.id === a);
  const other = b ? branches.find((x) => x.id === b) : branch?.parent ? branches.find((x) => x.id === branch.parent) : undefined;
  useEffect(() => {
    setDiff(null);
    if (!branch || !other) return;
    setLoading(true);
    void act('branch.diff', { workspace: branch.id, other: other.id }).then((d) => {
      setDiff(d ?? null);
      setLoading(false);
    });
  }, [act, branch?.id, other?.id]);
  if (!branch) return <Empty title="Nothing selected" body="Select a branch to see what changed." />;
  if (!other) return <Empty title={`${branch.name} has no parent`} body="Select two branches (Ctrl-click) to compare their files." />;
  return (
    <div className="diff" data-testid="diff">
      <div className="panel-bar">
        Files in <b>{branch.name}</b> compared with <b>{other.name}</b>
        {loading && <span className="muted"> · reading…</span>}
      </div>
      {diff && (
        <>
          <div className="diff-summary">
            <span className="added">{diff.added.length} added</span>
            <span className="changed">{diff.changed.length} changed</span>
            <span className="removed">{diff.removed.length} removed</span>
            {diff.truncated && <span className="muted">text diffs cut short (too many files)</span>}
          </div>
          {diff.added.length + diff.changed.length + diff.removed.length === 0 && <Empty title="No differences" body="Both branches hold the same files." />}
          <ul className="diff-files">
            {[
              ...diff.added.map((p) => ['added', p] as const),
              ...diff.changed.map((p) => ['changed', p] as const),
              ...diff.removed.map((p) => ['removed', p] as const),
            ].map(([kind, p]) => {
              const text = diff.textDiffs.find((t) => t.path === p);
              return (
                <li key={`${kind}${p}`}>
                  <button className={`diff-file ${kind}`} onClick={() => setOpen(open === p ? null : p)} disabled={!text}>
                    <span className="diff-kind">{kind === 'added' ? 'A' : kind === 'changed' ? 'M' : 'D'}</span> {p}
                  </button>
                  {open === p && text && (
                    <pre className="diff-text">
                      {text.diff.split('\n').map((line, i) => (
                        <div key={i} className={line.startsWith('+') ? 'plus' : line.startsWith('-') ? 'minus' : line.startsWith('@@') ? 'hunk' : ''}>
                          {line}
                        </div>
                      ))}
                    </pre>
                  )}
                </li>
              );
            })}
          </ul>
        </>
      )}
    </div>
  );
}

export function ActivityLog() {
  const activity = useApp((s) => s.server?.activity ?? NONE);
  const [filter, setFilter] = useState<ActivityFilter>({ text: '', who: 'all', failedOnly: false });
  if (activity.length === 0) return <Empty title="No activity yet" body="Everything done here and everything the helper reports shows up in this log." />;
  const shown = filterActivity(activity, filter);
  return (
    <div className="activity-panel">
      <div className="activity-filter" role="search" aria-label="filter the activity">
        <input
          type="search"
          placeholder="Filter: branch, action, words…"
          aria-label="filter by words"
          value={filter.text}
          onChange={(e) => setFilter({ ...filter, text: e.target.value })}
        />
        <select aria-label="filter by who" value={filter.who} onChange={(e) => setFilter({ ...filter, who: e.target.value as ActivityFilter['who'] })}>
          <option value="all">everyone</option>
          <option value="you">you (app)</option>
          <option value="agent">agents</option>
          <option value="person">other persons</option>
          <option value="grove">Grove (helper, app)</option>
        </select>
        <label className="check">
          <input type="checkbox" checked={filter.failedOnly} onChange={(e) => setFilter({ ...filter, failedOnly: e.target.checked })} /> failures only
        </label>
        <span className="muted small" data-testid="activity-count">
          {shown.length === activity.length ? `${activity.length} entries` : `${shown.length} of ${activity.length} entries`}
        </span>
      </div>
      <table className="activity" data-testid="activity">
        <thead>
          <tr>
            <th>When</th>
            <th>Who</th>
            <th>What</th>
            <th>Branch</th>
            <th>Outcome</th>
          </tr>
        </thead>
        <tbody>
          {[...shown].reverse().map((a) => (
            <tr key={a.seq} className={`outcome-${a.outcome}`}>
              <td>{new Date(a.at).toLocaleTimeString()}</td>
              <td title={a.who ? `uid ${a.who.uid}` : undefined}>{actorText(a)}</td>
              <td>
                {a.action}
                {a.count > 1 && <span className="muted"> ×{a.count}</span>}
              </td>
              <td>{a.target ?? ''}</td>
              <td>
                {a.outcome}
                {a.detail && <span className="muted"> · {a.detail}</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export interface ActivityFilter {
  /** Words every shown entry holds (in who, what, branch or outcome), case aside. */
  text: string;
  who: 'all' | 'you' | 'agent' | 'person' | 'grove';
  failedOnly: boolean;
}

/** The entries the filter lets through, in their order. */
export function filterActivity(entries: readonly ActivityEntry[], f: ActivityFilter): ActivityEntry[] {
  const words = f.text.trim().toLowerCase().split(/\s+/).filter(Boolean);
  return entries.filter((a) => {
    if (f.failedOnly && a.outcome !== 'failed') return false;
    if (f.who === 'grove' ? a.actor !== 'helper' && a.actor !== 'controller' : f.who !== 'all' && a.actor !== f.who) return false;
    const text = [actorText(a), a.action, a.target ?? '', a.outcome, a.detail].join(' ').toLowerCase();
    return words.every((w) => text.includes(w));
  });
}

/** 'you (app)', 'agent alice', 'helper'. */
function actorText(a: ActivityEntry): string {
  switch (a.actor) {
    case 'you':
      return 'you (app)';
    case 'helper':
      return 'helper';
    case 'controller':
      return 'app';
    case 'person':
    case 'agent':
      return a.who ? actorName(a.who) : a.actor;
  }
}

export function Operations() {
  const ops = useApp((s) => s.server?.operations ?? NONE);
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const now = useNow(5000);
  // Running operations stay; finished ones for 30 s. Why one failed is told once, by the error above the tabs.
  const shown = ops.filter((o) => !hidden.has(o.id) && (o.status === 'running' || now - Date.parse(o.finishedAt ?? o.startedAt) < 30_000)).slice(-4);
  if (shown.length === 0) return null;
  return (
    <div className="operations" data-testid="operations">
      {shown.map((o) => (
        <div key={o.id} className={`op op-${o.status}`} data-kind={o.kind}>
          <div className="op-head">
            <b>{opTitle(o.kind)}</b> {o.target} <span className="muted">{o.status === 'running' ? 'in progress…' : o.status}</span>
            {o.status !== 'running' && (
              <button className="link" aria-label="dismiss" onClick={() => setHidden(new Set([...hidden, o.id]))}>
                ×
              </button>
            )}
          </div>
          {o.stages.length > 0 && (
            <ol className="stages">
              {o.stages.slice(-8).map((st, i) => (
                <li key={i}>
                  <span className="stage-name">{st.stage}</span> {st.message.startsWith(`${st.stage}: `) ? st.message.slice(st.stage.length + 2) : st.message}
                </li>
              ))}
            </ol>
          )}
        </div>
      ))}
    </div>
  );
}

function opTitle(kind: string): string {
  return (
    {
      'image.build': 'Building image',
      'image.pull': 'Pulling image',
      'image.remove': 'Removing image',
      'workspace.create': 'Creating',
      'workspace.start': 'Starting',
      'workspace.stop': 'Stopping',
      'branch.discard': 'Discarding',
      'branch.fork': 'Forking',
      'branch.checkpoint': 'Checkpoint of',
      'branch.rollback': 'Rolling back',
      'branch.promote': 'Promoting',
      'branch.merge': 'Merging into',
      'branch.export': 'Exporting',
    }[kind] ?? kind
  );
}

export function Empty({ title, body, children }: { title: string; body: string; children?: React.ReactNode }) {
  return (
    <div className="empty">
      <h2>{title}</h2>
      <p>{body}</p>
      {children}
    </div>
  );
}
