import { describe, expect, it } from 'vitest';
import { TimelineBook, TimelineRecorder, type TimelineLimits } from '../../src/desktop/timeline.js';
import type { Actor } from '../../src/protocol/identity.js';

const LIMITS: TimelineLimits = { entries: 10, summaryChars: 20, shots: 4, shotBytes: 1000, allShotBytes: 1500, shotEvery: 2 };
const agent: Actor = { role: 'agent', uid: 2001, user: 'alice', pid: 10, process: 'grove', client: 'grove mcp' };
const by = { role: 'agent' as const, uid: 2001, user: 'alice' };
const entry = (summary = 'click left at 1,2') => ({ by, action: 'click', summary, ok: true, at: '2026-12-08T00:00:00.000Z' });
const png = (bytes: number) => `data:image/png;base64,${'A'.repeat(bytes - 22)}`;

/** Records actions on a branch, adding a screenshot of `bytes` for each one due. */
function act(book: TimelineBook, branch: string, count: number, bytes = 100): void {
  for (let i = 0; i < count; i++) {
    const due = book.record(branch, entry());
    if (due !== null) book.addShot(branch, { after: due, at: '2026-12-08T00:00:00.000Z', image: png(bytes) });
  }
}

describe('TimelineBook: what agents did, bounded', () => {
  it('keeps actions in order, numbered, and asks for a screenshot after the first and then every few', () => {
    const book = new TimelineBook(LIMITS);
    expect([1, 2, 3, 4].map(() => book.record('b1', entry()))).toEqual([1, null, 3, null]);
    expect(book.get('b1').entries.map((e) => e.n)).toEqual([1, 2, 3, 4]);
    expect(book.get('other')).toEqual({ workspace: 'other', entries: [], shots: [], droppedEntries: 0 });
  });

  it('drops the oldest actions past the bound, counting them, and cuts long summaries', () => {
    const book = new TimelineBook(LIMITS);
    for (let i = 0; i < 25; i++) book.record('b1', entry('x'.repeat(500)));
    const t = book.get('b1');
    expect(t.entries.map((e) => e.n)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24, 25]);
    expect(t.droppedEntries).toBe(15);
    expect(t.entries.every((e) => e.summary.length === 20)).toBe(true);
  });

  it('thins the screenshots out past the count, keeping the newest and spreading the rest, then takes them less often', () => {
    const book = new TimelineBook(LIMITS);
    act(book, 'b1', 10); // shots after 1, 3, 5, 7, 9: one too many
    expect(book.get('b1').shots.map((s) => s.after)).toEqual([1, 5, 9]);
    // Every 4 actions now.
    act(book, 'b1', 6);
    expect(book.get('b1').shots.map((s) => s.after)).toEqual([1, 5, 9, 13]);
    act(book, 'b1', 1); // one more at 17: thinned again, every 8 from then on
    expect(book.get('b1').shots.map((s) => s.after)).toEqual([1, 9, 17]);
    act(book, 'b1', 7);
    expect(book.get('b1').shots.map((s) => s.after)).toEqual([1, 9, 17]);
  });

  it("bounds one branch's screenshot bytes, and refuses a picture larger than the bound by itself", () => {
    const book = new TimelineBook(LIMITS);
    act(book, 'b1', 6, 400); // 3 × 400 > 1000
    expect(book.get('b1').shots.map((s) => s.after)).toEqual([1, 5]);
    const before = book.get('b1').shots;
    book.addShot('b1', { after: 99, at: '2026-12-08T00:00:00.000Z', image: png(1001) });
    expect(book.get('b1').shots).toEqual(before);
  });

  it("bounds every branch's screenshots together, thinning the heaviest, and frees a branch's when it goes", () => {
    const book = new TimelineBook(LIMITS);
    act(book, 'heavy', 8, 200); // 4 × 200
    act(book, 'light', 2, 300); // 1 × 300
    act(book, 'third', 4, 250); // 2 × 250: 1600 in all, over 1500
    expect(book.get('heavy').shots.map((s) => s.after)).toEqual([3, 7]);
    expect(book.get('light').shots).toHaveLength(1);
    expect(book.get('third').shots).toHaveLength(2);
    book.drop('heavy');
    expect(book.get('heavy').shots).toEqual([]);
    act(book, 'light', 4, 300); // 1500 with heavy's gone: nothing thinned
    expect(book.get('light').shots.map((s) => s.after)).toEqual([1, 3, 5]);
    expect(book.get('third').shots).toHaveLength(2);
  });

  it('stays bounded however long a hostile agent acts, in every branch it can reach', () => {
    const book = new TimelineBook(LIMITS);
    for (const branch of ['a', 'b', 'c', 'd', 'e']) act(book, branch, 5000, 999);
    let bytes = 0;
    for (const branch of ['a', 'b', 'c', 'd', 'e']) {
      const t = book.get(branch);
      expect(t.entries).toHaveLength(LIMITS.entries);
      expect(t.shots.length).toBeLessThanOrEqual(LIMITS.shots);
      bytes += t.shots.reduce((sum, s) => sum + s.image.length, 0);
    }
    expect(bytes).toBeLessThanOrEqual(LIMITS.allShotBytes);
  });
});

describe('TimelineRecorder: from the helper’s events', () => {
  function recorder() {
    const taken: string[] = [];
    const r = new TimelineRecorder(new TimelineBook(LIMITS), {
      branchId: (ref) => (ref === 'ws-one' || ref === 'b1' ? 'b1' : null),
      screenshot: async (branch) => {
        taken.push(branch);
        return png(50);
      },
      log: () => undefined,
    });
    return { r, taken };
  }
  const action = { workspace: 'b1', workspaceName: 'ws-one', action: 'type', summary: 'type 3 characters', cursor: null, screen: null, ok: true, at: 'now' };
  const audit = (actor: Actor | null, method: string, target: string | null) => ({
    seq: 1,
    at: 'now',
    actor,
    action: method,
    target,
    outcome: 'ok' as const,
    detail: null,
  });

  it("records agents' desktop actions and other calls on the branch, a person's not, and drops them with the branch", async () => {
    const { r, taken } = recorder();
    const person = { ...agent, role: 'person' } as Actor;
    r.deliver('desktop.action', 1, action, agent);
    r.deliver('desktop.action', 2, action, person);
    r.deliver('audit', 3, audit(agent, 'exec.run', 'ws-one'), agent);
    r.deliver('audit', 4, audit(agent, 'desktop.type', 'ws-one'), agent); // told by its desktop.action
    r.deliver('audit', 5, audit(person, 'exec.run', 'ws-one'), person);
    r.deliver('audit', 6, audit(agent, 'exec.run', 'elsewhere'), agent);
    expect(r.book.get('b1').entries.map((e) => [e.action, e.summary])).toEqual([
      ['type', 'type 3 characters'],
      ['exec.run', 'exec.run'],
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toEqual(['b1']);
    expect(r.book.get('b1').shots.map((s) => s.after)).toEqual([1]);
    r.deliver('workspace.removed', 7, { id: 'b1' }, undefined);
    expect(r.book.get('b1').entries).toEqual([]);
  });
});
