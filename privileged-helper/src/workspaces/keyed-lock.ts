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
}
