// Serialises operations per key (a workspace id): a stop that arrives while a
// start is running waits for it instead of racing it. Reads (a diff, a copy:
// they only look at the branch's files) may run side by side, but never with
// an operation that changes its mounts (a rollback unmounts what a diff's
// sandbox holds, and failed "target is busy").
export class KeyedLock {
  /** The last exclusive operation queued for each key. */
  private readonly tails = new Map<string, Promise<unknown>>();
  /** Reads queued since it, for each key: the next exclusive operation waits for them too. */
  private readonly reads = new Map<string, Set<Promise<unknown>>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = [this.tails.get(key), ...(this.reads.get(key) ?? [])].filter((p): p is Promise<unknown> => p !== undefined);
    const next = Promise.allSettled(before).then(task);
    this.tails.set(key, next);
    this.reads.delete(key);
    const clear = () => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    };
    next.then(clear, clear);
    return next;
  }

  /** Runs `task` once the exclusive operations queued before it are done, beside other reads. */
  read<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    // The operation before it failed or not, the read runs after it (its own caller is told of its failure).
    const next = previous.catch(() => undefined).then(task);
    const reads = this.reads.get(key) ?? new Set<Promise<unknown>>();
    reads.add(next);
    this.reads.set(key, reads);
    const clear = () => {
      reads.delete(next);
      if (reads.size === 0 && this.reads.get(key) === reads) this.reads.delete(key);
    };
    next.then(clear, clear);
    return next;
  }

  /**
   * Takes the key's turn and keeps it until the returned function is called:
   * for a span no one callback wraps (a fork holds each child it makes from
   * the moment it is reserved until the fork has committed or been undone).
   */
  acquire(key: string): Promise<() => void> {
    return new Promise((granted) => {
      void this.run(key, () => new Promise<void>((release) => granted(release)));
    });
  }
}
