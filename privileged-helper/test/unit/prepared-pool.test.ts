// The pool's bookkeeping (workspaces/prepared-pool.ts): which ids and network
// slots it holds, refilling after a quiet moment, giving back, draining. The
// sets it makes are plain records here; the helper's own are made and used
// for real in the system tests (prepared.test.ts, fork.test.ts).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PreparedPool, type PreparedSlot } from '../../src/workspaces/prepared-pool.js';

function pool(size: number, failMake = false) {
  let next = 0;
  const made: string[] = [];
  const removed: string[] = [];
  const logs: string[] = [];
  const p = new PreparedPool(size, {
    allocate: (): PreparedSlot => ({ id: `id${next}`, netIndex: next++ }),
    make: async (slot) => {
      if (failMake) throw new Error('nft said no');
      made.push(slot.id);
    },
    remove: async (slot) => void removed.push(slot.id),
    log: (m) => logs.push(m),
  });
  return { p, made, removed, logs };
}

afterEach(() => vi.useRealTimers());

describe('a pool of branch networks made ahead', () => {
  it('fills up at start, hands out the oldest set once, and refills after a quiet moment', async () => {
    vi.useFakeTimers();
    const { p, made } = pool(2);
    p.start();
    await vi.runAllTimersAsync();
    expect(p.readyIds()).toEqual(['id0', 'id1']);
    expect(p.take()).toEqual({ id: 'id0', netIndex: 0 });
    // Taken but not used yet: still held, so no other branch gets its id or slot.
    expect(p.held()).toEqual({ ids: new Set(['id0', 'id1']), netIndexes: new Set([0, 1]) });
    expect(p.release('id0')).toBe(true);
    expect(p.release('id0')).toBe(false);
    expect(p.release('nope')).toBe(false);
    expect(p.held().ids).toEqual(new Set(['id1']));
    await vi.advanceTimersByTimeAsync(1000);
    expect(made).toEqual(['id0', 'id1']); // not yet: something took a moment ago
    await vi.advanceTimersByTimeAsync(1500);
    expect(p.readyIds()).toEqual(['id1', 'id2']);
  });

  it('takes back a set whose branch was not recorded after all, and hands it out next', async () => {
    vi.useFakeTimers();
    const { p } = pool(1);
    p.start();
    await vi.runAllTimersAsync();
    const slot = p.take()!;
    p.giveBack(slot);
    expect(p.readyIds()).toEqual(['id0']);
    expect(p.take()).toEqual(slot);
  });

  it('hands out nothing when it is empty, and says why a set could not be made, removing what was made of it', async () => {
    vi.useFakeTimers();
    const { p, removed, logs } = pool(2, true);
    p.start();
    await vi.runAllTimersAsync();
    expect(p.take()).toBeNull();
    expect(removed).toEqual(['id0']);
    expect(logs).toEqual([expect.stringContaining('nft said no')]);
    expect(p.held()).toEqual({ ids: new Set(), netIndexes: new Set() });
  });

  it('removes the untaken sets when drained, and makes no more', async () => {
    vi.useFakeTimers();
    const { p, removed, made } = pool(2);
    p.start();
    await vi.runAllTimersAsync();
    p.take();
    await p.drain();
    expect(removed).toEqual(['id1']);
    await vi.runAllTimersAsync();
    expect(made).toEqual(['id0', 'id1']);
  });
});
