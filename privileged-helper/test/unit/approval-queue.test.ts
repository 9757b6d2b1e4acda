import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApprovalQueue, MAX_OPEN_PER_AGENT, NO_PREVIEW, type OpenRequest } from '../../src/approvals/approval-queue.js';
import type { Approval } from '../../src/protocol/approvals.js';
import type { Actor } from '../../src/protocol/identity.js';

const person: Actor = { role: 'person', uid: 0, user: 'root', pid: 1, process: 'node', client: 'app:grove-app' };
const alice: Actor = { role: 'agent', uid: 2001, user: 'alice', pid: 2, process: 'node', client: 'cli:grove-cli' };
const bob: Actor = { role: 'agent', uid: 2002, user: 'bob', pid: 3, process: 'node', client: 'cli:grove-cli' };

function setup() {
  const events: [string, Approval][] = [];
  const queue = new ApprovalQueue({ opened: (a) => events.push(['opened', a]), changed: (a) => events.push(['changed', a]) });
  const ask = (over: Partial<OpenRequest> = {}) =>
    queue.open({
      action: { kind: 'branch.promote' },
      branch: { id: 'aaaaaaaa', name: 'b1', treeId: 'tttttttt' },
      requestedBy: alice,
      reason: 'it passes the tests',
      effect: 'b1 becomes the main line',
      preview: NO_PREVIEW,
      timeoutMs: 60_000,
      carryOut: async () => 'b1 is now the main line',
      ...over,
    });
  return { queue, events, ask };
}

afterEach(() => vi.useRealTimers());

describe('the approvals queue', () => {
  it('opens a pending request and publishes it', () => {
    const { queue, events, ask } = setup();
    const a = ask();
    expect(a).toMatchObject({ state: 'pending', requestedBy: alice, reason: 'it passes the tests', decision: null, outcome: null });
    expect(a.id).toMatch(/^q[0-9a-f]{8}$/);
    expect(Date.parse(a.expiresAt) - Date.parse(a.at)).toBe(60_000);
    expect(events).toEqual([['opened', a]]);
    expect(queue.list()).toEqual([a]);
  });

  it('carries out an approved request, then it is done with its outcome and who decided', async () => {
    const { queue, events, ask } = setup();
    const carryOut = vi.fn(async () => 'b1 is now the main line');
    const a = ask({ carryOut });
    const done = await queue.approve(a.id, person, { note: 'good work' });
    expect(carryOut).toHaveBeenCalledOnce();
    expect(done).toMatchObject({ state: 'done', outcome: 'b1 is now the main line', decision: { by: person, note: 'good work', grant: null, always: false } });
    expect(events.map(([kind, x]) => `${kind}:${x.state}`)).toEqual(['opened:pending', 'changed:running', 'changed:done']);
    expect(queue.list()).toEqual([]);
    expect(queue.list({ all: true })).toEqual([done]);
    expect(queue.get(a.id)).toEqual(done);
  });

  it('marks a request whose carrying out failed as failed, with the reason', async () => {
    const { queue, ask } = setup();
    const a = ask({ carryOut: async () => Promise.reject(new Error('the branch is stopped')) });
    expect(await queue.approve(a.id, person, {})).toMatchObject({ state: 'failed', outcome: 'the branch is stopped' });
  });

  it('denies: nothing is carried out, the refusal hook runs, and it cannot be approved after', async () => {
    const { queue, ask } = setup();
    const carryOut = vi.fn(async () => 'x');
    const onRefused = vi.fn();
    const a = ask({ carryOut, onRefused });
    const denied = queue.deny(a.id, person, 'not yet');
    expect(denied).toMatchObject({ state: 'denied', outcome: 'denied by person root (uid 0): not yet', decision: { by: person, note: 'not yet' } });
    expect(onRefused).toHaveBeenCalledWith(denied);
    expect(carryOut).not.toHaveBeenCalled();
    await expect(queue.approve(a.id, person, {})).rejects.toMatchObject({ code: 'E_CONFLICT', message: expect.stringContaining('already denied') });
    expect(() => queue.deny('q00000000', person, null)).toThrow(expect.objectContaining({ code: 'E_NOT_FOUND' }));
  });

  it('expires a request nobody decided in time', () => {
    vi.useFakeTimers();
    const { queue, ask } = setup();
    const onRefused = vi.fn();
    const a = ask({ timeoutMs: 10_000, onRefused });
    vi.advanceTimersByTime(9_999);
    expect(queue.get(a.id).state).toBe('pending');
    vi.advanceTimersByTime(1);
    expect(queue.get(a.id)).toMatchObject({ state: 'expired', outcome: 'nobody decided within 10 s', decision: null });
    expect(onRefused).toHaveBeenCalledOnce();
  });

  it('lets only the agent that asked withdraw its request', () => {
    const { queue, ask } = setup();
    const a = ask();
    expect(() => queue.withdraw(a.id, bob)).toThrow(expect.objectContaining({ code: 'E_FORBIDDEN' }));
    const before = Date.now();
    const withdrawn = queue.withdraw(a.id, alice);
    expect(withdrawn).toMatchObject({ state: 'withdrawn', decision: null });
    // When it ended, for the app's "recently decided" (no decision tells it here).
    expect(Date.parse(withdrawn.closedAt!)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(withdrawn.closedAt!)).toBeLessThanOrEqual(Date.now());
    expect(queue.get(a.id).closedAt).toBe(withdrawn.closedAt);
  });

  it('abandons what a branch waited for when the branch goes away', () => {
    const { queue, ask } = setup();
    const a = ask();
    const other = ask({ branch: { id: 'bbbbbbbb', name: 'b2', treeId: 'tttttttt' } });
    queue.abandonBranch('aaaaaaaa', 'the branch was removed');
    expect(queue.get(a.id)).toMatchObject({ state: 'abandoned', outcome: 'the branch was removed' });
    expect(queue.get(other.id).state).toBe('pending');
  });

  it('wakes a waiter when the request is decided, and answers the open state when time runs out first', async () => {
    const { queue, ask } = setup();
    const a = ask();
    expect((await queue.wait(a.id, 20)).state).toBe('pending');
    const waiting = queue.wait(a.id, 60_000);
    queue.deny(a.id, person, null);
    expect((await waiting).state).toBe('denied');
  });

  it("refuses 'always' for anything but a held connection", async () => {
    const { queue, ask } = setup();
    const a = ask();
    await expect(queue.approve(a.id, person, { always: true })).rejects.toMatchObject({ code: 'E_INVALID_PARAMS' });
    expect(queue.get(a.id).state).toBe('pending');
  });

  it(`bounds what one agent may have waiting at ${MAX_OPEN_PER_AGENT}`, () => {
    const { ask } = setup();
    for (let i = 0; i < MAX_OPEN_PER_AGENT; i++) ask();
    expect(() => ask()).toThrow(expect.objectContaining({ code: 'E_BUSY' }));
    expect(() => ask({ requestedBy: bob })).not.toThrow();
  });
});
