// @vitest-environment happy-dom
// The approvals queue and standing approvals in the renderer's store: what
// waits (until its deadline), the time left, deciding (approve / always / deny,
// with a note, one decision at a time), switching grants (shown where they go
// until the state says so).
import { describe, expect, it, vi } from 'vitest';
import type { Approval } from '../../main/src/api/contract.js';
import { destination } from '../../main/src/api/words.js';
import { APP, CONNECTION, DISCARD, PROMOTE, approval, branch, decided, grant } from '../../main/test/unit/app-fixtures.js';
import { ApiError } from '../src/api/client.js';
import { createAppStore } from '../src/store/app.js';
import { pendingApprovals, queuedApprovals, timeLeft, workspacesOf } from '../src/store/approvals.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';

const T0 = Date.parse('2026-01-01T00:10:00Z');
const ONE = branch('aaaaaaa1', 'one');
const ONE_1 = branch('aaaaaaa2', 'one-1', { parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false });
const TWO = branch('bbbbbbb1', 'two');
const at = (id: string, action = PROMOTE, expiresInMs = 30_000, over: Partial<Approval> = {}) =>
  approval(id, action, { expiresAt: new Date(T0 + expiresInMs).toISOString(), ...over }, T0);
const state = (approvals: Approval[], over = {}) => appState([ONE, ONE_1, TWO], 'connected', { approvals, ...over });

describe('the queue in the store', () => {
  it('lists what waits until its deadline, and what is being carried out', () => {
    const s = createAppStore(apiWith({}).api);
    expect(pendingApprovals(s.getState(), T0)).toEqual([]);
    s.getState().applyState(
      state([at('q00000001'), at('q00000002', DISCARD, -1), at('q00000003', CONNECTION, 5_000), at('q00000004', PROMOTE, -1, { state: 'running' })]),
    );
    expect(pendingApprovals(s.getState(), T0).map((r) => r.id)).toEqual(['q00000001', 'q00000003']);
    expect(pendingApprovals(s.getState(), T0 + 10_000).map((r) => r.id)).toEqual(['q00000001']);
    // Approved and being carried out: listed (no deadline applies), not counted as waiting.
    expect(queuedApprovals(s.getState(), T0 + 10_000).map((r) => r.id)).toEqual(['q00000001', 'q00000004']);
  });

  it('tells the time left as m:ss, never negative, and destinations in words', () => {
    expect(timeLeft(at('q00000001', PROMOTE, 75_000), T0)).toBe('1:15');
    expect(timeLeft(at('q00000001', PROMOTE, 9_001), T0)).toBe('0:10');
    expect(timeLeft(at('q00000001', PROMOTE, -5_000), T0)).toBe('0:00');
    expect(destination({ host: 'outside.test', port: 443 })).toBe('outside.test:443');
    expect(destination({ host: 'fd00::1', port: 80 })).toBe('[fd00::1]:80');
  });

  it('approves, approves always (re-reading the policy it changed) and denies, with notes, one decision at a time', async () => {
    const answer = (p: Record<string, unknown>) => decided(at(p.id as string, CONNECTION), APP, true);
    const { api, calls } = apiWith({
      'approval.approve': answer,
      'approval.deny': answer,
      'egress.status': () => ({
        workspace: ONE_1.id,
        policy: { mode: 'gate', allow: [{ host: 'outside.test', port: 8080 }], holdMutating: false },
        dropped: { tcp: 0, udp: 0, other: 0 },
      }),
      'egress.set': () => ({ mode: 'gate', allow: [], holdMutating: false }),
    });
    const s = createAppStore(api);
    s.getState().applyState(state([at('q00000001'), at('q00000002', CONNECTION), at('q00000003', DISCARD)]));
    const first = s.getState().decide('q00000001', 'approve', '  ship it  ');
    // Its buttons are off while the answer is on its way; a second click sends nothing.
    expect(s.getState().deciding).toEqual(['q00000001']);
    expect(await s.getState().decide('q00000001', 'deny')).toBe(false);
    expect(await first).toBe(true);
    await s.getState().setEgress(ONE_1.id, { mode: 'gate' });
    expect(await s.getState().decide('q00000002', 'always')).toBe(true);
    expect(await s.getState().decide('q00000003', 'deny', '')).toBe(true);
    await vi.waitFor(() => expect(s.getState().egress[ONE_1.id]?.policy.allow).toEqual([{ host: 'outside.test', port: 8080 }]));
    expect(calls.filter(([m]) => m.startsWith('approval.'))).toEqual([
      ['approval.approve', { id: 'q00000001', note: 'ship it' }],
      ['approval.approve', { id: 'q00000002', always: true }],
      ['approval.deny', { id: 'q00000003' }],
    ]);
    // Until the state says they moved on, they stay disabled; being carried out is moving on.
    expect(s.getState().deciding).toEqual(['q00000001', 'q00000002', 'q00000003']);
    s.getState().applyState(state([at('q00000001', PROMOTE, 30_000, { state: 'running' }), at('q00000003', DISCARD)]));
    expect(s.getState().deciding).toEqual(['q00000003']);
    s.getState().applyState(state([]));
    expect(s.getState().deciding).toEqual([]);
  });

  it('turns a failed decision into a notice in words and lets it be tried again', async () => {
    const { api } = apiWith({
      'approval.approve': () => {
        throw new ApiError('E_NOT_FOUND', "no pending request 'q00000001' (it may have been decided or timed out)");
      },
    });
    const s = createAppStore(api);
    s.getState().applyState(state([at('q00000001')]));
    expect(await s.getState().decide('q00000001', 'approve')).toBe(false);
    expect(s.getState().deciding).toEqual([]);
    expect(s.getState().errors.at(-1)?.text).toMatch(/^Could not approve the request: no pending request/);
  });
});

describe('standing approvals in the store', () => {
  it('names each workspace by its main line, one per tree', () => {
    expect(workspacesOf([ONE_1, TWO, ONE])).toEqual([
      { tree: 'aaaaaaa1', name: 'one' },
      { tree: 'bbbbbbb1', name: 'two' },
    ]);
  });

  it('sets a grant through the main line and revokes it by id, showing where the switch goes until the state says so', async () => {
    const { api, calls } = apiWith({
      'grant.set': (p) => grant('g00000001', p.kind as 'branch.promote'),
      'grant.revoke': () => grant('g00000001', 'branch.promote'),
    });
    const s = createAppStore(api);
    s.getState().applyState(state([]));
    const setting = s.getState().setGrant('aaaaaaa1', 'branch.promote', true);
    expect(s.getState().granting).toEqual([{ tree: 'aaaaaaa1', kind: 'branch.promote', on: true }]);
    expect(await s.getState().setGrant('aaaaaaa1', 'branch.promote', true)).toBe(false);
    expect(await setting).toBe(true);
    expect(calls).toEqual([['grant.set', { workspace: 'aaaaaaa1', kind: 'branch.promote' }]]);
    // Answered, but the state does not show it yet: the switch stays where it goes.
    expect(s.getState().granting).toHaveLength(1);
    s.getState().applyState(state([], { grants: [grant('g00000001', 'branch.promote')] }));
    expect(s.getState().granting).toEqual([]);

    expect(await s.getState().setGrant('aaaaaaa1', 'branch.promote', false)).toBe(true);
    expect(calls.at(-1)).toEqual(['grant.revoke', { grant: 'g00000001' }]);
    s.getState().applyState(state([]));
    expect(s.getState().granting).toEqual([]);
  });

  it('lets the switch go back when the helper refuses', async () => {
    const { api } = apiWith({
      'grant.set': () => {
        throw new ApiError('E_NOT_FOUND', "no workspace 'aaaaaaa1'");
      },
    });
    const s = createAppStore(api);
    s.getState().applyState(state([]));
    expect(await s.getState().setGrant('aaaaaaa1', 'workspace.stop', true)).toBe(false);
    expect(s.getState().granting).toEqual([]);
    expect(s.getState().errors).toHaveLength(1);
  });
});
