// @vitest-environment happy-dom
// The approvals queue and egress policy in the renderer's store: what is
// shown as waiting, the time left, deciding (once / always / deny) and the
// per-branch policy kept from the helper's answers.
import { describe, expect, it, vi } from 'vitest';
import type { AppState, EgressRequest, EgressStatus, RequestName, Workspace } from '../../main/src/api/contract.js';
import { ApiError, type Api } from '../src/api/client.js';
import { createAppStore, destination, formatRule, parseRule, pendingApprovals, timeLeft } from '../src/store/app.js';

const A: Workspace = {
  id: 'aaaaaaa1',
  name: 'a',
  image: 'desktop',
  state: 'running',
  hostname: 'a',
  machineId: '0'.repeat(32),
  createdAt: '2026-01-01T00:00:00Z',
  address: '10.0.0.2',
  ports: [],
  pid: 1,
  parent: null,
  tree: 'aaaaaaa1',
  version: null,
  main: true,
};
const T0 = Date.parse('2026-01-01T00:10:00Z');
const held = (id: string, expiresInMs: number, over: Partial<EgressRequest> = {}): EgressRequest => ({
  id,
  workspace: A.id,
  workspaceName: 'a',
  host: 'outside.test',
  port: 8080,
  method: 'GET',
  url: 'http://outside.test:8080/x',
  reason: 'destination',
  at: new Date(T0 - 1000).toISOString(),
  expiresAt: new Date(T0 + expiresInMs).toISOString(),
  ...over,
});
const state = (approvals: EgressRequest[], branches: Workspace[] = [A]): AppState => ({
  connection: { status: 'connected', epoch: 'e1', error: null, since: '2026-01-01T00:00:00Z' },
  branches,
  versions: [],
  images: [],
  operations: [],
  activity: [],
  approvals,
});
const STATUS: EgressStatus = { workspace: A.id, policy: { mode: 'deny', allow: [], holdMutating: false }, dropped: { tcp: 3, udp: 1, other: 0 }, pending: [] };

function apiWith(answers: Partial<Record<RequestName, (params: Record<string, unknown>) => unknown>>) {
  const calls: [string, unknown][] = [];
  const api: Api = {
    request: vi.fn(async (method: RequestName, params: unknown) => {
      calls.push([method, params]);
      const fn = answers[method];
      if (!fn) throw new ApiError('E_UNKNOWN_METHOD', method);
      return fn(params as Record<string, unknown>);
    }) as unknown as Api['request'],
  };
  return { api, calls };
}

describe('approvals in the store', () => {
  it('lists the requests still waiting, oldest first, and hides those past their deadline', () => {
    const s = createAppStore(apiWith({}).api);
    expect(pendingApprovals(s.getState(), T0)).toEqual([]);
    s.getState().applyState(state([held('q00000001', 30_000), held('q00000002', -1), held('q00000003', 5_000)]));
    expect(pendingApprovals(s.getState(), T0).map((r) => r.id)).toEqual(['q00000001', 'q00000003']);
    expect(pendingApprovals(s.getState(), T0 + 10_000).map((r) => r.id)).toEqual(['q00000001']);
  });

  it('tells the time left as m:ss, never negative', () => {
    expect(timeLeft(held('q00000001', 75_000), T0)).toBe('1:15');
    expect(timeLeft(held('q00000001', 9_001), T0)).toBe('0:10');
    expect(timeLeft(held('q00000001', -5_000), T0)).toBe('0:00');
    expect(destination({ host: 'outside.test', port: 443 })).toBe('outside.test:443');
    expect(destination({ host: 'fd00::1', port: 80 })).toBe('[fd00::1]:80');
  });

  it('approves once, always (re-reading the policy it changed) and denies, one decision at a time', async () => {
    const { api, calls } = apiWith({
      'egress.approve': (p) => held(p.request as string, 1000),
      'egress.deny': (p) => held(p.request as string, 1000),
      'egress.status': () => ({ ...STATUS, policy: { mode: 'gate', allow: [{ host: 'outside.test', port: 8080 }], holdMutating: false } }),
      'egress.set': () => ({ mode: 'gate', allow: [], holdMutating: false }),
    });
    const s = createAppStore(api);
    s.getState().applyState(state([held('q00000001', 30_000), held('q00000002', 30_000), held('q00000003', 30_000)]));
    const first = s.getState().decide('q00000001', 'once');
    // Its buttons are off while the answer is on its way; a second click sends nothing.
    expect(s.getState().deciding).toEqual(['q00000001']);
    expect(await s.getState().decide('q00000001', 'deny')).toBe(false);
    expect(await first).toBe(true);
    await s.getState().setEgress(A.id, { mode: 'gate' });
    expect(await s.getState().decide('q00000002', 'always')).toBe(true);
    expect(await s.getState().decide('q00000003', 'deny')).toBe(true);
    await vi.waitFor(() => expect(s.getState().egress[A.id]?.policy.allow).toEqual([{ host: 'outside.test', port: 8080 }]));
    expect(calls.filter(([m]) => m !== 'egress.status' && m !== 'egress.set')).toEqual([
      ['egress.approve', { request: 'q00000001', always: false }],
      ['egress.approve', { request: 'q00000002', always: true }],
      ['egress.deny', { request: 'q00000003' }],
    ]);
    // The next state (without them) clears what was being decided.
    expect(s.getState().deciding).toEqual(['q00000001', 'q00000002', 'q00000003']);
    s.getState().applyState(state([]));
    expect(s.getState().deciding).toEqual([]);
  });

  it('turns a failed decision into a notice in words and lets it be tried again', async () => {
    const { api } = apiWith({
      'egress.approve': () => {
        throw new ApiError('E_NOT_FOUND', "no held egress request 'q00000001' (it may have been decided or timed out)");
      },
    });
    const s = createAppStore(api);
    s.getState().applyState(state([held('q00000001', 30_000)]));
    expect(await s.getState().decide('q00000001', 'once')).toBe(false);
    expect(s.getState().deciding).toEqual([]);
    expect(s.getState().errors.at(-1)?.text).toMatch(/^That no longer exists: no held egress request/);
  });
});

describe('egress policy in the store', () => {
  it('reads a branch status, keeps the policy the helper answers with, and forgets removed branches', async () => {
    const { api, calls } = apiWith({
      'egress.status': () => STATUS,
      'egress.set': (p) => ({ mode: (p.mode as string | undefined) ?? 'gate', allow: [{ host: 'outside.test' }], holdMutating: p.holdMutating ?? false }),
    });
    const s = createAppStore(api);
    s.getState().applyState(state([]));
    await s.getState().loadEgress(A.id);
    expect(s.getState().egress[A.id]).toEqual(STATUS);
    const policy = await s.getState().setEgress(A.id, { mode: 'gate', allow: [{ host: 'outside.test' }] });
    expect(policy).toEqual({ mode: 'gate', allow: [{ host: 'outside.test' }], holdMutating: false });
    expect(calls.at(-1)).toEqual(['egress.set', { workspace: A.id, mode: 'gate', allow: [{ host: 'outside.test' }] }]);
    // The counters stay; the policy is the helper's answer.
    expect(s.getState().egress[A.id]).toEqual({ ...STATUS, policy });
    // Same tree, same object: no re-render for nothing.
    const before = s.getState().egress;
    s.getState().applyState(state([]));
    expect(s.getState().egress).toBe(before);
    s.getState().applyState(state([], []));
    expect(s.getState().egress).toEqual({});
  });

  it('parses allow-list entries the way the helper accepts them', () => {
    expect(parseRule('Example.org')).toEqual({ host: 'example.org' });
    expect(parseRule(' outside.test:8080 ')).toEqual({ host: 'outside.test', port: 8080 });
    expect(parseRule('*.example.org:443')).toEqual({ host: '*.example.org', port: 443 });
    expect(parseRule('10.1.2.3:80')).toEqual({ host: '10.1.2.3', port: 80 });
    expect(parseRule('[fd00::1]:443')).toEqual({ host: 'fd00::1', port: 443 });
    expect(parseRule('fd00::1')).toEqual({ host: 'fd00::1' });
    for (const bad of ['', 'http://x.org', 'x.org:0', 'x.org:70000', 'a b', '-x.org', 'x.org:']) expect(parseRule(bad)).toBeNull();
    expect(formatRule({ host: 'fd00::1', port: 443 })).toBe('[fd00::1]:443');
    expect(formatRule({ host: 'example.org' })).toBe('example.org');
  });
});
