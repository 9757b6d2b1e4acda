// @vitest-environment happy-dom
// Agents at work, as the person sees them: the tree marks branches an agent
// made and says what an agent is doing there now; the desktop shows the
// agent's pointer where noVNC draws that screen point, and a feed of its last
// actions.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentAction, AppState } from '../../main/src/api/contract.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { AgentFeed, AgentPointer } from '../src/components/AgentOverlay.js';
import { BranchTree } from '../src/components/BranchTree.js';
import { fittedBox, pointerPosition, relativeBox } from '../src/desktop/pointer.js';
import { agentNow, lastPointer } from '../src/store/agents.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { mount, type Mounted } from './mount.js';

const ALICE = { role: 'agent' as const, uid: 1001, user: 'alice' };
const ONE = branch('aaaaaaa1', 'one');
const MADE = branch('aaaaaaa2', 'one-1', { parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false, madeBy: ALICE });
const SCREEN = { width: 1280, height: 800 };
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const act_ = (action: string, doing: string, summary: string, cursor: { x: number; y: number } | null, at = ago(1000)): AgentAction => ({
  by: ALICE,
  action,
  doing,
  summary,
  cursor,
  screen: cursor ? SCREEN : null,
  ok: true,
  at,
});
const state = (agents: AppState['agents']) => appState([ONE, MADE], 'connected', { agents });

let view: Mounted | null = null;
afterEach(() => {
  view?.unmount();
  view = null;
});

describe('where the pointer is drawn', () => {
  it('scales a screen point like the canvas and offsets it by the canvas’s place', () => {
    // A 1280x800 screen drawn at half size, centred 100 px from the overlay's left and 20 px from its top.
    const canvas = { left: 100, top: 20, width: 640, height: 400 };
    expect(pointerPosition({ x: 0, y: 0 }, SCREEN, canvas)).toEqual({ left: 100, top: 20 });
    expect(pointerPosition({ x: 640, y: 400 }, SCREEN, canvas)).toEqual({ left: 420, top: 220 });
    expect(pointerPosition({ x: 1279, y: 799 }, SCREEN, canvas)).toEqual({ left: 739.5, top: 419.5 });
    // Full size, scrolled 300 px right: points left of the view are off to the left.
    expect(pointerPosition({ x: 100, y: 10 }, SCREEN, { left: -300, top: 0, width: 1280, height: 800 })).toEqual({ left: -200, top: 10 });
    // Off the screen (it was resized), or nothing drawn yet.
    expect(pointerPosition({ x: 1280, y: 10 }, SCREEN, canvas)).toBeNull();
    expect(pointerPosition({ x: 10, y: 10 }, SCREEN, { left: 0, top: 0, width: 0, height: 0 })).toBeNull();
    expect(relativeBox({ left: 150, top: 80, width: 640, height: 400 }, { left: 50, top: 60 })).toEqual(canvas);
  });

  it('fits a screen into a frame at its aspect, centred, as a stream draws it', () => {
    expect(fittedBox(SCREEN, { left: 10, top: 20, width: 1000, height: 800 })).toEqual({ left: 10, top: 107.5, width: 1000, height: 625 });
    expect(fittedBox(SCREEN, { left: 0, top: 0, width: 2000, height: 800 })).toEqual({ left: 360, top: 0, width: 1280, height: 800 });
  });

  it('takes the newest action that says where the pointer is, and counts an agent busy for 30 s', () => {
    const moved = act_('click', 'clicking', 'click left at 10,20', { x: 10, y: 20 }, ago(40_000));
    const typed = act_('type', 'typing', 'type 3 characters', null, ago(20_000));
    expect(lastPointer([moved, typed])).toBe(moved);
    expect(lastPointer([typed])).toBeNull();
    expect(agentNow([moved, typed], Date.now())).toBe(typed);
    expect(agentNow([moved], Date.now())).toBeNull();
    expect(agentNow(undefined, Date.now())).toBeNull();
  });
});

/** A desktop as <Desktop> lays it out: the screen noVNC draws into, and the overlay beside it. */
function desktop(agents: AppState['agents']) {
  view = mount(
    <div className="desktop">
      <div className="desktop-screen">
        <canvas width={1280} height={800} />
      </div>
      <AgentPointer branchId={MADE.id} />
      <AgentFeed branchId={MADE.id} />
    </div>,
    state({}),
    apiWith({}).api,
  );
  const rect = (el: Element, box: { left: number; top: number; width: number; height: number }) => {
    el.getBoundingClientRect = () => ({ ...box, x: box.left, y: box.top, right: box.left + box.width, bottom: box.top + box.height, toJSON: () => box });
  };
  rect(view.host.querySelector('.agent-layer')!, { left: 300, top: 100, width: 900, height: 600 });
  rect(view.host.querySelector('canvas')!, { left: 430, top: 100, width: 640, height: 400 });
  // noVNC restyles its canvas when it scales it: the overlay measures again.
  act(() => view!.host.querySelector('canvas')!.setAttribute('style', 'width: 640px; height: 400px'));
  view.apply(state(agents));
  return view;
}

const tick = () => act(async () => new Promise((r) => setTimeout(r, 0)));

describe('the agent on the desktop', () => {
  it('draws its pointer where the canvas shows that screen point, and moves it when the canvas is scaled again', async () => {
    const v = desktop({
      [MADE.id]: [act_('click', 'clicking', 'click left at 640,400', { x: 640, y: 400 }), act_('type', 'typing', 'type 3 characters', null)],
    });
    await tick();
    const pointer = v.host.querySelector<HTMLElement>('[data-testid="agent-pointer"]')!;
    // Canvas at (130, 0) in the overlay, half size: (640, 400) → (130 + 320, 0 + 200).
    expect([pointer.style.left, pointer.style.top]).toEqual(['450px', '200px']);
    expect(pointer.getAttribute('aria-label')).toBe("alice's pointer at 640, 400");
    expect(pointer.classList.contains('idle')).toBe(false);
    const canvas = v.host.querySelector('canvas')!;
    canvas.getBoundingClientRect = () => ({ left: 300, top: 100, width: 960, height: 600, x: 300, y: 100, right: 1260, bottom: 700, toJSON: () => null });
    act(() => canvas.setAttribute('style', 'width: 960px; height: 600px'));
    await tick();
    expect([pointer.style.left, pointer.style.top]).toEqual(['480px', '300px']);
  });

  it('draws no pointer before the agent pointed anywhere, and feeds its last actions, newest first', async () => {
    const actions = Array.from({ length: 7 }, (_, i) => act_('key', 'pressing keys', `key ctrl+${i}`, null, ago(7000 - i * 1000)));
    const v = desktop({ [MADE.id]: actions });
    await tick();
    expect(v.host.querySelector('[data-testid="agent-pointer"]')).toBeNull();
    const feed = [...v.host.querySelectorAll('[data-testid="agent-feed"] li')].map((li) => li.textContent);
    expect(feed).toEqual([
      'alice key ctrl+6 1s ago',
      'alice key ctrl+5 2s ago',
      'alice key ctrl+4 3s ago',
      'alice key ctrl+3 4s ago',
      'alice key ctrl+2 5s ago',
    ]);
  });
});

describe('the tree', () => {
  const row = (name: string) => view!.host.querySelector<HTMLElement>(`[data-testid="branch-${name}"]`)!;

  it('marks branches an agent made, and says what an agent does there now', () => {
    view = mount(<BranchTree />, state({ [MADE.id]: [act_('type', 'typing', 'type 12 characters', { x: 5, y: 5 })] }), apiWith({}).api);
    expect(row('one-1').querySelector('[data-testid="agent-mark"]')!.textContent).toBe('agent alice');
    expect(row('one-1').querySelector('[data-testid="agent-mark"]')!.getAttribute('title')).toBe('Made by agent alice (uid 1001)');
    expect(row('one-1').querySelector('[data-testid="agent-now"]')!.textContent).toBe('alice · typing');
    // Made by a person, and no agent at work there.
    expect(row('one').querySelector('[data-testid="agent-mark"]')).toBeNull();
    expect(row('one').querySelector('[data-testid="agent-now"]')).toBeNull();
    // Half a minute later it is no longer what the agent is doing now.
    view.apply(state({ [MADE.id]: [act_('type', 'typing', 'type 12 characters', null, ago(31_000))] }));
    expect(row('one-1').querySelector('[data-testid="agent-now"]')).toBeNull();
    expect(row('one-1').querySelector('[data-testid="agent-mark"]')).not.toBeNull();
  });
});
