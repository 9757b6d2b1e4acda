// @vitest-environment happy-dom
import { describe, expect, it, vi } from 'vitest';
import type { Workspace } from '../../main/src/api/contract.js';
import { ApiError, humanError, type Api } from '../src/api/client.js';
import { NOTICE_MS, createAppStore, isLive, parseSelectionHash, selectionHash } from '../src/store/app.js';
import { appState as state } from './app-state.js';

const ws = (id: string, name: string, parent: string | null, createdAt: string, main = false): Workspace => ({
  id,
  name,
  image: 'desktop',
  state: 'running',
  hostname: name,
  machineId: '0'.repeat(32),
  createdAt,
  address: '10.0.0.2',
  ports: [],
  vncSocket: null,
  streamSocket: null,
  pid: 1,
  exitReason: null,
  parent,
  tree: 'aaaaaaa1',
  version: null,
  main,
  limits: { memoryBytes: 2 * 2 ** 30, pids: 2048, cpuWeight: 100, diskBytes: 10 * 2 ** 30 },
  project: null,
  sensitive: false,
  disk: null,
  retiredAt: null,
  merges: [],
  madeBy: null,
  claimedBy: null,
});

const A = ws('aaaaaaa1', 'a', null, '2026-01-01T00:00:00Z', true);
const A1 = ws('aaaaaaa2', 'a-1', 'aaaaaaa1', '2026-01-01T00:01:00Z');
const A2 = ws('aaaaaaa3', 'a-2', 'aaaaaaa1', '2026-01-01T00:02:00Z');
const fakeApi = (impl?: Api['request']): Api => ({ request: impl ?? (vi.fn() as unknown as Api['request']) });

describe('app store', () => {
  it('lays out the tree and selects the main line when state arrives', () => {
    const s = createAppStore(fakeApi());
    s.getState().applyState(state([A2, A, A1]));
    expect(s.getState().order).toEqual([A.id, A1.id, A2.id]);
    expect(s.getState().selection).toEqual([A.id]);
    expect(s.getState().focus).toBe(A.id);
    expect(s.getState().layout.byId.get(A2.id)!.lane).toBe(1);
  });

  it('keeps the layout object when only branch details change, and recomputes it when the tree changes', () => {
    const s = createAppStore(fakeApi());
    s.getState().applyState(state([A, A1]));
    const first = s.getState().layout;
    s.getState().applyState(state([A, { ...A1, state: 'stopped' }]));
    expect(s.getState().layout).toBe(first);
    s.getState().applyState(state([A, A1, A2]));
    expect(s.getState().layout).not.toBe(first);
    expect(s.getState().order).toHaveLength(3);
  });

  it('selects single, toggles with ctrl, ranges with shift', () => {
    const s = createAppStore(fakeApi());
    s.getState().applyState(state([A, A1, A2]));
    s.getState().select(A1.id);
    expect(s.getState().selection).toEqual([A1.id]);
    s.getState().select(A2.id, 'toggle');
    expect(s.getState().selection).toEqual([A1.id, A2.id]);
    s.getState().select(A1.id, 'toggle');
    expect(s.getState().selection).toEqual([A2.id]);
    s.getState().select(A.id);
    s.getState().select(A2.id, 'range');
    expect(s.getState().selection).toEqual([A.id, A1.id, A2.id]);
  });

  it('moves the focus with the arrow keys, clamped at both ends', () => {
    const s = createAppStore(fakeApi());
    s.getState().applyState(state([A, A1, A2]));
    s.getState().moveFocus(1);
    expect(s.getState().focus).toBe(A1.id);
    s.getState().moveFocus(5);
    expect(s.getState().focus).toBe(A2.id);
    s.getState().moveFocus(-1, true);
    expect(s.getState().selection).toEqual([A1.id, A2.id]);
    s.getState().moveFocus(-10);
    expect(s.getState().focus).toBe(A.id);
    expect(s.getState().selection).toEqual([A.id]);
  });

  it('selects a branch just created as soon as the state holds it', () => {
    const s = createAppStore(fakeApi());
    s.getState().applyState(state([A]));
    s.getState().selectWhenPresent(A1.id);
    expect(s.getState().selection).toEqual([A.id]);
    s.getState().applyState(state([A, A1]));
    expect(s.getState().selection).toEqual([A1.id]);
    expect(s.getState().focus).toBe(A1.id);
    expect(s.getState().pendingSelect).toBeNull();
    // Already there: selected at once.
    s.getState().selectWhenPresent(A.id);
    expect(s.getState().focus).toBe(A.id);
  });

  it('drops removed branches from the selection', () => {
    const s = createAppStore(fakeApi());
    s.getState().applyState(state([A, A1, A2]));
    s.getState().select(A1.id);
    s.getState().select(A2.id, 'toggle');
    s.getState().applyState(state([A, A1]));
    expect(s.getState().selection).toEqual([A1.id]);
    expect(s.getState().focus).toBe(A1.id);
  });

  it('is live only when linked to the controller and the controller to the helper', () => {
    const s = createAppStore(fakeApi());
    expect(isLive(s.getState())).toBe(false);
    s.getState().applyState(state([A]));
    s.getState().setLink('open');
    expect(isLive(s.getState())).toBe(true);
    s.getState().applyState(state([A], 'disconnected'));
    expect(isLive(s.getState())).toBe(false);
    s.getState().applyState(state([A]));
    s.getState().setLink('closed');
    expect(isLive(s.getState())).toBe(false);
  });

  it('runs a confirmed action only when the person says yes', () => {
    const s = createAppStore(fakeApi());
    const run = vi.fn();
    s.getState().ask({ title: 't', body: 'b', confirmLabel: 'Discard', danger: true, run });
    s.getState().answer(false);
    expect(run).not.toHaveBeenCalled();
    expect(s.getState().confirm).toBeNull();
    s.getState().ask({ title: 't', body: 'b', confirmLabel: 'Discard', danger: true, run });
    s.getState().answer(true);
    expect(run).toHaveBeenCalledOnce();
  });

  it('turns a failed action into a notice in words, and returns its result when it works', async () => {
    const request = vi.fn().mockRejectedValueOnce(new ApiError('E_BUSY', 'fork in progress')).mockResolvedValueOnce({ deleted: A1.id });
    const s = createAppStore(fakeApi(request as unknown as Api['request']));
    s.getState().applyState(state([A, A1]));
    expect(await s.getState().act('branch.discard', { workspace: A1.id })).toBeUndefined();
    expect(s.getState().errors).toHaveLength(1);
    expect(s.getState().errors[0]!.text).toBe('Could not discard a-1: another operation is still running on this branch; try again when it finishes.');
    expect(await s.getState().act('branch.discard', { workspace: A1.id })).toEqual({ deleted: A1.id });
    expect(request).toHaveBeenLastCalledWith('branch.discard', { workspace: A1.id });
    s.getState().dismissError(s.getState().errors[0]!.id);
    expect(s.getState().errors).toEqual([]);
  });

  it('shows an error once, and lets it go by itself after a while', () => {
    vi.useFakeTimers();
    try {
      const s = createAppStore(fakeApi());
      s.getState().notify('Could not fork a: no');
      s.getState().notify('Could not fork a: no');
      expect(s.getState().errors.map((e) => e.text)).toEqual(['Could not fork a: no']);
      vi.advanceTimersByTime(NOTICE_MS - 1);
      expect(s.getState().errors).toHaveLength(1);
      vi.advanceTimersByTime(1);
      expect(s.getState().errors).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('hands the selection of a discarded branch to its parent, never to another workspace', () => {
    const B = { ...ws('bbbbbbb1', 'b', null, '2025-12-31T00:00:00Z', true), tree: 'bbbbbbb1' };
    const A11 = ws('aaaaaaa4', 'a-1-1', A1.id, '2026-01-01T00:03:00Z');
    const s = createAppStore(fakeApi());
    s.getState().applyState(state([B, A, A1, A11]));
    s.getState().select(A11.id);
    // a-1 and a-1-1 go at once: the nearest ancestor left is a.
    s.getState().applyState(state([B, A]));
    expect(s.getState().selection).toEqual([A.id]);
    expect(s.getState().focus).toBe(A.id);
    // The whole workspace goes: nothing is selected, b is not.
    s.getState().applyState(state([B]));
    expect(s.getState().selection).toEqual([]);
    expect(s.getState().focus).toBeNull();
  });

  it('keeps the selection in the address and restores it from there', () => {
    expect(selectionHash({ focus: A1.id, selection: [A.id, A1.id] })).toBe(`#b=${A1.id},${A.id}`);
    expect(parseSelectionHash(`#b=${A1.id},${A.id}`)).toEqual([A1.id, A.id]);
    expect(parseSelectionHash('#b=../../etc')).toEqual([]);
    const s = createAppStore(fakeApi());
    s.getState().restoreSelection([A1.id, A2.id]);
    s.getState().applyState(state([A, A1, A2]));
    expect(s.getState().focus).toBe(A1.id);
    expect(s.getState().selection).toEqual([A1.id, A2.id]);
    // A reload naming a branch that is gone selects nothing (not the first workspace).
    const gone = createAppStore(fakeApi());
    gone.getState().restoreSelection(['cccccccc']);
    gone.getState().applyState(state([A, A1]));
    expect(gone.getState().selection).toEqual([]);
  });

  it('switches themes', () => {
    const s = createAppStore(fakeApi(), 'dark');
    s.getState().toggleTheme();
    expect(s.getState().theme).toBe('light');
  });
});

describe('humanError', () => {
  it('says what a lost connection means', () => {
    expect(humanError(new ApiError('E_DISCONNECTED', 'x'))).toMatch(/reconnects by itself/);
    // The helper's words name the cause; no generic preamble ("cannot be done in its current state") before them.
    expect(humanError(new ApiError('E_CONFLICT', "a workspace named 'x' already exists"), 'workspace.create')).toBe(
      "Could not create the workspace: a workspace named 'x' already exists",
    );
  });
});
