// How many of one connection's requests run at once. Every line a client
// sends becomes a request the helper works on, and a reply it holds until the
// client reads it: a client that pipelines screenshots without reading the
// replies could grow the helper's memory without bound. A connection gets MAX_IN_FLIGHT requests under way
// and one screenshot (each holds a whole frame and its PNG); the rest wait
// their turn in order, and while any waits the connection reads no more of
// its socket, so what waits is what one read brought, never more.

/** Requests of one connection under way at once. */
export const MAX_IN_FLIGHT = 8;
/** Methods with a bound of their own, below MAX_IN_FLIGHT. */
export const METHOD_LIMITS: Readonly<Record<string, number>> = { 'desktop.screenshot': 1 };

export class Turns {
  private running = 0;
  private readonly byMethod = new Map<string, number>();
  private readonly waiting: { method: string; go: () => void }[] = [];

  constructor(
    /** Told when requests start and stop waiting: reading is paused while any waits. */
    private readonly onWaiting: (waiting: boolean) => void,
  ) {}

  /** Resolves when `method` may run; call the function it resolves with when it is done. */
  take(method: string): Promise<() => void> {
    return new Promise((resolve) => {
      this.waiting.push({ method, go: () => resolve(this.starting(method)) });
      if (this.waiting.length === 1) this.onWaiting(true);
      this.pump();
    });
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  private starting(method: string): () => void {
    this.running++;
    this.byMethod.set(method, (this.byMethod.get(method) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      this.byMethod.set(method, this.byMethod.get(method)! - 1);
      this.pump();
    };
  }

  /** Starts waiting requests in order while they fit (the first that does not fit holds the rest: order is kept). */
  private pump(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.method)) {
      this.waiting.shift()!.go();
      if (this.waiting.length === 0) this.onWaiting(false);
    }
  }

  private fits(method: string): boolean {
    return this.running < MAX_IN_FLIGHT && (this.byMethod.get(method) ?? 0) < (METHOD_LIMITS[method] ?? MAX_IN_FLIGHT);
  }
}
