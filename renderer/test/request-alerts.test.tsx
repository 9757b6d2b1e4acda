// @vitest-environment happy-dom
// A request arriving while the app is in the background: a notification of
// the system, which brings the app forward on the Requests view. A and D on a
// focused request: approve or deny it, saying what the key did.
import { act } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { APP, CONNECTION, DISCARD, PROMOTE, approval, branch, decided } from '../../main/test/unit/app-fixtures.js';
import type { Approval } from '../../main/src/api/contract.js';
import { ApprovalsView } from '../src/components/Approvals.js';
import { useRequestNotifications } from '../src/components/request-alerts.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { mount, typeInto, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const ONE_1 = branch('aaaaaaa2', 'one-1', { parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false });
const state = (approvals: Approval[]) => appState([ONE, ONE_1], 'connected', { approvals });

let view: Mounted;
afterEach(() => {
  view.unmount();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

class FakeNotification {
  static permission: NotificationPermission = 'granted';
  static requestPermission = vi.fn(async () => 'granted' as NotificationPermission);
  static shown: FakeNotification[] = [];
  onclick: (() => void) | null = null;
  closed = false;
  constructor(
    readonly title: string,
    readonly options: NotificationOptions,
  ) {
    FakeNotification.shown.push(this);
  }
  close() {
    this.closed = true;
  }
}

function Alerts() {
  useRequestNotifications();
  return null;
}

describe('notifications of requests', () => {
  let focused: boolean;
  beforeEach(() => {
    FakeNotification.shown = [];
    FakeNotification.permission = 'granted';
    FakeNotification.requestPermission.mockClear();
    vi.stubGlobal('Notification', FakeNotification);
    focused = false;
    vi.spyOn(document, 'hasFocus').mockImplementation(() => focused);
  });

  it('announces a request that arrives while the app is in the background, not those there when it opened', () => {
    view = mount(<Alerts />, state([approval('q00000001', PROMOTE)]), apiWith({}).api);
    expect(FakeNotification.shown).toEqual([]);
    view.apply(state([approval('q00000001', PROMOTE), approval('q00000002', DISCARD), approval('q00000003', CONNECTION)]));
    expect(FakeNotification.shown.map((n) => [n.title, n.options.body, n.options.tag])).toEqual([
      ['Grove: agent alice asks to discard: one-1', 'the tests pass on this branch', 'q00000002'],
      ['Grove: one-1 wants to reach outside.test:8080', 'outside.test is not on the allow list', 'q00000003'],
    ]);
    // The same requests again are no news.
    view.apply(state([approval('q00000001', PROMOTE), approval('q00000002', DISCARD), approval('q00000003', CONNECTION)]));
    expect(FakeNotification.shown).toHaveLength(2);
  });

  it('brings the app forward on the Requests view when clicked', () => {
    view = mount(<Alerts />, state([]), apiWith({}).api);
    const focus = vi.spyOn(window, 'focus').mockImplementation(() => undefined);
    view.apply(state([approval('q00000002', DISCARD)]));
    act(() => FakeNotification.shown[0]!.onclick!());
    expect(focus).toHaveBeenCalled();
    expect(view.store.getState().view).toBe('approvals');
    expect(FakeNotification.shown[0]!.closed).toBe(true);
  });

  it('stays quiet while the app is in front, or when notifications are not allowed', () => {
    view = mount(<Alerts />, state([]), apiWith({}).api);
    focused = true;
    view.apply(state([approval('q00000002', DISCARD)]));
    focused = false;
    FakeNotification.permission = 'denied';
    view.apply(state([approval('q00000002', DISCARD), approval('q00000004', PROMOTE)]));
    expect(FakeNotification.shown).toEqual([]);
  });

  it("asks for permission at the person's first gesture, once", () => {
    FakeNotification.permission = 'default';
    view = mount(<Alerts />, state([]), apiWith({}).api);
    expect(FakeNotification.requestPermission).not.toHaveBeenCalled();
    window.dispatchEvent(new Event('pointerdown'));
    window.dispatchEvent(new Event('keydown'));
    expect(FakeNotification.requestPermission).toHaveBeenCalledTimes(1);
  });
});

describe('A and D on a focused request', () => {
  function open(approvals: Approval[]) {
    const fake = apiWith({
      'approval.approve': (p) =>
        decided(
          approvals.find((a) => a.id === p.id)!,
          APP,
          true,
        ),
      'approval.deny': (p) =>
        decided(
          approvals.find((a) => a.id === p.id)!,
          APP,
          false,
        ),
      'branch.timeline': () => ({ workspace: 'aaaaaaa2', entries: [], shots: [], droppedEntries: 0 }),
    });
    act(() => {
      view = mount(<ApprovalsView />, state(approvals), fake.api);
    });
    return fake.calls;
  }
  const card = (id: string) => view.host.querySelector<HTMLElement>(`[data-testid="approval"][data-request="${id}"]`)!;
  const press = (el: HTMLElement, key: string) => act(async () => void el.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true })));
  const decisions = (calls: [string, unknown][]) => calls.filter(([m]) => m.startsWith('approval.'));

  it('approves the focused request with A (with the note typed) and denies with D, and says what each did', async () => {
    const calls = open([approval('q00000001', PROMOTE), approval('q00000002', DISCARD)]);
    expect(card('q00000001').getAttribute('aria-keyshortcuts')).toBe('A D');
    expect(card('q00000001').querySelector('[data-testid="approval-keyed"]')!.textContent).toBe('With this request focused: A approves, D denies');
    typeInto(card('q00000001').querySelector<HTMLInputElement>('input[aria-label="note (optional)"]')!, 'ship it');
    await press(card('q00000001'), 'a');
    await press(card('q00000002'), 'D');
    expect(decisions(calls)).toEqual([
      ['approval.approve', { id: 'q00000001', note: 'ship it' }],
      ['approval.deny', { id: 'q00000002' }],
    ]);
    expect(card('q00000001').querySelector('[data-testid="approval-keyed"]')!.textContent).toBe(
      'You pressed A: approve Promote one-1 to the main line with your note…',
    );
    expect(card('q00000002').querySelector('[data-testid="approval-keyed"]')!.textContent).toBe('You pressed D: deny Discard one-1…');
  });

  it('ignores the keys while the note is typed, with a modifier, and on a request no longer waiting', async () => {
    const running = { ...decided(approval('q00000003', PROMOTE), APP, true), state: 'running' as const };
    const calls = open([approval('q00000001', CONNECTION), running]);
    const noteField = card('q00000001').querySelector<HTMLInputElement>('input[aria-label="note (optional)"]')!;
    await press(noteField, 'a');
    await act(async () => void card('q00000001').dispatchEvent(new KeyboardEvent('keydown', { key: 'a', ctrlKey: true, bubbles: true })));
    await press(card('q00000003'), 'a');
    expect(decisions(calls)).toEqual([]);
    // A held connection: A lets this one request pass.
    expect(card('q00000001').querySelector('[data-testid="approval-keyed"]')!.textContent).toBe('With this request focused: A approves once, D denies');
    await press(card('q00000001'), 'a');
    expect(decisions(calls)).toEqual([['approval.approve', { id: 'q00000001' }]]);
  });
});
