// @vitest-environment happy-dom
// The race view: which branches race, each tile's agent actions, files
// changed since the fork (without the files that only name the branch),
// memory and waiting requests, and "Pick winner" as one branch.pick.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentAction, PerfReport, TreeDiff } from '../../main/src/api/contract.js';
import { ALICE, PROMOTE, approval, branch } from '../../main/test/unit/app-fixtures.js';
import { ConfirmDialog } from '../src/components/App.js';
import { RaceView } from '../src/components/Race.js';
import { racersOf } from '../src/store/race.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { button, mount, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const child = (n: number) => branch(`aaaaaab${n}`, `one-${n}`, { parent: ONE.id, tree: ONE.id, main: false, createdAt: `2026-01-01T00:0${n}:00.000Z` });
const [C1, C2, C3] = [child(1), child(2), child(3)];
const GRANDCHILD = branch('aaaaaac1', 'one-1-1', { parent: C1.id, tree: ONE.id, main: false });
const TWO = branch('bbbbbbb1', 'two');
const typing: AgentAction = {
  by: { role: 'agent', uid: ALICE.uid, user: ALICE.user },
  action: 'type',
  doing: 'typing',
  summary: 'type 21 characters',
  cursor: null,
  screen: null,
  ok: true,
  at: new Date().toISOString(),
};
const DIFF: TreeDiff = {
  added: ['/root/note.txt'],
  changed: ['/etc/hostname', '/etc/hosts', '/etc/machine-id', '/root/.config/chromium/Local State'],
  removed: [],
  textDiffs: [],
  truncated: false,
};
const PERF = { forks: [], branches: [{ workspace: C2.id, pssBytes: 181 * 2 ** 20, processes: 40 }], host: {}, pool: {} } as unknown as PerfReport;

let view: Mounted | null = null;
afterEach(() => {
  view?.unmount();
  view = null;
});

function open() {
  const fake = apiWith({
    'branch.diff': () => DIFF,
    'perf.get': () => PERF,
    'branch.pick': () => ({ main: { ...C2, main: true }, discarded: [C1.id, C3.id], kept: [], oldMainVersion: 'c0000001' }),
    'approval.deny': (p) => ({ ...approval(p.id as string, PROMOTE), state: 'denied' }),
  });
  const state = appState([ONE, C1, C2, C3, GRANDCHILD, TWO], 'connected', {
    agents: { [C2.id]: [{ ...typing, doing: 'clicking', summary: 'click left at 10,20' }, typing] },
    approvals: [approval('q00000001', PROMOTE, { workspace: C3.id, workspaceName: C3.name })],
  });
  const mounted = mount(
    <>
      <RaceView />
      <ConfirmDialog />
    </>,
    state,
    fake.api,
  );
  view = mounted;
  act(() => mounted.store.getState().select(ONE.id));
  return fake.calls;
}
const tile = (name: string) => view!.host.querySelector(`[data-testid="race-${name}"]`)!;
const settle = () => act(async () => await new Promise((r) => setTimeout(r, 0)));

describe('which branches race', () => {
  const all = [ONE, C1, C2, C3, GRANDCHILD, TWO];
  it("is a branch's children, a branch and its siblings, or siblings selected; never a mix", () => {
    expect(racersOf(all, [ONE.id], ONE.id).map((b) => b.name)).toEqual(['one-1', 'one-2', 'one-3']);
    expect(racersOf(all, [C2.id], C2.id).map((b) => b.name)).toEqual(['one-1', 'one-2', 'one-3']);
    expect(racersOf(all, [C1.id, C3.id], C3.id).map((b) => b.name)).toEqual(['one-1', 'one-3']);
    // Not siblings: the focused branch's family instead.
    expect(racersOf(all, [C1.id, GRANDCHILD.id], GRANDCHILD.id)).toEqual([]);
    expect(racersOf(all, [TWO.id], TWO.id)).toEqual([]);
  });
});

describe('the race view', () => {
  it('shows a tile per sibling with its agent, its work since the fork, its memory and what waits', async () => {
    open();
    await settle();
    expect([...view!.host.querySelectorAll('.race-tile')].map((t) => t.getAttribute('aria-label'))).toEqual(['one-1', 'one-2', 'one-3']);
    // Newest first: what it does now, then what it did.
    expect([...tile('one-2').querySelectorAll('[data-testid="race-actions"] li')].map((li) => li.textContent)).toEqual([
      'alice · typing',
      'alice · click left at 10,20',
    ]);
    // The fork's own identity files are no one's work.
    const files = tile('one-2').querySelector('[data-testid="race-files"]')!;
    expect(files.textContent).toContain('2 files changed since the fork');
    expect([...files.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['A /root/note.txt', 'M /root/.config/chromium/Local State']);
    expect(tile('one-2').querySelector('[data-testid="race-memory"]')!.textContent).toBe('181 MiB memory');
    expect(tile('one-1').querySelector('[data-testid="race-request"]')).toBeNull();
    expect(tile('one-3').querySelector('[data-testid="race-request"]')!.getAttribute('data-request')).toBe('q00000001');
  });

  it('decides a waiting request in place', async () => {
    const calls = open();
    await settle();
    await act(async () => button(tile('one-3'), 'Deny').click());
    expect(calls.filter(([m]) => m === 'approval.deny')).toEqual([['approval.deny', { id: 'q00000001' }]]);
  });

  it('picks the winner as one branch.pick, asking what becomes of the rivals and the old main line', async () => {
    const calls = open();
    await settle();
    act(() => button(tile('one-2'), 'Pick winner').click());
    const dialog = view!.host.querySelector('[role="dialog"]')!;
    expect(dialog.textContent).toContain('Pick one-2 as the winner?');
    expect(dialog.textContent).toContain('What becomes of one-1, one-3?');
    expect(dialog.textContent).toContain('What becomes of one, the main line now?');
    act(() => dialog.querySelector<HTMLInputElement>('input[name="oldMain"][value="keep"]')!.click());
    await act(async () => button(dialog, 'Pick winner').click());
    expect(calls.filter(([m]) => m === 'branch.pick')).toEqual([
      ['branch.pick', { workspace: C2.id, others: [C1.id, C3.id], losers: 'discard', oldMain: 'keep' }],
    ]);
    // Then the winner is the one selected, on its desktop.
    expect(view!.store.getState().view).toBe('desktop');
    expect(view!.store.getState().selection).toEqual([C2.id]);
  });
});
