import { useEffect, useState } from 'react';
import type { Workspace } from '../../../main/src/api/contract.js';
import { branchById, firstOptions, isLive, type Confirmation, type View } from '../store/app.js';
import { actorName } from '../../../main/src/api/words.js';
import { ApprovalsView, useApprovalCount } from './Approvals.js';
import { ActionBar } from './ActionBar.js';
import { BranchTree } from './BranchTree.js';
import { CreateForm } from './CreateForm.js';
import { NetworkPanel } from './Egress.js';
import { useApp } from './context.js';
import { ImagesView } from './Images.js';
import { MergePanel } from './MergePanel.js';
import { ActivityLog, CompareGrid, DesktopPanel, DiffPanel, Empty, Operations } from './Panels.js';
import { PerformancePanel } from './Performance.js';
import { PoolBanner } from './PoolBanner.js';
import { RaceView } from './Race.js';
import { TakeHomePanel } from './TakeHome.js';
import { useRequestNotifications } from './request-alerts.js';
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
  const [sidebarWidth, setSidebarWidth] = useSidebarWidth();
  useRequestNotifications();
  return (
    <div className="app">
      <TopBar />
      <StaleBanner />
      <PoolBanner />
      <Errors />
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
        <div className="workspace" style={sidebarWidth ? ({ '--sidebar-width': `${sidebarWidth}px` } as React.CSSProperties) : undefined}>
          <aside className="sidebar">
            <SidebarHead />
            <BranchTree />
            <Operations />
          </aside>
          <Splitter width={sidebarWidth} onResize={setSidebarWidth} />
          <main className="main">
            <ActionBar />
            <Tabs />
            <ViewContent />
          </main>
        </div>
      )}
      {!hasBranches && <Operations />}
      <ConfirmDialog />
    </div>
  );
}

const SIDEBAR_MIN = 220;
const SIDEBAR_KEY = 'grove.sidebarWidth';

/** The width the person dragged the sidebar to (kept across reloads), or null for the default that follows the window. */
function useSidebarWidth(): [number | null, (w: number) => void] {
  const [width, setWidth] = useState<number | null>(() => Number(localStorage.getItem(SIDEBAR_KEY)) || null);
  const set = (w: number) => {
    // At most half the window: the desktop keeps the larger part.
    const clamped = Math.round(Math.max(SIDEBAR_MIN, Math.min(w, innerWidth / 2)));
    localStorage.setItem(SIDEBAR_KEY, String(clamped));
    setWidth(clamped);
  };
  return [width, set];
}

function Splitter({ width, onResize }: { width: number | null; onResize: (w: number) => void }) {
  const start = (e: React.PointerEvent<HTMLDivElement>) => {
    const handle = e.currentTarget;
    const left = handle.previousElementSibling!.getBoundingClientRect().left;
    handle.setPointerCapture(e.pointerId);
    const move = (m: PointerEvent) => onResize(m.clientX - left);
    const stop = () => {
      handle.removeEventListener('pointermove', move);
      handle.removeEventListener('pointerup', stop);
    };
    handle.addEventListener('pointermove', move);
    handle.addEventListener('pointerup', stop);
  };
  const current = () => width ?? document.querySelector('.sidebar')?.getBoundingClientRect().width ?? 300;
  return (
    <div
      className="splitter"
      role="separator"
      aria-orientation="vertical"
      aria-label="resize the sidebar"
      aria-valuenow={width ?? undefined}
      tabIndex={0}
      onPointerDown={start}
      onKeyDown={(e) => {
        if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') onResize(current() + (e.key === 'ArrowLeft' ? -20 : 20));
      }}
    />
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

/** The selected branch's views, then the app-wide ones (after a divider). */
const BRANCH_TABS: [View, string][] = [
  ['desktop', 'Desktop'],
  ['race', 'Race'],
  ['compare', 'Compare'],
  ['terminal', 'Terminal'],
  ['diff', 'Diff'],
  ['network', 'Outside access'],
];
const APP_TABS: [View, string][] = [
  ['approvals', 'Requests'],
  ['activity', 'Activity'],
  ['performance', 'Performance'],
  ['images', 'Images'],
];

function Tabs() {
  const view = useApp((s) => s.view);
  const setView = useApp((s) => s.setView);
  const waiting = useApprovalCount();
  return (
    <nav className="tabs" role="tablist">
      {[...BRANCH_TABS, null, ...APP_TABS].map((tab) => {
        if (!tab) return <span key="divider" className="tabs-divider" aria-hidden="true" />;
        const [v, label] = tab;
        return (
          <button key={v} role="tab" aria-selected={view === v} className={view === v ? 'active' : ''} onClick={() => setView(v)}>
            {label}
            {v === 'approvals' && waiting > 0 && (
              <span className="count" data-testid="approvals-count" aria-label={`${waiting} waiting`}>
                {waiting}
              </span>
            )}
          </button>
        );
      })}
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
    case 'race':
      return <RaceView />;
    case 'compare':
      return <CompareGrid ids={selection} />;
    case 'terminal':
      return branch.state === 'running' && live ? (
        <Terminal key={focus} branchId={focus} />
      ) : (
        <Empty title={`${branch.name} is not running`} body="Start it to open a terminal." />
      );
    case 'diff':
      // Two selected: those two, the focused one first; otherwise the focused one against its parent.
      return <DiffPanel ids={selection.length === 2 ? [focus, ...selection.filter((id) => id !== focus)] : [focus]} />;
    case 'network':
      return <NetworkPanel key={focus} branchId={focus} />;
    case 'takehome':
      return <TakeHomePanel key={focus} branch={branch} />;
    case 'merge':
      return <MergePanel key={focus} target={branch} />;
  }
}

/** Errors, once each, in the page's flow (never over the desktop); each goes by itself after a while or when dismissed. */
function Errors() {
  const errors = useApp((s) => s.errors);
  const dismiss = useApp((s) => s.dismissError);
  if (errors.length === 0) return null;
  return (
    <div className="errors" role="alert" data-testid="errors">
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

export function ConfirmDialog() {
  const c = useApp((s) => s.confirm);
  if (!c) return null;
  return <ConfirmBox key={c.title} c={c} />;
}

function ConfirmBox({ c }: { c: Confirmation }) {
  const answer = useApp((s) => s.answer);
  const [picked, setPicked] = useState(() => firstOptions(c.choices));
  return (
    <div className="modal-backdrop" onKeyDown={(e) => e.key === 'Escape' && answer(false)}>
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="confirm-title">
        <h3 id="confirm-title">{c.title}</h3>
        <p>{c.body}</p>
        {c.choices?.map((choice) => (
          <fieldset key={choice.name} className="modal-choices">
            <legend>{choice.legend}</legend>
            {choice.options.map((o) => (
              <label key={o.value} className="check">
                <input
                  type="radio"
                  name={choice.name}
                  value={o.value}
                  checked={picked[choice.name] === o.value}
                  onChange={() => setPicked({ ...picked, [choice.name]: o.value })}
                />{' '}
                {o.label}
              </label>
            ))}
          </fieldset>
        ))}
        <div className="modal-buttons">
          <button onClick={() => answer(false)} autoFocus>
            Cancel
          </button>
          <button className={c.danger ? 'danger' : 'primary'} onClick={() => answer(true, picked)}>
            {c.confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
