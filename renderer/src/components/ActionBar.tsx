// The bar above the tabs: what can be done to the selected branch (fork,
// checkpoint, roll back, take home, merge into, promote, stop, discard), or, with several selected,
// what applies to all of them (compare, stop N, discard N).
import { useState } from 'react';
import type { OldMainFate, Version, Workspace } from '../../../main/src/api/contract.js';
import { NONE, branchById, isLive, type Choice } from '../store/app.js';
import { versionName, versionsOf } from '../store/versions.js';
import { BranchDisk } from './BranchDisk.js';
import { BranchOrigin } from './BranchOrigin.js';
import { useApp } from './context.js';

export function ActionBar() {
  const branch = useApp((s) => branchById(s, s.focus));
  const selected = useApp((s) => s.selection.length);
  if (selected > 1) return <SelectionBar />;
  if (!branch) return <div className="actionbar muted">Select a branch.</div>;
  return (
    <div className="actionbar" data-testid="actions">
      <div className="action-title">
        <b>{branch.name}</b> <span className="muted">{branch.id}</span>
        <BranchOrigin branch={branch} />
        <BranchDisk branch={branch} />
      </div>
      <ForkGroup branch={branch} />
      {/* Keyed by branch: a version picked for one branch is never offered for another. */}
      <VersionGroup key={branch.id} branch={branch} />
      <ResultGroup branch={branch} />
      <LifeGroup branch={branch} />
    </div>
  );
}

function ForkGroup({ branch }: { branch: Workspace }) {
  const live = useApp(isLive);
  const act = useApp((s) => s.act);
  const [copies, setCopies] = useState(2);
  const [label, setLabel] = useState('');
  const setView = useApp((s) => s.setView);
  const running = branch.state === 'running';
  // Two copies or more race: the race view shows them as soon as they are made.
  const fork = async () => {
    if ((await act('branch.fork', { workspace: branch.id, copies })) && copies >= 2) setView('race');
  };
  const checkpoint = async () => {
    if (await act('branch.checkpoint', { workspace: branch.id, ...(label.trim() ? { label: label.trim() } : {}) })) setLabel('');
  };
  return (
    <div className="action-group">
      <label className="field" title="How many live copies a fork makes">
        Fork into
        <input
          type="number"
          min={1}
          max={16}
          value={copies}
          aria-label="copies"
          onChange={(e) => setCopies(Math.max(1, Math.min(16, Number(e.target.value) || 1)))}
        />
      </label>
      <button disabled={!live || !running} onClick={() => void fork()} title="Fork this running branch into N live copies">
        Fork
      </button>
      <input
        className="checkpoint-name"
        aria-label="checkpoint name"
        placeholder="name (optional)"
        maxLength={200}
        value={label}
        onChange={(e) => setLabel(e.target.value)}
      />
      <button disabled={!live || !running} onClick={() => void checkpoint()} title="Record a version to roll back to">
        Checkpoint
      </button>
    </div>
  );
}

function VersionGroup({ branch }: { branch: Workspace }) {
  const live = useApp(isLive);
  const act = useApp((s) => s.act);
  const ask = useApp((s) => s.ask);
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const versions = useApp((s) => s.server?.versions ?? NONE);
  const [picked, setPicked] = useState('');
  const mine = versionsOf(branch, versions);
  const version: Version | undefined = mine.find((v) => v.id === picked);
  const name = version ? versionName(version, branches) : '';
  return (
    <div className="action-group">
      <select aria-label="version" value={version ? picked : ''} onChange={(e) => setPicked(e.target.value)}>
        <option value="">{mine.length ? 'version…' : 'no versions yet'}</option>
        {mine.map((v) => (
          <option key={v.id} value={v.id} data-testid={`version-${v.id}`}>
            {versionName(v, branches)}
            {v.saved ? '' : ' · saving…'}
          </option>
        ))}
      </select>
      <button
        disabled={!live || !version?.saved}
        onClick={() =>
          ask({
            title: `Roll ${branch.name} back?`,
            body: `Its processes and files return to ${name}. Whatever it did since is lost unless you checkpoint it first.`,
            confirmLabel: 'Roll back',
            danger: true,
            run: () => void act('branch.rollback', { workspace: branch.id, version: version!.id }),
          })
        }
      >
        Roll back
      </button>
      <button
        disabled={!live || !version?.saved}
        title="Delete this version for good"
        onClick={() =>
          ask({
            title: `Delete ${name}?`,
            body: 'The version is removed for good; branches made from it keep their files.',
            confirmLabel: 'Delete version',
            danger: true,
            run: () => void act('version.delete', { version: version!.id }).then((r) => r && setPicked('')),
          })
        }
      >
        Delete version
      </button>
    </div>
  );
}

/** The branch's work out of Grove (take home) or other branches' work into it (merge into…): each opens its view. */
function ResultGroup({ branch }: { branch: Workspace }) {
  const live = useApp(isLive);
  const view = useApp((s) => s.view);
  const setView = useApp((s) => s.setView);
  const running = branch.state === 'running';
  const why = running ? '' : ' (start it first)';
  return (
    <div className="action-group">
      <button
        className={view === 'takehome' ? 'active' : ''}
        disabled={!live || !running}
        onClick={() => setView('takehome')}
        title={`Its work as a commit on a new branch of a git repository on this machine${why}`}
      >
        Take home
      </button>
      <button
        className={view === 'merge' ? 'active' : ''}
        disabled={!live || !running}
        onClick={() => setView('merge')}
        title={`Bring what other branches of the workspace changed into this one${why}`}
      >
        Merge into…
      </button>
    </div>
  );
}

/** What becomes of the old main line on a promotion (or a pick): the CLI's --old-main choices. */
export function oldMainChoice(name: string): Choice {
  return {
    name: 'oldMain',
    legend: `What becomes of ${name}, the main line now?`,
    options: [
      { value: 'version', label: 'Keep it as a version (stopped; roll back or fork from it later)' },
      { value: 'keep', label: 'Keep it running as a branch' },
      { value: 'discard', label: 'Discard it' },
    ],
  };
}

function LifeGroup({ branch }: { branch: Workspace }) {
  const live = useApp(isLive);
  const act = useApp((s) => s.act);
  const ask = useApp((s) => s.ask);
  const oldMain = useApp((s) => s.server?.branches.find((b) => b.tree === branch.tree && b.main));
  const running = branch.state === 'running';
  const ref = branch.id;
  return (
    <div className="action-group">
      <button
        disabled={!live || branch.main}
        onClick={() =>
          ask({
            title: `Promote ${branch.name}?`,
            body: 'It becomes the main line and takes over the stable host ports and desktop socket.',
            choices: oldMain ? [oldMainChoice(oldMain.name)] : [],
            confirmLabel: 'Promote',
            danger: false,
            run: (picked) => void act('branch.promote', { workspace: ref, ...(picked.oldMain ? { oldMain: picked.oldMain as OldMainFate } : {}) }),
          })
        }
      >
        Promote
      </button>
      {running ? (
        <button
          disabled={!live}
          onClick={() =>
            ask({
              title: `Stop ${branch.name}?`,
              body: 'Its processes end; its files are kept and it can be started again.',
              confirmLabel: 'Stop',
              danger: true,
              run: () => void act('workspace.stop', { workspace: ref }),
            })
          }
        >
          Stop
        </button>
      ) : (
        <button disabled={!live} onClick={() => void act('workspace.start', { workspace: ref })}>
          Start
        </button>
      )}
      <button
        className="danger"
        disabled={!live}
        onClick={() =>
          ask({
            title: `Discard ${branch.name}?`,
            body: 'The branch, its processes and its files are removed for good. Versions are kept (grove versions lists and removes them).',
            confirmLabel: 'Discard',
            danger: true,
            run: () => void act('branch.discard', { workspace: ref }),
          })
        }
      >
        Discard
      </button>
    </div>
  );
}

/** Several branches selected: their count and names, and the actions that take them all. */
function SelectionBar() {
  const live = useApp(isLive);
  const act = useApp((s) => s.act);
  const ask = useApp((s) => s.ask);
  const setView = useApp((s) => s.setView);
  const layout = useApp((s) => s.layout);
  const selection = useApp((s) => s.selection);
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const chosen = branches.filter((b) => selection.includes(b.id));
  const running = chosen.filter((b) => b.state === 'running');
  const names = (list: Workspace[]) => list.map((b) => b.name).join(', ');
  const siblings = chosen.every((b) => b.parent !== null && b.parent === chosen[0]?.parent);
  // Children before their parents: each discard leaves the rest of the tree as it was.
  const deepestFirst = [...chosen].sort((a, b) => (layout.byId.get(b.id)?.depth ?? 0) - (layout.byId.get(a.id)?.depth ?? 0));
  const each = async (list: Workspace[], method: 'branch.discard' | 'workspace.stop') => {
    for (const b of list) await act(method, { workspace: b.id });
  };
  return (
    <div className="actionbar" data-testid="actions">
      <div className="action-title" data-testid="selection-count">
        <b>{chosen.length} branches selected</b>
        <div className="muted small selection-names">{names(chosen)}</div>
      </div>
      <div className="action-group">
        <button disabled={!siblings} onClick={() => setView('race')} title="Siblings side by side, with what each did: pick the winner">
          Race
        </button>
        <button disabled={running.length < 2} onClick={() => setView('compare')} title="Their desktops side by side">
          Compare
        </button>
        <button disabled={chosen.length !== 2} onClick={() => setView('diff')} title="The files of two branches compared">
          Diff
        </button>
      </div>
      <div className="action-group">
        <button
          disabled={!live || running.length === 0}
          onClick={() =>
            ask({
              title: `Stop ${running.length} ${running.length === 1 ? 'branch' : 'branches'}?`,
              body: `${names(running)}: their processes end; their files are kept and each can be started again.`,
              confirmLabel: `Stop ${running.length}`,
              danger: true,
              run: () => void each(running, 'workspace.stop'),
            })
          }
        >
          Stop {running.length}
        </button>
        <button
          className="danger"
          disabled={!live}
          onClick={() =>
            ask({
              title: `Discard ${chosen.length} branches?`,
              body: `${names(chosen)}: the branches, their processes and their files are removed for good. Versions are kept.`,
              confirmLabel: `Discard ${chosen.length}`,
              danger: true,
              run: () => void each(deepestFirst, 'branch.discard'),
            })
          }
        >
          Discard {chosen.length}
        </button>
      </div>
    </div>
  );
}
