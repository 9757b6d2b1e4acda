import { describe, expect, it } from 'vitest';
import { forEachLimited } from '../../src/concurrency.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('forEachLimited (a fork brings its children up as many at a time as there are cores)', () => {
  it('starts items in order, never more than the limit at once', async () => {
    const started: number[] = [];
    let running = 0;
    let most = 0;
    await forEachLimited([1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      most = Math.max(most, ++running);
      await tick(5 * (6 - n));
      running--;
    });
    expect(started).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  });

  it('starts nothing new after a failure, and throws it once those started are done', async () => {
    const done: number[] = [];
    const run = forEachLimited([1, 2, 3, 4], 2, async (n) => {
      if (n === 1) throw new Error('child 1 failed');
      await tick(20);
      done.push(n);
    });
    await expect(run).rejects.toThrow('child 1 failed');
    expect(done).toEqual([2]); // 2 was already running and finished; 3 and 4 never started
  });

  it('copes with no items and with a limit above their number', async () => {
    await forEachLimited([], 4, async () => undefined);
    const seen: string[] = [];
    await forEachLimited(['a'], 8, async (x) => void seen.push(x));
    expect(seen).toEqual(['a']);
  });
});
