// @vitest-environment happy-dom
// @vitest-environment-options {"settings":{"disableIframePageLoading":true}}
// A branch's desktop in the app: its Selkies stream in a frame of the app's
// own origin when the app is served over HTTPS (the only way the server
// serves streams), noVNC otherwise.
import { afterEach, describe, expect, it } from 'vitest';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { DesktopPanel } from '../src/components/Panels.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { mount, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const setUrl = (url: string) => (window as unknown as { happyDOM: { setURL(u: string): void } }).happyDOM.setURL(url);

let view: Mounted | null = null;
afterEach(() => {
  view?.unmount();
  view = null;
});

describe("a branch's desktop", () => {
  it('is its stream, framed from /stream/ID/, when the app is served over HTTPS', () => {
    setUrl('https://127.0.0.1:8443/');
    view = mount(<DesktopPanel branchId={ONE.id} />, appState([ONE], 'connected'), apiWith({}).api);
    const frame = view.host.querySelector<HTMLIFrameElement>(`[data-testid="stream-${ONE.id}"]`);
    expect(frame?.getAttribute('src')).toBe(`/stream/${ONE.id}/`);
    expect(view.host.querySelector(`[data-testid="desktop-${ONE.id}"]`)).toBeNull();
  });

  it('is noVNC over plain HTTP, where no stream is served', () => {
    setUrl('http://127.0.0.1:8080/');
    view = mount(<DesktopPanel branchId={ONE.id} />, appState([ONE], 'connected'), apiWith({}).api);
    expect(view.host.querySelector('iframe')).toBeNull();
    expect(view.host.querySelector(`[data-testid="desktop-${ONE.id}"]`)).not.toBeNull();
  });
});
