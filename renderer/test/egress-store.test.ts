// @vitest-environment happy-dom
// A branch's egress policy in the renderer's store: read, changed, kept from
// the helper's answers; allow-list entries parsed as the helper accepts them.
import { describe, expect, it } from 'vitest';
import type { EgressStatus } from '../../main/src/api/contract.js';
import { formatRule } from '../../privileged-helper/src/protocol/egress-rules.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { createAppStore, parseRule } from '../src/store/app.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';

const A = branch('aaaaaaa1', 'a');
const state = (branches = [A]) => appState(branches);
const STATUS: EgressStatus = { workspace: A.id, policy: { mode: 'deny', allow: [], holdMutating: false }, dropped: { tcp: 3, udp: 1, other: 0 } };

describe('egress policy in the store', () => {
  it('reads a branch status, keeps the policy the helper answers with, and forgets removed branches', async () => {
    const { api, calls } = apiWith({
      'egress.status': () => STATUS,
      'egress.set': (p) => ({ mode: (p.mode as string | undefined) ?? 'gate', allow: [{ host: 'outside.test' }], holdMutating: p.holdMutating ?? false }),
    });
    const s = createAppStore(api);
    s.getState().applyState(state());
    await s.getState().loadEgress(A.id);
    expect(s.getState().egress[A.id]).toEqual(STATUS);
    const policy = await s.getState().setEgress(A.id, { mode: 'gate', allow: [{ host: 'outside.test' }] });
    expect(policy).toEqual({ mode: 'gate', allow: [{ host: 'outside.test' }], holdMutating: false });
    expect(calls.at(-1)).toEqual(['egress.set', { workspace: A.id, mode: 'gate', allow: [{ host: 'outside.test' }] }]);
    // The counters stay; the policy is the helper's answer.
    expect(s.getState().egress[A.id]).toEqual({ ...STATUS, policy });
    // Same tree, same object: no re-render for nothing.
    const before = s.getState().egress;
    s.getState().applyState(state());
    expect(s.getState().egress).toBe(before);
    s.getState().applyState(state([]));
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
