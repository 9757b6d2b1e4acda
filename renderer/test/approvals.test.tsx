// @vitest-environment happy-dom
// The Requests view: each kind of request with what approving does, who asked
// and why, and its preview; decisions sent as the right requests; what was
// decided lately and by whom; standing approvals switched per workspace.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { Approval } from '../../main/src/api/contract.js';
import { APP, BOB, CONNECTION, DISCARD, POLICY, PROMOTE, STOP, approval, branch, decided, grant } from '../../main/test/unit/app-fixtures.js';
import { ApprovalsView } from '../src/components/Approvals.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { button, mount, typeInto, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const ONE_1 = branch('aaaaaaa2', 'one-1', { parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false });
const TWO = branch('bbbbbbb1', 'two');
const state = (over = {}) => appState([ONE, ONE_1, TWO], 'connected', over);

let view: Mounted;
afterEach(() => view.unmount());

function open(approvals: Approval[], over = {}) {
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
    'grant.set': (p) => grant('g00000009', p.kind as 'workspace.stop'),
    'grant.revoke': () => grant('g00000001', 'branch.promote'),
  });
  view = mount(<ApprovalsView />, state({ approvals, ...over }), fake.api);
  return fake.calls;
}

const card = (id: string) => view.host.querySelector<HTMLElement>(`[data-testid="approval"][data-request="${id}"]`)!;
const part = (id: string, testid: string) => card(id).querySelector<HTMLElement>(`[data-testid="${testid}"]`);

describe('the queue', () => {
  it('shows a promote with the branch’s screen and its files against the main line', () => {
    open([approval('q00000001', PROMOTE)]);
    const c = card('q00000001');
    expect([c.dataset.kind, c.dataset.state]).toEqual(['branch.promote', 'pending']);
    expect(c.querySelector('.approval-head')!.textContent).toBe('Promote one-1 to the main line');
    expect(c.textContent).toContain('Asked by agent alice (uid 1001) the tests pass on this branch');
    expect(c.querySelector('.approval-effect')!.textContent).toBe(
      'If you approve: one-1 becomes the main line and takes over its host ports; one is kept as a version',
    );
    expect(part('q00000001', 'approval-thumbnail')!.getAttribute('src')).toBe('data:image/png;base64,iVBORw0KGgo=');
    expect(part('q00000001', 'approval-thumbnail')!.getAttribute('alt')).toBe("one-1's screen when the request was made");
    const diff = part('q00000001', 'approval-diff')!;
    expect(diff.textContent).toContain('Files it changed against the main line, one: 2 added, 1 changed, 1 removed');
    expect([...diff.querySelectorAll('li')].map((li) => [li.className, li.textContent])).toEqual([
      ['added', '+/root/app/new.py'],
      ['added', '+/root/app/b.py'],
      ['changed', '~/root/app/main.py'],
      ['removed', '-/root/app/old.py'],
    ]);
    expect(part('q00000001', 'approval-loss')).toBeNull();
    expect(c.querySelector('.approval-time-value')!.textContent).toMatch(/^[01]:\d\d$/);
    expect([...c.querySelectorAll('button')].map((b) => b.textContent)).toEqual(['Approve', 'Deny']);
  });

  it('shows what a discard or a stop would lose, a change of outside access, and a held connection as before', () => {
    const notes = { ...approval('q00000003', STOP).preview, notes: ['no screenshot: the desktop did not answer'], thumbnail: null };
    open([approval('q00000002', DISCARD), approval('q00000003', STOP, { preview: notes }), approval('q00000004', POLICY), approval('q00000005', CONNECTION)]);
    const loss = part('q00000002', 'approval-loss')!;
    expect(loss.textContent).toContain('Lost if you approve');
    expect(loss.textContent).toContain('17 processes end: chromium, xterm, Xvnc');
    expect(loss.querySelector('[data-testid="approval-diff"]')!.textContent).toContain(
      'Its files, changed since the fork from one: 2 added, 1 changed, 1 removed',
    );
    expect(loss.textContent).toContain('2 versions of it are kept');
    expect(card('q00000002').querySelector('.approval-head')!.textContent).toBe('Discard one-1');

    const stop = part('q00000003', 'approval-loss')!;
    expect(stop.textContent).toContain('Ends if you approve17 processes end');
    expect(stop.textContent).toContain('Its files are kept; it can be started again');
    expect(part('q00000003', 'approval-diff')).toBeNull();
    expect(part('q00000003', 'approval-thumbnail')).toBeNull();
    expect(card('q00000003').querySelector('.preview-notes')!.textContent).toBe('no screenshot: the desktop did not answer');

    expect(card('q00000004').querySelector('.approval-head')!.textContent).toBe('Change the outside access of one-1');
    expect(part('q00000004', 'approval-change')!.textContent).toBe('ModeAllow list onlyAllowpypi.org:443');

    const held = card('q00000005');
    expect(held.dataset.host).toBe('outside.test');
    expect(held.querySelector('.approval-head')!.textContent).toBe('one-1wants to reachoutside.test:8080');
    expect(held.querySelector('.approval-what')!.textContent).toBe('GET http://outside.test:8080/x');
    expect(held.textContent).toContain("Held by Grove's gate: outside.test is not on the allow list");
    expect([...held.querySelectorAll('button')].map((b) => b.textContent)).toEqual(['Approve once', 'Always allow', 'Deny']);
    expect(view.host.querySelector('#queue-title')!.textContent).toBe('4 requests wait for your decision');
  });

  it('shows what an address literal reaches, whatever form the branch wrote it in', () => {
    const hidden = {
      ...CONNECTION,
      host: '::ffff:c000:207',
      url: 'http://[::ffff:c000:207]:8080/x',
      address: { reached: '192.0.2.7', what: 'a documentation address (reaches nothing real)' },
    };
    open([approval('q00000006', hidden), approval('q00000005', CONNECTION)]);
    expect(card('q00000006').querySelector('.approval-address')!.textContent).toBe('192.0.2.7, a documentation address (reaches nothing real)');
    expect(card('q00000005').querySelector('.approval-address')).toBeNull();
  });

  it('sends each decision as the right request, with the note, and holds the buttons until the state moves on', async () => {
    const promote = approval('q00000001', PROMOTE);
    const calls = open([promote, approval('q00000002', DISCARD), approval('q00000005', CONNECTION)]);
    typeInto(card('q00000001').querySelector<HTMLInputElement>('input[aria-label="note (optional)"]')!, 'ship it');
    await act(async () => button(card('q00000001'), 'Approve').click());
    await act(async () => button(card('q00000002'), 'Deny').click());
    await act(async () => button(card('q00000005'), 'Always allow').click());
    expect(calls.filter(([method]) => method.startsWith('approval.'))).toEqual([
      ['approval.approve', { id: 'q00000001', note: 'ship it' }],
      ['approval.deny', { id: 'q00000002' }],
      ['approval.approve', { id: 'q00000005', always: true }],
    ]);
    expect(button(card('q00000001'), 'Approve').disabled).toBe(true);
    // Approved: it is carried out, and says so instead of asking.
    view.apply(state({ approvals: [{ ...decided(promote, APP, true), state: 'running' }] }));
    expect(card('q00000001').dataset.state).toBe('running');
    expect(card('q00000001').querySelector('[role="status"]')!.textContent).toBe('Approved · being carried out…');
    expect(card('q00000001').querySelectorAll('button')).toHaveLength(0);
    expect(view.host.querySelector('#queue-title')!.textContent).toBe('Nothing waits for your decision');
  });

  it('lists what was decided lately: by whom, how it went, with the same hooks', () => {
    const self = { ...decided(approval('q00000001', PROMOTE), APP, false, 'not yet'), outcome: 'denied by person root (uid 0): not yet' };
    const other = { ...decided(approval('q00000002', DISCARD), BOB, true), state: 'done' as const, outcome: 'one-1 was discarded' };
    const expired = { ...approval('q00000003', CONNECTION), state: 'expired' as const };
    open([], { decided: [self, other, expired] });
    const rows = [...view.host.querySelectorAll<HTMLElement>('[data-testid="approvals-decided"] [data-testid="approval"]')];
    expect(rows.map((r) => [r.dataset.request, r.dataset.kind, r.dataset.state])).toEqual([
      ['q00000001', 'branch.promote', 'denied'],
      ['q00000002', 'branch.discard', 'done'],
      ['q00000003', 'egress.connection', 'expired'],
    ]);
    expect(rows[0]!.textContent).toContain('deniedPromote one-1 to the main lineasked by agent alice · denied by you · “not yet”');
    // The helper's outcome of a denial repeats the verdict: only what was carried out tells its outcome.
    expect(rows[0]!.querySelector('.decided-outcome')).toBeNull();
    expect(rows[1]!.textContent).toContain('approved by person bob');
    expect(rows[1]!.querySelector('.decided-outcome')!.textContent).toBe('one-1 was discarded');
    expect(rows[2]!.textContent).toContain('one-1 → outside.test:8080nobody decided in time');
    expect(view.host.querySelector('[data-testid="approvals"]')!.textContent).toContain('Agents ask here before they promote');
  });
});

describe('when a decided request ended', () => {
  it('is when it closed, never its deadline still ahead', () => {
    const ended = '2026-01-01T10:00:00.000Z';
    const ahead = new Date(Date.now() + 3_600_000).toISOString();
    const withdrawn = { ...approval('q00000001', PROMOTE), state: 'withdrawn' as const, expiresAt: ahead, closedAt: ended };
    const done = { ...decided(approval('q00000002', DISCARD), BOB, true), state: 'done' as const, expiresAt: ahead, closedAt: ended };
    const unknown = { ...approval('q00000003', STOP), state: 'abandoned' as const, expiresAt: ahead };
    open([], { decided: [withdrawn, done, unknown] });
    const times = [...view.host.querySelectorAll('[data-testid="approvals-decided"] [data-testid="approval"]')].map(
      (r) => r.querySelector('[data-testid="decided-at"]')?.getAttribute('datetime') ?? null,
    );
    expect(times).toEqual([ended, ended, null]);
  });
});

describe('standing approvals', () => {
  const box = (tree: string, kind: string) => view.host.querySelector<HTMLInputElement>(`[data-testid="grants-${tree}"] input[data-kind="${kind}"]`)!;

  it('shows one row of switches per workspace, and each switch asks the helper', async () => {
    const sent = open([], { grants: [grant('g00000001', 'branch.promote')] });
    const grantCalls = () => sent.filter(([method]) => method.startsWith('grant.'));
    expect([...view.host.querySelectorAll('[data-testid="grants"] tbody th')].map((th) => th.textContent)).toEqual(['one', 'two']);
    expect(box('one', 'branch.promote').checked).toBe(true);
    expect(box('one', 'branch.promote').getAttribute('aria-label')).toBe('one: agents may make a branch the main line without asking');
    expect(box('one', 'workspace.stop').checked).toBe(false);
    expect(box('two', 'branch.promote').checked).toBe(false);
    await act(async () => box('one', 'workspace.stop').click());
    // Giving agents a power asks first, in words that say what it lets them do; nothing is sent before yes.
    expect(view.store.getState().confirm?.title).toBe('Let agents stop branches they did not fork themselves in one without asking?');
    expect(grantCalls()).toEqual([]);
    await act(async () => view.store.getState().answer(true));
    await act(async () => box('one', 'branch.promote').click());
    // The switch's words do not flip with it: ticked means "without asking".
    expect(box('one', 'branch.promote').parentElement!.textContent).toBe('without asking');
    expect(grantCalls()).toEqual([
      ['grant.set', { workspace: 'aaaaaaa1', kind: 'workspace.stop' }],
      ['grant.revoke', { grant: 'g00000001' }],
    ]);
    // Where they go, held until the helper's state says so.
    expect([box('one', 'workspace.stop').checked, box('one', 'workspace.stop').disabled]).toEqual([true, true]);
    expect([box('one', 'branch.promote').checked, box('one', 'branch.promote').disabled]).toEqual([false, true]);
    view.apply(state({ grants: [grant('g00000009', 'workspace.stop')] }));
    expect([box('one', 'workspace.stop').checked, box('one', 'workspace.stop').disabled]).toEqual([true, false]);
    expect([box('one', 'branch.promote').checked, box('one', 'branch.promote').disabled]).toEqual([false, false]);
  });
});
