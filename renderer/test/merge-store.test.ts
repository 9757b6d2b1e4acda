// The merge's pure parts and its store: a conflicting file's diff3 text taken
// apart (markers only with the merge's own labels), the context folded around
// conflicts, and the flow from the dry run to a merge with the picks as
// settlements — new conflicts and the helper's refusals in words.
import { describe, expect, it } from 'vitest';
import type { MergeConflict, MergeResult } from '../../main/src/api/contract.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { ApiError } from '../src/api/client.js';
import { contextOf, parseMarkedText } from '../src/store/conflict-text.js';
import { changesOf, conflictsByPath, createMergeStore, sourceCandidates, unsettled } from '../src/store/merge.js';
import { apiWith } from './fake-api.js';

const MAIN = branch('aaaaaaa1', 'main');
const ONE = branch('aaaaaaa2', 'one', { parent: MAIN.id, tree: MAIN.id, main: false });
const TWO = branch('aaaaaaa3', 'two', { parent: MAIN.id, tree: MAIN.id, main: false });
const OTHER = branch('bbbbbbb1', 'other');

const MARKED = 'one\n<<<<<<< main\ntwo by main\n||||||| fork point\ntwo\n=======\ntwo by two\n>>>>>>> two\nthree\n';

const side = { kind: 'file' as const, bytes: 10, sha256: 'ab'.repeat(32), detail: null };
const conflict = (path: string, source = 'two'): MergeConflict => ({ path, source, kind: 'text', target: side, sourceSide: side, hunks: MARKED });
const plan = (over: Partial<MergeResult> = {}): MergeResult => ({
  target: MAIN.id,
  sources: [
    { id: ONE.id, name: 'one', base: 'point-1' },
    { id: TWO.id, name: 'two', base: 'point-1' },
  ],
  scope: '/root/work',
  dryRun: true,
  merged: false,
  version: null,
  changes: [
    { path: '/root/work/a.txt', source: 'one', action: 'write', how: 'source' },
    { path: '/root/work/old.txt', source: 'one', action: 'delete', how: 'source' },
    { path: '/root/work/both.txt', source: 'two', action: 'write', how: 'merged' },
  ],
  conflicts: [conflict('/root/work/shared.txt')],
  ms: 40,
  ...over,
});

describe('a conflicting file, taken apart', () => {
  it("splits diff3 text into what all agree on and each hunk's fork point, target and source", () => {
    expect(parseMarkedText(MARKED, { target: 'main', source: 'two' })).toEqual({
      segments: [
        { kind: 'same', lines: ['one'] },
        { kind: 'conflict', target: ['two by main'], base: ['two'], source: ['two by two'] },
        { kind: 'same', lines: ['three'] },
      ],
      cut: false,
    });
  });

  it("keeps lines that look like markers but lack the merge's labels as text", () => {
    const text = '<<<<<<< someone else\n=======\n>>>>>>> two\n<<<<<<< main\n=======\n>>>>>>> not two\nx\n>>>>>>> two\n';
    const { segments } = parseMarkedText(text, { target: 'main', source: 'two' });
    expect(segments).toEqual([
      { kind: 'same', lines: ['<<<<<<< someone else', '=======', '>>>>>>> two'] },
      // Plain markers (no fork point part): the base is unknown, not empty.
      { kind: 'conflict', target: [], base: null, source: ['>>>>>>> not two', 'x'] },
    ]);
  });

  it('says when the text ends inside a conflict (the helper cut it)', () => {
    const parsed = parseMarkedText('a\n<<<<<<< main\nmine\n||||||| fork point\nbase', { target: 'main', source: 'two' });
    expect(parsed.cut).toBe(true);
    expect(parsed.segments.at(-1)).toEqual({ kind: 'conflict', target: ['mine'], base: ['base'], source: [] });
  });

  it('folds agreed lines away from the conflicts, and counts them', () => {
    const lines = ['1', '2', '3', '4', '5', '6', '7', '8'];
    expect(contextOf(lines, true, true)).toEqual(['1', '2', '3', { folded: 2 }, '6', '7', '8']);
    expect(contextOf(lines, false, true)).toEqual([{ folded: 5 }, '6', '7', '8']);
    expect(contextOf(lines, true, false)).toEqual(['1', '2', '3', { folded: 5 }]);
    expect(contextOf(['1', '2', '3', '4'], true, true)).toEqual(['1', '2', '3', '4']);
  });
});

describe('a plan', () => {
  it('sorts files into clean, merged and conflicting, a path conflicting with two sources once', () => {
    const p = plan({ conflicts: [conflict('/root/work/shared.txt', 'one'), conflict('/root/work/shared.txt', 'two'), conflict('/root/work/x')] });
    const { clean, merged } = changesOf(p);
    expect(clean.map((c) => c.path)).toEqual(['/root/work/a.txt', '/root/work/old.txt']);
    expect(merged.map((c) => c.path)).toEqual(['/root/work/both.txt']);
    expect([...conflictsByPath(p)].map(([path, list]) => [path, list.map((c) => c.source)])).toEqual([
      ['/root/work/shared.txt', ['one', 'two']],
      ['/root/work/x', ['two']],
    ]);
  });

  it("offers the target's workspace's other branches as sources, never another workspace's", () => {
    expect(sourceCandidates([MAIN, ONE, TWO, OTHER], MAIN).map((b) => b.name)).toEqual(['one', 'two']);
  });
});

describe('the merge flow', () => {
  it('checks, waits for a pick per conflicting file, then merges with the picks as settlements', async () => {
    const done = plan({ dryRun: false, merged: true, version: 'c0000001', conflicts: [] });
    const fake = apiWith({ 'branch.merge': (p) => (p.dryRun ? plan() : done) });
    const store = createMergeStore(fake.api, MAIN, [ONE.id, TWO.id]);
    await store.getState().apply();
    expect(store.getState().error).toMatch(/Check the merge first/);
    await store.getState().check();
    expect(store.getState().plan).toEqual(plan());
    expect(unsettled(store.getState())).toEqual(['/root/work/shared.txt']);
    await store.getState().apply();
    expect(store.getState().error).toBe('Pick a side for every conflicting file first: /root/work/shared.txt');
    store.getState().pick('/root/work/shared.txt', TWO.id);
    await store.getState().apply();
    expect(fake.calls).toEqual([
      ['branch.merge', { workspace: MAIN.id, sources: [ONE.id, TWO.id], dryRun: true }],
      ['branch.merge', { workspace: MAIN.id, sources: [ONE.id, TWO.id], take: [{ path: '/root/work/shared.txt', side: TWO.id }] }],
    ]);
    expect(store.getState()).toMatchObject({ merged: done, plan: null, picks: {}, error: null, busy: null });
  });

  it('starts again when the sources change; checking again keeps the picks of files that still conflict', async () => {
    const fake = apiWith({ 'branch.merge': () => plan() });
    const store = createMergeStore(fake.api, MAIN, [ONE.id, TWO.id]);
    await store.getState().check();
    store.getState().pick('/root/work/shared.txt', 'target');
    store.getState().pick('/root/work/gone.txt', 'target');
    await store.getState().check();
    expect(store.getState().picks).toEqual({ '/root/work/shared.txt': 'target' });
    store.getState().toggleSource(ONE.id);
    expect(store.getState()).toMatchObject({ sources: [TWO.id], plan: null, picks: {} });
    store.getState().toggleSource(ONE.id);
    store.getState().toggleSource(TWO.id);
    store.getState().toggleSource(ONE.id);
    await store.getState().check();
    expect(store.getState().error).toBe('Pick at least one branch whose changes come in.');
  });

  it('shows conflicts that appeared since the dry run as the new plan, nothing merged', async () => {
    let dry = true;
    const later = plan({ dryRun: false, conflicts: [conflict('/root/work/shared.txt'), conflict('/root/work/new.txt')] });
    const fake = apiWith({ 'branch.merge': () => (dry ? plan() : later) });
    const store = createMergeStore(fake.api, MAIN, [TWO.id]);
    await store.getState().check();
    store.getState().pick('/root/work/shared.txt', TWO.id);
    dry = false;
    await store.getState().apply();
    expect(store.getState()).toMatchObject({ merged: null, plan: later });
    expect(store.getState().error).toMatch(/^Nothing was written: 2 file\(s\) conflict now/);
    expect(unsettled(store.getState())).toEqual(['/root/work/new.txt']);
  });

  it("tells the helper's refusal in its words", async () => {
    const fake = apiWith({
      'branch.merge': () => {
        throw new ApiError('E_PRECONDITION', "'main' has no project (its workspace was made without --project): merge everything with --all");
      },
    });
    const store = createMergeStore(fake.api, MAIN, [ONE.id]);
    await store.getState().check();
    expect(store.getState()).toMatchObject({
      busy: null,
      plan: null,
      error: "Could not merge into main: 'main' has no project (its workspace was made without --project): merge everything with --all",
    });
  });
});
