// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"disableIframePageLoading":true}}
// A branch's desktop in the app: its Selkies stream in a frame of the app's
// own origin when the controller says so (`grove app --web`, over HTTPS),
// noVNC otherwise (`--stream vnc`, Electron).
import { afterEach, describe, expect, it } from 'vitest';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { DesktopPanel } from '../src/components/Panels.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { mount, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');

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
