// @vitest-environment happy-dom
// Take home and Merge into… as a person uses them: the target remembered per
// workspace, the commit reviewed as a patch before Export, bad input refused
// in words without a call; the merge's dry run in its three lists, a
// conflicting file side by side, the pick sent as the settlement; an agent's
// export request showing the commit, the repository and the branch.
import { act } from 'react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MergeResult, Workspace } from '../../main/src/api/contract.js';
import { approval, branch } from '../../main/test/unit/app-fixtures.js';
import { ApiError } from '../src/api/client.js';
import { ActionBar } from '../src/components/ActionBar.js';
import { ApprovalsView } from '../src/components/Approvals.js';
import { MergePanel } from '../src/components/MergePanel.js';
import { TakeHomePanel } from '../src/components/TakeHome.js';
import { initialTarget, rememberTarget, targetProblem } from '../src/store/take-home.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { button, mount, typeInto, type Mounted } from './mount.js';

const PROJECT = { hostPath: '/home/me/app', path: '/root/work', commit: '1234567890ab'.padEnd(40, '0'), gitBranch: 'main', copiedAt: '2026-01-01T00:00:00Z' };
const MAIN = branch('aaaaaaa1', 'main', { project: PROJECT });
const ONE = branch('aaaaaaa2', 'one', { parent: MAIN.id, tree: MAIN.id, main: false, project: PROJECT });
const TWO = branch('aaaaaaa3', 'two', { parent: MAIN.id, tree: MAIN.id, main: false, project: PROJECT });
const PATCH = [
  'From 5678 Mon Sep 17 00:00:00 2001',
  'Subject: [PATCH] Work of Grove branch one',
  'diff --git a/src/app.py b/src/app.py',
  '--- a/src/app.py',
  '+++ b/src/app.py',
  '@@ -1 +1 @@',
  '-print("old")',
  '+print("<b>new</b>")',
  '',
].join('\n');
const EXPORTED = { commit: 'c0ffee'.padEnd(40, '1'), parent: PROJECT.commit, files: 1, branch: 'grove/one', patch: null };

let view: Mounted;
beforeEach(() => localStorage.clear());
afterEach(() => view.unmount());

const q = (sel: string) => view.host.querySelector(sel);
const input = (label: string) => q(`[aria-label="${label}"]`) as HTMLInputElement;

describe('take home', () => {
  function open(b: Workspace, answers: Parameters<typeof apiWith>[0] = {}) {
    const fake = apiWith({
      'branch.exportReview': () => ({ patch: PATCH, cut: false, files: 1, parent: PROJECT.commit }),
      'branch.export': () => EXPORTED,
      ...answers,
    });
    view = mount(<TakeHomePanel branch={b} />, appState([MAIN, ONE, TWO]), fake.api);
    return fake.calls;
  }

  it('starts from the project it was copied from, reviews the commit, exports it and remembers where for the workspace', async () => {
    const calls = open(ONE);
    expect(input('repository').value).toBe('/home/me/app');
    expect(input('new branch').value).toBe('grove/one');
    expect(button(view.host, 'Export').disabled).toBe(true);
    await act(async () => button(view.host, 'Review the commit').click());
    expect([...view.host.querySelectorAll('.patch-files li')].map((l) => l.textContent)).toEqual(['src/app.py']);
    // The branch's text is text, never markup.
    expect(q('.patch-text .plus')!.textContent).toBe('+print("<b>new</b>")');
    expect(q('.patch-text b')).toBeNull();
    typeInto(input('repository'), '/home/me/clone');
    typeInto(q('[aria-label="commit message"]') as HTMLTextAreaElement, 'Fix the greeting');
    await act(async () => button(view.host, 'Export').click());
    expect(calls).toEqual([
      ['branch.exportReview', { workspace: ONE.id }],
      ['branch.export', { workspace: ONE.id, repo: '/home/me/clone', branch: 'grove/one', message: 'Fix the greeting' }],
    ]);
    expect(q('[data-testid="take-home-done"]')!.textContent).toContain('is on branch grove/one of /home/me/clone');
    // Another branch of the workspace starts from there; another workspace does not.
    expect(initialTarget(localStorage, TWO)).toEqual({ repo: '/home/me/clone', branch: 'grove/one' });
    expect(initialTarget(localStorage, branch('bbbbbbb1', 'other'))).toEqual({ repo: '', branch: 'grove/other' });
  });

  it('refuses a target that is not one before asking, and shows the helper refusing an existing branch in its words', async () => {
    const calls = open(ONE, {
      'branch.export': () => {
        throw new ApiError('E_CONFLICT', "/home/me/app has a branch 'grove/one' already: choose another name, or --force to replace it");
      },
    });
    await act(async () => button(view.host, 'Review the commit').click());
    typeInto(input('repository'), 'app');
    expect(button(view.host, 'Export').disabled).toBe(true);
    expect(view.host.textContent).toContain("The repository is named by its full path on this machine, starting with / (not 'app').");
    typeInto(input('repository'), '/home/me/app');
    await act(async () => button(view.host, 'Export').click());
    expect(q('[data-testid="take-home-error"]')!.textContent).toBe(
      "Could not export one: /home/me/app has a branch 'grove/one' already: choose another name, or --force to replace it",
    );
    expect(calls.map(([m]) => m)).toEqual(['branch.exportReview', 'branch.export']);
    expect(localStorage.getItem('grove.takeHome')).toBeNull();
  });

  it('says why a branch has nothing to take home', () => {
    open(branch('bbbbbbb1', 'bare'));
    expect(view.host.textContent).toContain('bare has nothing to take home');
    expect(view.host.textContent).toContain('made without a project folder');
  });

  it('checks names before the helper does', () => {
    expect(targetProblem({ repo: '', branch: 'x' })).toMatch(/Name the repository/);
    expect(targetProblem({ repo: '/r', branch: 'two words' })).toMatch(/no spaces/);
    expect(targetProblem({ repo: '/r', branch: 'fine' })).toBeNull();
    rememberTarget(localStorage, MAIN.tree, { repo: '/r', branch: 'b' });
    localStorage.setItem('grove.takeHome', '{"aaaaaaa1": 7}');
    expect(initialTarget(localStorage, ONE)).toEqual({ repo: '/home/me/app', branch: 'grove/one' });
  });
});

describe('merge into', () => {
  const hunks = 'one\n<<<<<<< main\ntwo by main\n||||||| fork point\ntwo\n=======\ntwo by two\n>>>>>>> two\nthree\n';
  const side = { kind: 'file' as const, bytes: 10, sha256: 'ab'.repeat(32), detail: null };
  const dry: MergeResult = {
    target: MAIN.id,
    sources: [
      { id: ONE.id, name: 'one', base: 'p' },
      { id: TWO.id, name: 'two', base: 'p' },
    ],
    scope: '/root/work',
    dryRun: true,
    merged: false,
    version: null,
    changes: [
      { path: '/root/work/a.txt', source: 'one', action: 'write', how: 'source' },
      { path: '/root/work/m.txt', source: 'two', action: 'write', how: 'merged' },
    ],
    conflicts: [
      { path: '/root/work/shared.txt', source: 'two', kind: 'text', target: side, sourceSide: side, hunks },
      { path: '/root/work/logo.png', source: 'two', kind: 'binary', target: side, sourceSide: { ...side, bytes: 12 }, hunks: null },
    ],
    ms: 30,
  };

  it('checks the picked sources, shows the lists and a conflict side by side, and merges with the picks', async () => {
    const fake = apiWith({ 'branch.merge': (p) => (p.dryRun ? dry : { ...dry, dryRun: false, merged: true, version: 'c0000001', conflicts: [] }) });
    view = mount(<MergePanel target={MAIN} />, appState([MAIN, ONE, TWO, branch('bbbbbbb1', 'other')]), fake.api);
    const boxes = [...view.host.querySelectorAll<HTMLInputElement>('.merge-sources input')];
    expect(boxes.map((b) => b.parentElement!.textContent)).toEqual([expect.stringContaining('one'), expect.stringContaining('two')]);
    act(() => boxes[0]!.click());
    act(() => boxes[1]!.click());
    await act(async () => button(view.host, 'Check the merge (dry run)').click());
    expect(q('[data-testid="merge-clean"]')!.textContent).toContain('/root/work/a.txt');
    expect(q('[data-testid="merge-merged"]')!.textContent).toContain('/root/work/m.txt');
    expect(button(view.host, 'Merge into main').disabled).toBe(true);

    const row = q('[data-testid="conflict-/root/work/shared.txt"]')!;
    act(() => (row.querySelector('button[aria-expanded]') as HTMLButtonElement).click());
    const hunk = row.querySelector('[data-testid="hunk"]')!;
    expect([...hunk.children].map((c) => c.textContent)).toEqual(['two', 'two by main', 'two by two']);
    expect(row.querySelector('.sides-head')!.textContent).toBe('fork pointmaintwo');
    const binary = q('[data-testid="conflict-/root/work/logo.png"]')!;
    act(() => (binary.querySelector('button[aria-expanded]') as HTMLButtonElement).click());
    expect(binary.textContent).toContain('12 bytes, sha256 abababababab');

    act(() => (row.querySelectorAll('input[type="radio"]')[1] as HTMLInputElement).click());
    act(() => (binary.querySelectorAll('input[type="radio"]')[0] as HTMLInputElement).click());
    await act(async () => button(view.host, 'Merge into main').click());
    expect(fake.calls.at(-1)).toEqual([
      'branch.merge',
      {
        workspace: MAIN.id,
        sources: [ONE.id, TWO.id],
        take: [
          { path: '/root/work/shared.txt', side: TWO.id },
          { path: '/root/work/logo.png', side: 'target' },
        ],
      },
    ]);
    expect(q('[data-testid="merge-done"]')!.textContent).toContain('Before the merge it is version c0000001');
  });

  it('opens from the action bar on a running branch', () => {
    view = mount(<ActionBar />, appState([MAIN, ONE, { ...TWO, state: 'stopped' }]), apiWith({}).api);
    act(() => view.store.getState().select(MAIN.id));
    act(() => button(view.host, 'Merge into…').click());
    expect(view.store.getState().view).toBe('merge');
    act(() => button(view.host, 'Take home').click());
    expect(view.store.getState().view).toBe('takehome');
    act(() => view.store.getState().select(TWO.id));
    expect(button(view.host, 'Take home').disabled).toBe(true);
  });
});

describe("an agent's export request", () => {
  it('shows the commit as a patch, with the repository and the branch', () => {
    const a = approval('q00000007', { kind: 'branch.export', repo: '/home/me/app', branch: 'grove/one' });
    const asked = { ...a, preview: { ...a.preview, export: { repo: '/home/me/app', branch: 'grove/one', patch: PATCH } } };
    view = mount(<ApprovalsView />, appState([MAIN, ONE], 'connected', { approvals: [asked] }), apiWith({}).api);
    const preview = q('[data-testid="approval-export"]')!;
    expect(preview.textContent).toContain('The commit, as branch grove/one of /home/me/app:');
    expect([...preview.querySelectorAll('.patch-files li')].map((l) => l.textContent)).toEqual(['src/app.py']);
    expect(preview.querySelector('.patch-text .minus')!.textContent).toBe('-print("old")');
  });
});
