import { useEffect, useState } from 'react';
import type { Workspace } from '../../../main/src/api/contract.js';
import { NONE, branchById, isLive, type View } from '../store/app.js';
import { actorName } from '../../../main/src/api/words.js';
import { ApprovalsView, useApprovalCount } from './Approvals.js';
import { BranchOrigin } from './BranchOrigin.js';
import { BranchDisk } from './BranchDisk.js';
import { BranchTree } from './BranchTree.js';
import { CreateForm } from './CreateForm.js';
import { NetworkPanel } from './Egress.js';
import { useApp } from './context.js';
import { ImagesView } from './Images.js';
import { ActivityLog, CompareGrid, DesktopPanel, DiffPanel, Empty, Operations } from './Panels.js';
import { PerformancePanel } from './Performance.js';
import { PoolBanner } from './PoolBanner.js';
import { Terminal } from './Terminal.js';

export function App() {
  const theme = useApp((s) => s.theme);
  const server = useApp((s) => s.server);
  const view = useApp((s) => s.view);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  const image = server?.images.find((i) => i.name === 'desktop');
  const hasBranches = (server?.branches.length ?? 0) > 0;
  return (
    <div className="app">
      <TopBar />
      <StaleBanner />
      <PoolBanner />
      {server === null ? (
        <Empty title="Connecting to Grove…" body="Waiting for the app's controller." />
      ) : !hasBranches ? (
        view === 'images' ? (
          <FirstImages />
        ) : image?.state === 'ready' ? (
          <CreateFirst />
        ) : (
          <BuildImage state={image?.state ?? 'absent'} />
        )
      ) : (
        <div className="workspace">
          <aside className="sidebar">
            <SidebarHead />
            <BranchTree />
          </aside>
          <main className="main">
            <ActionBar />
            <Tabs />
            <ViewContent />
          </main>
        </div>
      )}
      <Operations />
      <Errors />
      <ConfirmDialog />
    </div>
  );
}

function TopBar() {
  const toggleTheme = useApp((s) => s.toggleTheme);
  const theme = useApp((s) => s.theme);
  const live = useApp(isLive);
  return (
    <header className="topbar">
      <div className="brand">
        <span className="logo" aria-hidden="true">
          ⎇
        </span>{' '}
        Grove
      </div>
      <div className={`link-status ${live ? 'live' : 'not-live'}`} data-testid="link-status">
        {live ? 'live' : 'not live'}
      </div>
      <div className="spacer" />
      <Identity />
      <button onClick={toggleTheme} aria-label="toggle theme">
        {theme === 'dark' ? 'Light theme' : 'Dark theme'}
      </button>
    </header>
  );
}

/** Who the helper takes this app for: decisions made here are recorded under this name. */
function Identity() {
  const identity = useApp((s) => s.server?.connection.identity);
  if (!identity) return null;
  return (
    <div
      className={`identity ${identity.role}`}
      data-testid="identity"
      title={`Grove's helper knows this app as ${actorName(identity)} (uid ${identity.uid}): what you decide here is recorded under that name`}
    >
      {identity.role === 'person' ? `you: ${identity.user}` : `connected as ${actorName(identity)}: only a person may decide requests`}
    </div>
  );
}

function StaleBanner() {
  const link = useApp((s) => s.link);
  const conn = useApp((s) => s.server?.connection);
  if (link !== 'open')
    return (
      <div className="banner warn" role="status">
        The app lost its link to the controller; reconnecting… What you see is not live.
      </div>
    );
  if (conn && conn.status !== 'connected')
    return (
      <div className="banner warn" role="status">
        Grove's helper is not reachable ({conn.error ?? conn.status}). Reconnecting… What you see is the last known state, not live.
      </div>
    );
  return null;
}

function BuildImage({ state }: { state: string }) {
  const act = useApp((s) => s.act);
  const building = useApp((s) => s.server?.operations.some((o) => o.kind === 'image.build' && o.status === 'running')) || state === 'building';
  return (
    <Empty
      title="Welcome to Grove"
      body="Workspaces start from a desktop image (Debian with a desktop, a terminal, an editor and Chromium). Build it first: about 7 minutes the first time, seconds when it is cached."
    >
      <button className="primary" disabled={building} onClick={() => void act('image.build', { name: 'desktop' })}>
        {building ? 'Building the desktop image…' : state === 'failed' ? 'Build again' : 'Build the desktop image'}
      </button>
      {state === 'failed' && <p className="error-text">The last build failed; the helper's log tells why.</p>}
    </Empty>
  );
}

function CreateFirst() {
  const setView = useApp((s) => s.setView);
  return (
    <Empty
      title="Create your first workspace"
      body="A workspace is a whole Linux desktop for an agent to work in. Give it a name, and optionally a project folder to copy in; you can fork it into branches once it runs."
    >
      <CreateForm autoFocus />
      <p>
        <button className="link" onClick={() => setView('images')}>
          Start from an image of your own: build or pull one…
        </button>
      </p>
    </Empty>
  );
}

/** The Images view before there is any branch (no tabs yet), with the way back. */
function FirstImages() {
  const setView = useApp((s) => s.setView);
  return (
    <div className="first-images">
      <div className="panel-bar">
        <button className="link" onClick={() => setView('desktop')}>
          ← Create a workspace
        </button>
      </div>
      <ImagesView />
    </div>
  );
}

function SidebarHead() {
  const thumbnails = useApp((s) => s.thumbnails);
  const setThumbnails = useApp((s) => s.setThumbnails);
  const count = useApp((s) => s.server?.branches.length ?? 0);
  const [creating, setCreating] = useState(false);
  return (
    <div className="sidebar-head">
      <div className="sidebar-title">
        Branches <span className="muted">{count}</span>
        <div className="spacer" />
        <label className="check" title="Live thumbnails of visible running branches">
          <input type="checkbox" checked={thumbnails} onChange={(e) => setThumbnails(e.target.checked)} /> live
        </label>
        <button className="small" onClick={() => setCreating(!creating)}>
          + New
        </button>
      </div>
      {creating && <CreateForm autoFocus onDone={() => setCreating(false)} />}
    </div>
  );
}

function ActionBar() {
  const focusId = useApp((s) => s.focus);
  const branch = useApp((s) => branchById(s, s.focus));
  const versions = useApp((s) => s.server?.versions ?? NONE);
  const live = useApp(isLive);
  const act = useApp((s) => s.act);
  const ask = useApp((s) => s.ask);
  const [copies, setCopies] = useState(2);
  const [version, setVersion] = useState('');
  if (!branch || !focusId) return <div className="actionbar muted">Select a branch.</div>;
  const mine = versions.filter((v) => v.tree === branch.tree).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const running = branch.state === 'running';
  const ref = branch.id;
  const disabled = !live;
  return (
    <div className="actionbar" data-testid="actions">
      <div className="action-title">
        <b>{branch.name}</b> <span className="muted">{branch.id}</span>
        <BranchOrigin branch={branch} />
        <BranchDisk branch={branch} />
      </div>
      <div className="action-group">
        <input
          type="number"
          min={1}
          max={16}
          value={copies}
          aria-label="copies"
          onChange={(e) => setCopies(Math.max(1, Math.min(16, Number(e.target.value) || 1)))}
        />
        <button
          disabled={disabled || !running}
          onClick={() => void act('branch.fork', { workspace: ref, copies })}
          title="Fork this running branch into N live copies"
        >
          Fork
        </button>
        <button disabled={disabled || !running} onClick={() => void act('branch.checkpoint', { workspace: ref })} title="Record a version to roll back to">
          Checkpoint
        </button>
      </div>
      <div className="action-group">
        <select aria-label="version" value={version} onChange={(e) => setVersion(e.target.value)}>
          <option value="">{mine.length ? 'version…' : 'no versions yet'}</option>
          {mine.map((v) => (
            <option key={v.id} value={v.id} data-testid={`version-${v.id}`}>
              {v.label ?? v.id} · {new Date(v.createdAt).toLocaleTimeString()}
              {v.saved ? '' : ' · saving…'}
            </option>
          ))}
        </select>
        <button
          disabled={disabled || !version}
          onClick={() =>
            ask({
              title: `Roll ${branch.name} back?`,
              body: `Its processes and files return to version ${version}. Whatever it did since is lost unless you checkpoint it first.`,
              confirmLabel: 'Roll back',
              danger: true,
              run: () => void act('branch.rollback', { workspace: ref, version }),
            })
          }
        >
          Roll back
        </button>
      </div>
      <div className="action-group">
        <button
          disabled={disabled || branch.main}
          onClick={() =>
            ask({
              title: `Promote ${branch.name}?`,
              body: 'It becomes the main line and takes over the stable host ports and desktop socket. The old main line is kept as a version.',
              confirmLabel: 'Promote',
              danger: false,
              run: () => void act('branch.promote', { workspace: ref }),
            })
          }
        >
          Promote
        </button>
        {running ? (
          <button
            disabled={disabled}
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
          <button disabled={disabled} onClick={() => void act('workspace.start', { workspace: ref })}>
            Start
          </button>
        )}
        <button
          className="danger"
          disabled={disabled}
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
    </div>
  );
}

const TABS: [View, string][] = [
  ['desktop', 'Desktop'],
  ['compare', 'Compare'],
  ['terminal', 'Terminal'],
  ['diff', 'Diff'],
  ['network', 'Outside access'],
  ['activity', 'Activity'],
  ['approvals', 'Requests'],
  ['performance', 'Performance'],
  ['images', 'Images'],
];

function Tabs() {
  const view = useApp((s) => s.view);
  const setView = useApp((s) => s.setView);
  const waiting = useApprovalCount();
  return (
    <nav className="tabs" role="tablist">
      {TABS.map(([v, label]) => (
        <button key={v} role="tab" aria-selected={view === v} className={view === v ? 'active' : ''} onClick={() => setView(v)}>
          {label}
          {v === 'approvals' && waiting > 0 && (
            <span className="count" data-testid="approvals-count" aria-label={`${waiting} waiting`}>
              {waiting}
            </span>
          )}
        </button>
      ))}
    </nav>
  );
}

function ViewContent() {
  const view = useApp((s) => s.view);
  const focus = useApp((s) => s.focus);
  const selection = useApp((s) => s.selection);
  const branch: Workspace | undefined = useApp((s) => branchById(s, s.focus));
  const live = useApp(isLive);
  if (view === 'approvals') return <ApprovalsView />;
  if (view === 'activity') return <ActivityLog />;
  if (view === 'performance') return <PerformancePanel />;
  if (view === 'images') return <ImagesView />;
  if (!focus || !branch) return <Empty title="No branch selected" body="Pick a branch in the tree (arrow keys move, Enter opens its desktop)." />;
  switch (view) {
    case 'desktop':
      return live ? (
        <DesktopPanel key={focus} branchId={focus} />
      ) : (
        <Empty title="Not live" body="The desktop comes back when Grove's helper is reachable again." />
      );
    case 'compare':
      return <CompareGrid ids={selection} />;
    case 'terminal':
      return branch.state === 'running' && live ? (
        <Terminal key={focus} branchId={focus} />
      ) : (
        <Empty title={`${branch.name} is not running`} body="Start it to open a terminal." />
      );
    case 'diff':
      return <DiffPanel ids={selection.length >= 2 ? selection : [focus]} />;
    case 'network':
      return <NetworkPanel key={focus} branchId={focus} />;
  }
}

function Errors() {
  const errors = useApp((s) => s.errors);
  const dismiss = useApp((s) => s.dismissError);
  if (errors.length === 0) return null;
  return (
    <div className="errors" role="alert">
      {errors.map((e) => (
        <div key={e.id} className="error">
          <span>{e.text}</span>
          <button className="link" onClick={() => dismiss(e.id)} aria-label="dismiss">
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

function ConfirmDialog() {
  const c = useApp((s) => s.confirm);
  const answer = useApp((s) => s.answer);
  if (!c) return null;
  return (
    <div className="modal-backdrop" onKeyDown={(e) => e.key === 'Escape' && answer(false)}>
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
        <h3 id="confirm-title">{c.title}</h3>
        <p>{c.body}</p>
        <div className="modal-buttons">
          <button onClick={() => answer(false)} autoFocus>
            Cancel
          </button>
          <button className={c.danger ? 'danger' : 'primary'} onClick={() => answer(true)}>
            {c.confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
