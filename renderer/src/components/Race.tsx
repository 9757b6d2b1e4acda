// The race view: siblings side by side (after a fork into N, or any chosen),
// each a live tile with what its agent is doing, the files it changed since
// the fork, a request waiting for the person (decided in place) and its
// memory; one confirmed "Pick winner" promotes one and discards or keeps the
// rest, as one transaction in the helper (branch.pick).
import { useEffect, useState } from 'react';
import type { TreeDiff, Workspace } from '../../../main/src/api/contract.js';
import { NONE, isLive, type Choice } from '../store/app.js';
import { recentActions } from '../store/agents.js';
import { isPending } from '../store/approvals.js';
import { racersOf, workDone } from '../store/race.js';
import { oldMainChoice } from './ActionBar.js';
import { useApi, useApp } from './context.js';
import { Desktop } from './Desktop.js';
import { Empty } from './Panels.js';
import { mib } from './SpaceList.js';

/** How often tiles read their files and memory again while the race is shown. */
const REFRESH_MS = 15_000;
/** Paths a tile lists; the count says how many more. */
const LISTED_FILES = 5;
const LISTED_ACTIONS = 3;

export function RaceView() {
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const selection = useApp((s) => s.selection);
  const focus = useApp((s) => s.focus);
  const loadPerf = useApp((s) => s.loadPerf);
  const racers = racersOf(branches, selection, focus);
  const parent = branches.find((b) => b.id === racers[0]?.parent);
  const racing = racers.length >= 2;
  useEffect(() => {
    if (!racing) return;
    void loadPerf();
    const timer = setInterval(() => void loadPerf(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [racing, loadPerf]);
  if (!racing)
    return (
      <Empty
        title="A race needs two branches or more"
        body="Fork a branch into N and its children race here; or select siblings in the tree (Ctrl-click) to race them."
      />
    );
  return (
    <div className="race" data-testid="race">
      <div className="panel-bar">
        <b>{racers.length} branches</b>
        {parent && <span className="muted">forked from {parent.name}</span>}
        <span className="muted">· pick the winner: it becomes the main line</span>
      </div>
      <div className="race-grid">
        {racers.map((b) => (
          <RaceTile key={b.id} branch={b} racers={racers} />
        ))}
      </div>
    </div>
  );
}

function RaceTile({ branch, racers }: { branch: Workspace; racers: Workspace[] }) {
  const live = useApp(isLive);
  const memory = useApp((s) => s.perf?.branches.find((m) => m.workspace === branch.id));
  const running = branch.state === 'running';
  return (
    <section className="race-tile" data-testid={`race-${branch.name}`} aria-label={branch.name}>
      <header className="race-head">
        <b>{branch.name}</b>
        <span className={`state state-${branch.state}`}>{branch.state}</span>
        {memory && (
          <span className="muted" data-testid="race-memory" title={`${memory.processes} processes`}>
            {mib(memory.pssBytes)} memory
          </span>
        )}
        <div className="spacer" />
        <PickButton winner={branch} racers={racers} />
      </header>
      <div className="race-screen">{running && live ? <Desktop branchId={branch.id} viewOnly light /> : <div className="thumb-off">{branch.state}</div>}</div>
      <AgentDoing branchId={branch.id} />
      <FilesChanged branch={branch} />
      <Waiting branchId={branch.id} />
    </section>
  );
}

function AgentDoing({ branchId }: { branchId: string }) {
  const actions = useApp((s) => s.server?.agents[branchId]);
  const last = recentActions(actions, LISTED_ACTIONS);
  if (last.length === 0) return <div className="race-part muted">No agent has acted here yet.</div>;
  return (
    <ol className="race-part race-actions" data-testid="race-actions" aria-label="what its agent did last">
      {last.map((a, i) => (
        <li key={`${a.at}${i}`} className={a.ok ? '' : 'failed'} title={new Date(a.at).toLocaleTimeString()}>
          <b>{a.by.user}</b> · {i === 0 ? a.doing : a.summary}
        </li>
      ))}
    </ol>
  );
}

/** The files a branch changed since its fork, read again every REFRESH_MS (a failure keeps the last reading). */
function FilesChanged({ branch }: { branch: Workspace }) {
  const api = useApi();
  const [diff, setDiff] = useState<TreeDiff | null>(null);
  useEffect(() => {
    if (branch.parent === null) return;
    let gone = false;
    const read = async () => {
      const d = await api.request('branch.diff', { workspace: branch.id }).catch(() => null);
      if (!gone && d) setDiff(d);
    };
    void read();
    const timer = setInterval(() => void read(), REFRESH_MS);
    return () => {
      gone = true;
      clearInterval(timer);
    };
  }, [api, branch.id, branch.parent]);
  if (!diff) return <div className="race-part muted">Reading its files…</div>;
  const files = workDone(diff);
  return (
    <div className="race-part" data-testid="race-files">
      <div>
        <b>{files.length}</b> {files.length === 1 ? 'file' : 'files'} changed since the fork
      </div>
      {files.length > 0 && (
        <ul className="race-files">
          {files.slice(0, LISTED_FILES).map((f) => (
            <li key={f.path} className={f.kind}>
              {f.kind === 'added' ? 'A' : f.kind === 'changed' ? 'M' : 'D'} {f.path}
            </li>
          ))}
          {files.length > LISTED_FILES && <li className="muted">and {files.length - LISTED_FILES} more</li>}
        </ul>
      )}
    </div>
  );
}

/** Requests about this branch that wait for the person, decided in place. */
function Waiting({ branchId }: { branchId: string }) {
  const approvals = useApp((s) => s.server?.approvals ?? NONE);
  const waiting = approvals.filter((a) => a.workspace === branchId && isPending(a));
  const decide = useApp((s) => s.decide);
  const deciding = useApp((s) => s.deciding);
  const live = useApp(isLive);
  if (waiting.length === 0) return null;
  return (
    <ul className="race-part race-waiting">
      {waiting.map((a) => (
        <li key={a.id} data-testid="race-request" data-request={a.id}>
          <span>
            <b>{a.requestedBy?.user ?? 'its software'}</b> asks: {a.effect} <q>{a.reason}</q>
          </span>
          <span className="approval-buttons">
            <button className="primary" disabled={!live || deciding.includes(a.id)} onClick={() => void decide(a.id, 'approve')}>
              Approve
            </button>
            <button className="danger" disabled={!live || deciding.includes(a.id)} onClick={() => void decide(a.id, 'deny')}>
              Deny
            </button>
          </span>
        </li>
      ))}
    </ul>
  );
}

function PickButton({ winner, racers }: { winner: Workspace; racers: Workspace[] }) {
  const live = useApp(isLive);
  const act = useApp((s) => s.act);
  const ask = useApp((s) => s.ask);
  const selectWhenPresent = useApp((s) => s.selectWhenPresent);
  const setView = useApp((s) => s.setView);
  const main = useApp((s) => s.server?.branches.find((b) => b.tree === winner.tree && b.main));
  // The main line is never a rival: what becomes of it is the old-main choice.
  const rivals = racers.filter((b) => b.id !== winner.id && b.id !== main?.id);
  const names = rivals.map((b) => b.name).join(', ');
  const losers: Choice = {
    name: 'losers',
    legend: `What becomes of ${names}?`,
    options: [
      { value: 'discard', label: `Discard ${rivals.length === 1 ? 'it' : `all ${rivals.length}`}` },
      { value: 'keep', label: 'Keep them as branches' },
    ],
  };
  const pick = async (picked: Record<string, string>) => {
    const res = await act('branch.pick', {
      workspace: winner.id,
      others: rivals.map((b) => b.id),
      losers: picked.losers as 'discard' | 'keep',
      ...(picked.oldMain ? { oldMain: picked.oldMain as 'version' | 'keep' | 'discard' } : {}),
    });
    if (res) {
      selectWhenPresent(res.main.id);
      setView('desktop');
    }
  };
  return (
    <button
      className="primary"
      disabled={!live || winner.state !== 'running' || winner.main || rivals.length === 0}
      onClick={() =>
        ask({
          title: `Pick ${winner.name} as the winner?`,
          body: `${winner.name} becomes the main line and takes over its host ports and desktop socket. All of it is one decision, recorded as one.`,
          choices: [losers, ...(main && main.id !== winner.id ? [oldMainChoice(main.name)] : [])],
          confirmLabel: 'Pick winner',
          danger: true,
          run: (picked) => void pick(picked),
        })
      }
    >
      Pick winner
    </button>
  );
}
