// Serialises operations per key (a workspace id): a stop that arrives while a
// start is running waits for it instead of racing it.
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(task);
    this.tails.set(key, next);
    const clear = () => {
      if (this.tails.get(key) === next) this.tails.delete(key);
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
