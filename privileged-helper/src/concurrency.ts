// Running several pieces of async work at once, in the helper: each fails
// only once all have settled, so that no undo starts while work it would
// undo is still running.

/**
 * Runs `work` on each item, at most `limit` at once, in order. On a failure no
 * new item starts, and it throws once those started are done (as allSettled).
 */
export async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const item = items[next++]!;
      await work(item).catch((err: unknown) => {
        failed = true;
        throw err;
      });
    }
  };
  await allSettled(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

/**
 * Like Promise.all, but waits for every task before failing: an unwind must not
 * start while a sibling's work is still running (a fork's restore of another
 * child, a mount of the same branch): what it makes would be left behind.
 */
export async function allSettled(tasks: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(tasks)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
