// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"disableIframePageLoading":true}}
// A branch's desktop in the app: its Selkies stream in a frame of the app's
// own origin when the controller says so (`grove app --web`, over HTTPS),
// noVNC otherwise (`--stream vnc`, Electron); the compare view the same; the
// agent's pointer where Selkies's client draws that screen point in the frame.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentAction } from '../../main/src/api/contract.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { AgentPointer } from '../src/components/AgentOverlay.js';
import { CompareGrid, DesktopPanel } from '../src/components/Panels.js';
import { StreamFrame } from '../src/components/StreamFrame.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { mount, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const TWO = branch('aaaaaaa2', 'one-1', { parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false });
const CLICKED: AgentAction = {
  by: { role: 'agent', uid: 1001, user: 'alice' },
  action: 'click',
  doing: 'clicking',
  summary: 'click left at 320,200',
  cursor: { x: 320, y: 200 },
  screen: { width: 1280, height: 800 },
  ok: true,
  at: new Date().toISOString(),
};

let view: Mounted | null = null;
afterEach(() => {
  view?.unmount();
  view = null;
});

describe("a branch's desktop", () => {
  it('is its stream, framed from /stream/ID/, when the app frames streams', () => {
    view = mount(<DesktopPanel branchId={ONE.id} />, appState([ONE], 'connected', { desktopView: 'stream' }), apiWith({}).api);
    const frame = view.host.querySelector<HTMLIFrameElement>(`[data-testid="stream-${ONE.id}"]`);
    expect(frame?.getAttribute('src')).toBe(`/stream/${ONE.id}/`);
    expect(view.host.querySelector(`[data-testid="desktop-${ONE.id}"]`)).toBeNull();
  });

  it('is noVNC when the app shows desktops through noVNC', () => {
    view = mount(<DesktopPanel branchId={ONE.id} />, appState([ONE], 'connected'), apiWith({}).api);
    expect(view.host.querySelector('iframe')).toBeNull();
    expect(view.host.querySelector(`[data-testid="desktop-${ONE.id}"]`)).not.toBeNull();
  });
});

describe('the compare view', () => {
  it("frames each selected branch's own stream when the app frames streams", () => {
    view = mount(<CompareGrid ids={[ONE.id, TWO.id]} />, appState([ONE, TWO], 'connected', { desktopView: 'stream' }), apiWith({}).api);
    for (const b of [ONE, TWO])
      expect(view.host.querySelector(`[data-testid="compare-${b.name}"] [data-testid="stream-${b.id}"]`)?.getAttribute('src')).toBe(`/stream/${b.id}/`);
    expect(view.host.querySelector('.desktop-screen:not(iframe)')).toBeNull();
  });
});

describe("the agent's pointer over a stream", () => {
  it('is where the frame shows that screen point, the screen fitted to the frame at its aspect', async () => {
    view = mount(
      <StreamFrame branchId={ONE.id}>
        <AgentPointer branchId={ONE.id} />
      </StreamFrame>,
      appState([ONE], 'connected', { desktopView: 'stream', agents: { [ONE.id]: [CLICKED] } }),
      apiWith({}).api,
    );
    const box = { left: 0, top: 0, width: 1000, height: 800 };
    for (const el of [view.host.querySelector('.agent-layer')!, view.host.querySelector('iframe')!])
      el.getBoundingClientRect = () => ({ ...box, x: 0, y: 0, right: box.width, bottom: box.height, toJSON: () => box });
    act(() => view!.host.querySelector('iframe')!.setAttribute('style', 'width: 1000px'));
    await act(() => new Promise((r) => setTimeout(r, 0)));
    // 1280x800 fitted into 1000x800: 1000x625, 87.5 px from the top; (320, 200) → (250, 87.5 + 156.25).
    const pointer = view.host.querySelector<HTMLElement>('[data-testid="agent-pointer"]')!;
    expect([pointer.style.left, pointer.style.top]).toEqual(['250px', '243.75px']);
  });
});
