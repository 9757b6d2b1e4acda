// The approvals queue: every request only a person may decide waits here, in
// one place, with one decision path. A request is opened with what it would do
// and how to carry it out; a person approves it (it is carried out, then done or
// failed) or denies it; it may also expire, be withdrawn by the agent that
// asked, or be abandoned (its connection or branch went away). Open requests
// live in memory (a held connection cannot outlive the helper anyway); the
// newest closed ones are kept for `approval.get`/`approval.wait`, and the audit
// log keeps every decision for good.
import { randomBytes } from 'node:crypto';
import { OPEN_STATES, type Approval, type ApprovalAction, type ApprovalPreview, type ApprovalState } from '../protocol/approvals.js';
import { describeActor, type Actor } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';

/** Closed requests kept for reading back. */
const CLOSED_KEPT = 500;
/** Open requests one agent (uid) may have at once. */
export const MAX_OPEN_PER_AGENT = 50;

export type Decision = NonNullable<Approval['decision']>;

export interface OpenRequest {
  action: ApprovalAction;
  branch: { id: string; name: string; treeId: string };
  /** The agent that asks; null for a connection the branch's own software opened. */
  requestedBy: Actor | null;
  reason: string;
  effect: string;
  preview: ApprovalPreview;
  timeoutMs: number;
  /** Carries out an approved request; resolves with what it did, in words. */
  carryOut(decision: Decision): Promise<string>;
  /** Called once when the request closes without being carried out. */
  onRefused?(approval: Approval): void;
}

interface Entry {
  approval: Approval;
  request: OpenRequest;
  timer: NodeJS.Timeout;
}

export interface QueueEvents {
  opened(a: Approval): void;
  changed(a: Approval): void;
}

export const NO_PREVIEW: ApprovalPreview = { thumbnail: null, diff: null, processes: null, versions: null, notes: [] };

export class ApprovalQueue {
  private readonly entries = new Map<string, Entry>();
  private readonly closed: Approval[] = [];
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(private readonly events: QueueEvents) {}

  open(request: OpenRequest): Approval {
    const asker = request.requestedBy;
    if (asker && this.openOf((a) => a.requestedBy?.uid === asker.uid).length >= MAX_OPEN_PER_AGENT) {
      throw new GroveError('E_BUSY', `${asker.user} already has ${MAX_OPEN_PER_AGENT} requests waiting; wait for decisions or withdraw some`);
    }
    const now = Date.now();
    const approval: Approval = {
      id: this.freshId(),
      action: request.action,
      workspace: request.branch.id,
      workspaceName: request.branch.name,
      tree: request.branch.treeId,
      requestedBy: asker,
      reason: request.reason,
      effect: request.effect,
      preview: request.preview,
      state: 'pending',
      at: new Date(now).toISOString(),
      expiresAt: new Date(now + request.timeoutMs).toISOString(),
      decision: null,
      outcome: null,
    };
    const timer = setTimeout(
      () => this.close(approval.id, 'expired', null, `nobody decided within ${Math.round(request.timeoutMs / 1000)} s`),
      request.timeoutMs,
    );
    timer.unref();
    this.entries.set(approval.id, { approval, request, timer });
    this.events.opened(approval);
    return approval;
  }

  /**
   * A person (or a grant in their name) lets it happen: it is carried out now,
   * and this resolves when it is done or failed.
   */
  async approve(id: string, by: Actor, opts: { always?: boolean; note?: string | null; grant?: string | null }): Promise<Approval> {
    const entry = this.pending(id);
    if (opts.always && entry.approval.action.kind !== 'egress.connection') {
      throw new GroveError('E_INVALID_PARAMS', "'always' applies to held connections only");
    }
    clearTimeout(entry.timer);
    const decision: Decision = { by, grant: opts.grant ?? null, at: new Date().toISOString(), note: opts.note ?? null, always: opts.always ?? false };
    this.update(entry, { state: 'running', decision });
    try {
      const outcome = await entry.request.carryOut(decision);
      return this.finish(entry, 'done', outcome);
    } catch (err) {
      return this.finish(entry, 'failed', (err as Error).message);
    }
  }

  deny(id: string, by: Actor, note: string | null): Approval {
    const entry = this.pending(id);
    return this.close(
      id,
      'denied',
      { by, grant: null, at: new Date().toISOString(), note, always: false },
      `denied by ${describeActor(by)}${note ? `: ${note}` : ''}`,
      entry,
    );
  }

  /** The agent that asked takes it back. */
  withdraw(id: string, by: Actor): Approval {
    const entry = this.pending(id);
    if (entry.approval.requestedBy?.uid !== by.uid) throw new GroveError('E_FORBIDDEN', `request ${id} is not ${by.user}'s to withdraw`);
    return this.close(id, 'withdrawn', null, `withdrawn by ${describeActor(by)}`, entry);
  }

  /** What waited for it went away (a held connection closed, its branch stopped). */
  abandon(id: string, why: string): void {
    if (this.entries.get(id)?.approval.state === 'pending') this.close(id, 'abandoned', null, why);
  }

  abandonBranch(branchId: string, why: string): void {
    for (const a of this.openOf((x) => x.workspace === branchId && x.state === 'pending')) this.abandon(a.id, why);
  }

  get(id: string): Approval {
    const found = this.entries.get(id)?.approval ?? this.closed.find((a) => a.id === id);
    if (!found) throw new GroveError('E_NOT_FOUND', `no request '${id}' (it may be long closed)`);
    return found;
  }

  /** Open requests (oldest first), optionally with the recently closed ones. */
  list(filter: { workspace?: string; all?: boolean } = {}): Approval[] {
    const match = (a: Approval) => filter.workspace === undefined || a.workspace === filter.workspace;
    const open = this.openOf(match);
    return filter.all ? [...this.closed.filter(match), ...open] : open;
  }

  openOf(match: (a: Approval) => boolean): Approval[] {
    return [...this.entries.values()].map((e) => e.approval).filter(match);
  }

  /** Resolves when the request leaves the open states, or after `ms` with its state then. */
  wait(id: string, ms: number): Promise<Approval> {
    const now = this.get(id);
    if (!OPEN_STATES.has(now.state) || ms === 0) return Promise.resolve(now);
    return new Promise((resolve) => {
      const set = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) this.waiters.delete(id);
        resolve(this.get(id));
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }

  private pending(id: string): Entry {
    const entry = this.entries.get(id);
    if (!entry) {
      const closed = this.closed.find((a) => a.id === id);
      if (closed) throw new GroveError('E_CONFLICT', `request ${id} is already ${closed.state}${closed.outcome ? ` (${closed.outcome})` : ''}`);
      throw new GroveError('E_NOT_FOUND', `no request '${id}' (it may have timed out or been decided long ago)`);
    }
    if (entry.approval.state !== 'pending') throw new GroveError('E_CONFLICT', `request ${id} is already ${entry.approval.state}`);
    return entry;
  }

  private close(id: string, state: ApprovalState, decision: Decision | null, outcome: string, known?: Entry): Approval {
    const entry = known ?? this.entries.get(id);
    if (!entry) return this.get(id);
    clearTimeout(entry.timer);
    const approval = this.finish(entry, state, outcome, decision);
    entry.request.onRefused?.(approval);
    return approval;
  }

  private finish(entry: Entry, state: ApprovalState, outcome: string, decision: Decision | null = entry.approval.decision): Approval {
    this.entries.delete(entry.approval.id);
    const approval = this.update(entry, { state, outcome, decision, closedAt: new Date().toISOString() });
    this.closed.push(approval);
    if (this.closed.length > CLOSED_KEPT) this.closed.splice(0, this.closed.length - CLOSED_KEPT);
    for (const wake of [...(this.waiters.get(approval.id) ?? [])]) wake();
    return approval;
  }

  private update(entry: Entry, change: Partial<Approval>): Approval {
    entry.approval = { ...entry.approval, ...change };
    this.events.changed(entry.approval);
    return entry.approval;
  }

  private freshId(): string {
    for (;;) {
      const id = `q${randomBytes(4).toString('hex')}`;
      if (!this.entries.has(id) && !this.closed.some((a) => a.id === id)) return id;
    }
  }
}
