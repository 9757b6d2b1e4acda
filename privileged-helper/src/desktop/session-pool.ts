// One RFB session per branch, shared by every caller: opened on first use
// (and made ready by the `opened` hook before any call uses it), closed after
// a minute without calls, when the branch is forgotten (stopped,
// removed, rolled back), or when its init process changed (a new desktop
// behind the same address); a session whose connection dropped is replaced by
// the next call.
import { KeyedLock } from '../workspaces/keyed-lock.js';
import { RfbSession } from './rfb-session.js';

/** A running branch's desktop: its VNC server listens on address:5900. */
export interface DesktopTarget {
  id: string;
  name: string;
  /** Its init process (a new pid means a new desktop: a rollback or restart). */
  pid: number;
  pidStart: number | null;
  address: string;
}

export interface PoolOptions {
  vncPort: number;
  idleMs: number;
  connectTimeoutMs: number;
  log(msg: string): void;
  /** Runs once a session is connected, before any call gets it (e.g. to learn where the pointer is). */
  opened(t: DesktopTarget, s: RfbSession): Promise<void>;
}

interface Entry {
  /** The desktop the session belongs to: a different init process or address needs a new session. */
  desktop: string;
  session: Promise<RfbSession>;
  /** Calls using the session now; it is closed only after idleMs with none. */
  busy: number;
  idle: NodeJS.Timeout | null;
}

const RETRY_MS = 200;

export class SessionPool {
  private readonly entries = new Map<string, Entry>();
  /** Input actions of one branch run one at a time, so two callers' keys never interleave. */
  private readonly inputs = new KeyedLock();

  constructor(private readonly o: PoolOptions) {}

  /** Runs fn with the branch's live session; `retry`: once more on a fresh session if the connection broke meanwhile. */
  async use<T>(t: DesktopTarget, fn: (s: RfbSession) => Promise<T>, opts: { retry: boolean } = { retry: false }): Promise<T> {
    const entry = this.entry(t);
    entry.busy++;
    if (entry.idle) clearTimeout(entry.idle);
    entry.idle = null;
    try {
      const session = await this.live(t, entry);
      try {
        return await fn(session);
      } catch (e) {
        if (!opts.retry || !session.closed) throw e;
        this.o.log(`desktop ${t.name}: the VNC connection broke (${session.closed.message}); trying again on a new one`);
        return await fn(await this.live(t, entry));
      }
    } finally {
      entry.busy--;
      if (entry.busy === 0 && this.entries.get(t.id) === entry) {
        entry.idle = setTimeout(() => this.drop(t.id, entry), this.o.idleMs).unref();
      }
    }
  }

  /** Like use, one input action of the branch at a time. */
  input<T>(t: DesktopTarget, fn: (s: RfbSession) => Promise<T>): Promise<T> {
    return this.inputs.run(t.id, () => this.use(t, fn));
  }

  forget(branchId: string): void {
    const entry = this.entries.get(branchId);
    if (entry) this.drop(branchId, entry);
  }

  async closeAll(): Promise<void> {
    const entries = [...this.entries];
    for (const [id, entry] of entries) this.drop(id, entry);
    await Promise.allSettled(entries.map(([, e]) => e.session));
  }

  private entry(t: DesktopTarget): Entry {
    const desktop = `${t.address}:${this.o.vncPort} pid ${t.pid}/${t.pidStart}`;
    const current = this.entries.get(t.id);
    if (current?.desktop === desktop) return current;
    if (current) this.drop(t.id, current);
    const entry: Entry = { desktop, session: this.open(t), busy: 0, idle: null };
    this.entries.set(t.id, entry);
    return entry;
  }

  /** The entry's session, reopened if its connection dropped; a failed open fails every call waiting for it. */
  private async live(t: DesktopTarget, entry: Entry): Promise<RfbSession> {
    const pending = entry.session;
    const session = await pending;
    if (!session.closed) return session;
    if (entry.session === pending && this.entries.get(t.id) === entry) entry.session = this.open(t);
    return entry.session;
  }

  /** A failed open leaves no entry behind: the next call tries again. */
  private open(t: DesktopTarget): Promise<RfbSession> {
    const session = this.connect(t.address, Date.now() + this.o.connectTimeoutMs).then(async (s) => {
      await this.o.opened(t, s);
      return s;
    });
    session.then(
      () => this.o.log(`desktop ${t.name}: VNC session open`),
      () => {
        const entry = this.entries.get(t.id);
        if (entry?.session === session) this.drop(t.id, entry);
      },
    );
    return session;
  }

  /**
   * A branch that has just started may not listen yet (its Xvnc comes up a
   * moment after the branch): a refused connection is tried again until the
   * deadline, anything else fails at once.
   */
  private async connect(address: string, deadline: number): Promise<RfbSession> {
    for (;;) {
      try {
        return await RfbSession.open(address, this.o.vncPort, Math.max(1, deadline - Date.now()));
      } catch (err) {
        if (!/ECONNREFUSED/.test((err as Error).message) || Date.now() + RETRY_MS >= deadline) throw err;
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  private drop(id: string, entry: Entry): void {
    if (this.entries.get(id) === entry) this.entries.delete(id);
    if (entry.idle) clearTimeout(entry.idle);
    entry.session.then(
      (s) => s.close(),
      () => undefined,
    );
  }
}
