import { describe, expect, it } from 'vitest';
import { closedVerdict, mayActAtOnce, withAllowListOn } from '../../src/helper-client/requests.js';
import { ALICE, APP, BOB, PROMOTE, approval } from './app-fixtures.js';

describe('asking a person, client side', () => {
  it('words each way a request can close, with the error code a command exits with', () => {
    const by = { by: APP, grant: null, at: '2026-01-01T00:00:01.000Z', note: 'not this one', always: false };
    expect(closedVerdict(approval('q00000001', PROMOTE, { state: 'done', decision: { ...by, note: null }, outcome: 'one-1 is now the main line' }))).toEqual({
      code: null,
      words: 'request q00000001 was approved by person root (uid 0) and carried out: one-1 is now the main line',
    });
    expect(closedVerdict(approval('q00000002', PROMOTE, { state: 'denied', decision: by }))).toEqual({
      code: 'E_DENIED',
      words: 'request q00000002 was denied by person root (uid 0): not this one',
    });
    expect(closedVerdict(approval('q00000003', PROMOTE, { state: 'expired' })).code).toBe('E_TIMEOUT');
    expect(closedVerdict(approval('q00000004', PROMOTE, { state: 'failed', decision: by, outcome: 'the branch is stopped' })).words).toMatch(
      /but failed: the branch is stopped$/,
    );
    expect(closedVerdict(approval('q00000005', PROMOTE, { state: 'withdrawn', outcome: 'withdrawn by agent alice' })).code).toBe('E_CONFLICT');
  });

  it('lets persons act at once, and agents only on branches they made that no person has acted on', () => {
    const byAlice = { role: 'agent', uid: ALICE.uid, user: 'alice' } as const;
    const byRoot = { role: 'person', uid: 0, user: 'root' } as const;
    expect(mayActAtOnce(APP, { madeBy: null, claimedBy: null })).toBe(true);
    expect(mayActAtOnce(BOB, { madeBy: byAlice, claimedBy: null })).toBe(true);
    expect(mayActAtOnce(ALICE, { madeBy: byAlice, claimedBy: null })).toBe(true);
    expect(mayActAtOnce(ALICE, { madeBy: byAlice, claimedBy: byRoot })).toBe(false);
    expect(mayActAtOnce(ALICE, { madeBy: { role: 'agent', uid: 9999, user: 'other' }, claimedBy: null })).toBe(false);
    expect(mayActAtOnce(ALICE, { madeBy: { role: 'person', uid: ALICE.uid, user: 'alice' }, claimedBy: null })).toBe(false);
    expect(mayActAtOnce(ALICE, { madeBy: null, claimedBy: null })).toBe(false);
  });

  it('opens a closed branch to its allow list when a destination is added, and leaves other changes as they are', () => {
    const rule = { host: 'pypi.org', port: 443 };
    expect(withAllowListOn('deny', { allow: [rule] })).toEqual({ mode: 'allow', allow: [rule] });
    expect(withAllowListOn('gate', { allow: [rule] })).toEqual({ allow: [rule] });
    expect(withAllowListOn('deny', { mode: 'gate', allow: [rule] })).toEqual({ mode: 'gate', allow: [rule] });
    expect(withAllowListOn('deny', { remove: [rule] })).toEqual({ remove: [rule] });
  });
});
