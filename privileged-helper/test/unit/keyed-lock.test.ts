import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../src/workspaces/keyed-lock.js';

/** A promise the test resolves or rejects by hand. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every already-queued microtask (and a macrotask turn) run. */
const settle = () => new Promise<void>((r) => setTimeout(r, 0));

describe('KeyedLock', () => {
  it('runs tasks on the same key one after another, in order', async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const gate = deferred();

    const first = lock.run('ws', async () => {
      log.push('first:start');
      await gate.promise;
      log.push('first:end');
      return 1;
    });
    const second = lock.run('ws', async () => {
      log.push('second:start');
      return 2;
    });

    await settle();
    // The second must not have started while the first is waiting.
    expect(log).toEqual(['first:start']);

    gate.resolve();
    await expect(first).resolves.toBe(1);
    await expect(second).resolves.toBe(2);
    expect(log).toEqual(['first:start', 'first:end', 'second:start']);
  });

  it('never runs two tasks on one key at the same time', async () => {
    const lock = new KeyedLock();
    let active = 0;
    let maxActive = 0;
    const order: number[] = [];
    const tasks = Array.from({ length: 10 }, (_, i) =>
      lock.run('k', async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await settle();
        order.push(i);
        active--;
      }),
    );
    await Promise.all(tasks);
    expect(maxActive).toBe(1);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('runs tasks on different keys concurrently', async () => {
    const lock = new KeyedLock();
    const gateA = deferred();
    let bRan = false;

    const a = lock.run('a', () => gateA.promise.then(() => 'a'));
    const b = lock.run('b', async () => {
      bRan = true;
      return 'b';
    });

    // b completes while a is still blocked.
    await expect(b).resolves.toBe('b');
    expect(bRan).toBe(true);
    gateA.resolve();
    await expect(a).resolves.toBe('a');
  });

  it('a rejected task rejects its own caller but does not block the next task', async () => {
    const lock = new KeyedLock();
    const gate = deferred();
    const failing = lock.run('ws', async () => {
      await gate.promise;
      throw new Error('boom');
    });
    const next = lock.run('ws', async () => 'after');

    gate.resolve();
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('after');
  });

  it('a task that throws synchronously is still a rejection, and the key stays usable', async () => {
    const lock = new KeyedLock();
    const bad = lock.run('ws', () => {
      throw new Error('sync');
    });
    await expect(bad).rejects.toThrow('sync');
    await expect(lock.run('ws', async () => 42)).resolves.toBe(42);
  });

  it('forgets a key once its queue has drained', async () => {
    const lock = new KeyedLock();
    await lock.run('ws', async () => undefined);
    await lock
      .run('other', async () => {
        throw new Error('x');
      })
      .catch(() => undefined);
    await settle();
    const tails = (lock as unknown as { tails: Map<string, unknown> }).tails;
    expect(tails.size).toBe(0);
  });

  it('acquire holds the key until released, after the tasks queued before it', async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const gate = deferred();
    const before = lock.run('ws', async () => {
      await gate.promise;
      log.push('before');
    });
    const acquiring = lock.acquire('ws');
    const after = lock.run('ws', async () => void log.push('after'));

    await settle();
    expect(log).toEqual([]);
    gate.resolve();
    const release = await acquiring;
    await before;
    await settle();
    // Held: the task queued after the acquire waits.
    expect(log).toEqual(['before']);
    release();
    await after;
    expect(log).toEqual(['before', 'after']);
  });

  it('acquire of a free key is granted at once, and other keys are not held', async () => {
    const lock = new KeyedLock();
    const release = await lock.acquire('a');
    await expect(lock.run('b', async () => 'b')).resolves.toBe('b');
    release();
    await expect(lock.run('a', async () => 'a')).resolves.toBe('a');
  });
});

describe('KeyedLock reads', () => {
  it('runs reads side by side, and an exclusive task only once the reads before it are done', async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const r1 = deferred();
    const r2 = deferred();
    const a = lock.read('ws', async () => {
      log.push('read1:start');
      await r1.promise;
      log.push('read1:end');
    });
    const b = lock.read('ws', async () => {
      log.push('read2:start');
      await r2.promise;
      log.push('read2:end');
    });
    const w = lock.run('ws', async () => void log.push('write'));
    const after = lock.read('ws', async () => void log.push('read3'));
    await settle();
    expect(log).toEqual(['read1:start', 'read2:start']);
    r2.resolve();
    await b;
    await settle();
    expect(log).not.toContain('write');
    r1.resolve();
    await Promise.all([a, w, after]);
    expect(log).toEqual(['read1:start', 'read2:start', 'read2:end', 'read1:end', 'write', 'read3']);
  });

  it('lets a read wait for an exclusive task queued before it, and forgets the key after', async () => {
    const lock = new KeyedLock();
    const gate = deferred();
    const log: string[] = [];
    const w = lock.run('ws', async () => {
      await gate.promise;
      log.push('write');
    });
    const r = lock.read('ws', async () => void log.push('read'));
    await settle();
    expect(log).toEqual([]);
    gate.resolve();
    await Promise.all([w, r]);
    expect(log).toEqual(['write', 'read']);
    await settle();
    const internals = lock as unknown as { tails: Map<string, unknown>; reads: Map<string, unknown> };
    expect(internals.tails.size + internals.reads.size).toBe(0);
  });
});
