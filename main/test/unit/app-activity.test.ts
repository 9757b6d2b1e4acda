// The controller's bookkeeping on its own: the activity log (bounded, repeats
// folded, who is "you"), the approvals book (open and closed, a bounded
// history without thumbnails, closed stays closed) and the words of the log.
import { describe, expect, it } from 'vitest';
import { ActivityLog, HELPER, YOU, attribute } from '../../src/app/activity.js';
import { ApprovalBook } from '../../src/app/approval-book.js';
import { approvalLines } from '../../src/app/approval-log.js';
import { MAX_DECIDED } from '../../src/api/contract.js';
import { ALICE, APP, BOB, CONNECTION, POLICY, PROMOTE, approval, decided, grant } from './app-fixtures.js';

describe('activity log', () => {
  it('says who: this app by the identity hello gave it, others by role and user, the helper when nobody called', () => {
    expect(attribute(APP, APP)).toEqual(YOU);
    // The same user in another process (the CLI in a terminal) is another client.
    expect(attribute({ ...APP, pid: APP.pid + 1 }, APP)).toEqual({ actor: 'person', who: { role: 'person', uid: 0, user: 'root' } });
    expect(attribute(ALICE, APP)).toEqual({ actor: 'agent', who: { role: 'agent', uid: 1001, user: 'alice' } });
    expect(attribute(undefined, APP)).toEqual(HELPER);
    expect(attribute(null, APP)).toEqual(HELPER);
    expect(attribute(APP, null)).toEqual({ actor: 'person', who: { role: 'person', uid: 0, user: 'root' } });
  });

  it('folds the same thing done again into one entry with a count, and keeps at most 500 entries', () => {
    const log = new ActivityLog();
    const alice = attribute(ALICE, APP);
    for (let i = 0; i < 5; i++) log.add(alice, 'use the desktop', 'one-1', 'ok', `click ${i}`);
    log.add(attribute(BOB, APP), 'use the desktop', 'one-1', 'ok', 'click 9');
    log.add(alice, 'use the desktop', 'one-1', 'failed', 'click 10');
    expect(log.entries.map((e) => [e.who?.user, e.outcome, e.count, e.detail])).toEqual([
      ['alice', 'ok', 5, 'click 4'],
      ['bob', 'ok', 1, 'click 9'],
      ['alice', 'failed', 1, 'click 10'],
    ]);
    for (let i = 0; i < 600; i++) log.add(YOU, 'checkpoint', `b-${i}`, 'ok', '');
    expect(log.entries).toHaveLength(500);
    expect(log.entries.at(-1)).toMatchObject({ target: 'b-599', seq: 603 });
  });
});

describe('approvals book', () => {
  it('keeps open requests apart from closed ones, and a closed one never opens again', () => {
    const book = new ApprovalBook();
    const q = approval('q00000001', PROMOTE);
    expect(book.apply(q)).toBeNull();
    expect(book.apply(decided(q, APP, true))).toBe('pending');
    expect(book.snapshot().approvals.map((a) => a.state)).toEqual(['running']);
    expect(book.apply({ ...decided(q, APP, true), state: 'done' })).toBe('running');
    // An older report that arrives late changes nothing.
    expect(book.apply(decided(q, APP, true))).toBe('done');
    const { approvals, decided: closed } = book.snapshot();
    expect(approvals).toEqual([]);
    expect(closed.map((a) => [a.id, a.state, a.preview.thumbnail])).toEqual([['q00000001', 'done', null]]);
  });

  it('keeps a bounded history, newest decision first, through a reconnect', () => {
    const book = new ApprovalBook();
    const at = (i: number) => `2026-01-01T00:${String(i).padStart(2, '0')}:00.000Z`;
    const closed = (i: number) => ({
      ...approval(`q000000${String(i).padStart(2, '0')}`, CONNECTION),
      state: 'denied' as const,
      decision: { by: APP, grant: null, at: at(i), note: null, always: false },
    });
    book.apply(approval('q000000bb', PROMOTE));
    for (let i = 0; i < 30; i++) book.apply(closed(i));
    expect(book.snapshot().decided).toHaveLength(MAX_DECIDED);
    expect(
      book
        .snapshot()
        .decided.slice(0, 2)
        .map((a) => a.id),
    ).toEqual(['q00000029', 'q00000028']);
    // After a reconnect: what the helper holds open replaces what the app had (q000000bb closed meanwhile); the history stays.
    book.reset([approval('q000000aa', PROMOTE)], [grant('g00000001', 'branch.discard')]);
    const s = book.snapshot();
    expect(s.approvals.map((a) => a.id)).toEqual(['q000000aa']);
    expect(s.decided[0]!.id).toBe('q00000029');
    expect(s.grants.map((g) => g.id)).toEqual(['g00000001']);
    book.grant(s.grants[0]!, true);
    expect(book.snapshot().grants).toEqual([]);
  });
});

describe('what the log says about requests', () => {
  const lines = (a: Parameters<typeof approvalLines>[0], before: Parameters<typeof approvalLines>[1]) =>
    approvalLines(a, before, APP).map((l) => `${l.who.actor}${l.who.who ? `:${l.who.who.user}` : ''} ${l.action} · ${l.detail}`);

  it('names the asker, the change asked for, and whoever decided: this app, another person, a standing approval', () => {
    const policy = approval('q00000001', POLICY);
    expect(lines(policy, null)).toEqual(['agent:alice asks to change outside access · “the tests pass on this branch” · waiting for a person']);
    expect(lines(decided(policy, BOB, true, 'fine'), 'pending')).toEqual([
      'person:bob approve change outside access · mode allow, allow pypi.org:443 · agent alice: “the tests pass on this branch” · note: fine',
    ]);
    expect(lines(decided(policy, APP, true), 'pending')).toEqual([
      'you approve change outside access · mode allow, allow pypi.org:443 · agent alice: “the tests pass on this branch”',
    ]);
    // Carried out: the audit log tells that, in the asker's name.
    expect(lines({ ...decided(policy, APP, true), state: 'done', outcome: 'done' }, 'running')).toEqual([]);
    // Decided and carried out before the app saw it: the decision still.
    expect(lines({ ...decided(policy, BOB, true), state: 'failed', outcome: 'the branch is gone' }, null)).toEqual([
      'person:bob approve change outside access · mode allow, allow pypi.org:443 · agent alice: “the tests pass on this branch”',
    ]);
    const byGrant = { ...policy, state: 'running' as const, decision: { by: null, grant: 'g00000001', at: policy.at, note: null, always: false } };
    expect(lines(byGrant, 'pending')).toEqual([
      'helper approve change outside access · mode allow, allow pypi.org:443 · agent alice: “the tests pass on this branch” · by standing approval g00000001',
    ]);
    expect(lines({ ...policy, state: 'withdrawn' }, 'pending')).toEqual([
      'agent:alice withdrew its request · mode allow, allow pypi.org:443 · agent alice: “the tests pass on this branch”',
    ]);
    const held = approval('q00000002', { ...CONNECTION, held: 'mutating' } as typeof CONNECTION);
    expect(lines(held, null)).toEqual(['helper asks for outside access · GET http://outside.test:8080/x · waiting for a person (a mutating request)']);
    // A connection let through says nothing more than its decision.
    expect(lines({ ...decided(held, BOB, true, null, true), state: 'done' }, 'pending')).toEqual([
      'person:bob always allow outside access · GET http://outside.test:8080/x',
    ]);
    expect(lines({ ...held, state: 'abandoned', outcome: 'the client went away' }, 'pending')).toEqual(['helper request abandoned · the client went away']);
  });
});
