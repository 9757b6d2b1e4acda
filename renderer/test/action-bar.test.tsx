// @vitest-environment happy-dom
// The action bar: a version picked is the selected branch's and no other's,
// versions read by name, a promotion asks what becomes of the old main line,
// and several selected branches are acted on together.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { Version } from '../../main/src/api/contract.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { ActionBar } from '../src/components/ActionBar.js';
import { ConfirmDialog } from '../src/components/App.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { button, choose, mount, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const ONE_1 = branch('aaaaaaa2', 'one-1', { parent: ONE.id, tree: ONE.id, main: false, createdAt: '2026-01-01T00:01:00.000Z' });
const ONE_2 = branch('aaaaaaa3', 'one-2', { parent: ONE.id, tree: ONE.id, main: false, createdAt: '2026-01-01T00:02:00.000Z' });
const ONE_2_1 = branch('aaaaaaa4', 'one-2-1', { parent: ONE_2.id, tree: ONE.id, main: false, createdAt: '2026-01-01T00:03:00.000Z' });
const TWO = branch('bbbbbbb1', 'two', { createdAt: '2026-01-02T00:00:00.000Z' });
const version = (id: string, of: string, label: string | null): Version => ({
  id,
  branch: of,
  tree: ONE.id,
  label,
  createdAt: '2026-01-01T00:05:00.000Z',
  saved: true,
});
const STATE = appState([ONE, ONE_1, ONE_2, ONE_2_1, TWO], 'connected', {
  versions: [version('c0000001', ONE_1.id, 'before refactor'), version('c0000002', ONE.id, null)],
});

let view: Mounted;
afterEach(() => view.unmount());

function open() {
  const fake = apiWith({
    'branch.rollback': () => ONE_1,
    'branch.promote': () => ONE_1,
    'branch.discard': (p) => ({ deleted: p.workspace }),
    'workspace.stop': () => ONE_1,
  });
  view = mount(
    <>
      <ActionBar />
      <ConfirmDialog />
    </>,
    STATE,
    fake.api,
  );
  return fake.calls;
}
const picker = () => view.host.querySelector<HTMLSelectElement>('select[aria-label="version"]')!;
const select = (id: string, mode?: 'toggle') => act(() => view.store.getState().select(id, mode));
const dialog = () => view.host.querySelector('[role="dialog"]');

describe('the version picker', () => {
  it("is the selected branch's: a version picked for one is gone when another is selected", () => {
    open();
    select(ONE_1.id);
    // Versions by name, the branch's own first: never a bare hex id.
    expect([...picker().options].map((o) => o.textContent)).toEqual([
      'version…',
      expect.stringMatching(/^before refactor · one-1 /),
      expect.stringMatching(/^one \d/),
    ]);
    choose(picker(), 'c0000001');
    expect(button(view.host, 'Roll back').disabled).toBe(false);
    select(TWO.id);
    expect(picker().value).toBe('');
    expect(picker().options[0]!.textContent).toBe('no versions yet');
    expect(button(view.host, 'Roll back').disabled).toBe(true);
    select(ONE_1.id);
    expect(picker().value).toBe('');
    expect(button(view.host, 'Roll back').disabled).toBe(true);
  });

  it('names the version in the roll back dialog and rolls back to it', async () => {
    const calls = open();
    select(ONE_1.id);
    choose(picker(), 'c0000001');
    act(() => button(view.host, 'Roll back').click());
    expect(dialog()!.textContent).toContain('Its processes and files return to before refactor · one-1');
    await act(async () => button(dialog()!, 'Roll back').click());
    expect(calls).toEqual([['branch.rollback', { workspace: ONE_1.id, version: 'c0000001' }]]);
  });
});

describe('promote', () => {
  it('asks what becomes of the old main line, with the CLI choices', async () => {
    const calls = open();
    select(ONE_1.id);
    act(() => button(view.host, 'Promote').click());
    expect(dialog()!.textContent).toContain('What becomes of one, the main line now?');
    const radios = [...dialog()!.querySelectorAll<HTMLInputElement>('input[type="radio"]')];
    expect(radios.map((r) => r.value)).toEqual(['version', 'keep', 'discard']);
    expect(radios[0]!.checked).toBe(true);
    act(() => radios[1]!.click());
    await act(async () => button(dialog()!, 'Promote').click());
    expect(calls).toEqual([['branch.promote', { workspace: ONE_1.id, oldMain: 'keep' }]]);
  });
});

describe('several selected', () => {
  it('shows the count and discards every one, children before their parents', async () => {
    const calls = open();
    select(ONE_2.id);
    select(ONE_1.id, 'toggle');
    select(ONE_2_1.id, 'toggle');
    expect(view.host.querySelector('[data-testid="selection-count"]')!.textContent).toContain('3 branches selected');
    expect(view.host.querySelector('.selection-names')!.textContent).toBe('one-1, one-2, one-2-1');
    act(() => button(view.host, 'Discard 3').click());
    expect(dialog()!.textContent).toContain('Discard 3 branches?');
    expect(dialog()!.textContent).toContain('one-1, one-2, one-2-1: the branches');
    await act(async () => button(dialog()!, 'Discard 3').click());
    expect(calls.map(([m]) => m)).toEqual(['branch.discard', 'branch.discard', 'branch.discard']);
    const order = calls.map(([, p]) => (p as { workspace: string }).workspace);
    expect(new Set(order)).toEqual(new Set([ONE_1.id, ONE_2.id, ONE_2_1.id]));
    expect(order.indexOf(ONE_2_1.id)).toBeLessThan(order.indexOf(ONE_2.id));
  });

  it('stops only those that run', async () => {
    const calls = open();
    view.apply(appState([ONE, ONE_1, { ...ONE_2, state: 'stopped' }, TWO], 'connected'));
    select(ONE_1.id);
    select(ONE_2.id, 'toggle');
    act(() => button(view.host, 'Stop 1').click());
    expect(dialog()!.textContent).toContain('one-1: their processes end');
    await act(async () => button(dialog()!, 'Stop 1').click());
    expect(calls).toEqual([['workspace.stop', { workspace: ONE_1.id }]]);
  });
});
