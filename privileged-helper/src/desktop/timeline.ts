// "What it did": per branch, what agents did there since it was made, with a
// small screenshot every few actions (protocol/timeline.ts), for the person
// deciding a promote or export request. Kept in memory, bounded so that an
// agent acting without end cannot grow it: the oldest entries go first; the
// screenshots are thinned out (every other one goes, the newest stays, and
// they are taken half as often) when a branch's count or bytes, or all
// branches' bytes together, pass their bounds. A branch's goes with it.
import type { EventPayload, Topic } from '../protocol/events.js';
import type { Actor } from '../protocol/identity.js';
import { TIMELINE_LIMITS, type Timeline, type TimelineEntry, type TimelineShot } from '../protocol/timeline.js';

export type TimelineLimits = { readonly [K in Exclude<keyof typeof TIMELINE_LIMITS, 'shotWidth'>]: number };

interface BranchLog {
  entries: TimelineEntry[];
  shots: TimelineShot[];
  /** The last action's number. */
  n: number;
  dropped: number;
  /** A screenshot after every this many actions. */
  every: number;
  sinceShot: number;
  shotBytes: number;
}

export class TimelineBook {
  private readonly logs = new Map<string, BranchLog>();
  private allShotBytes = 0;

  constructor(private readonly limits: TimelineLimits = TIMELINE_LIMITS) {}

  /** Records an action; answers its number when a screenshot of the screen after it is due (the first, then every few), else null. */
  record(branch: string, entry: Omit<TimelineEntry, 'n'>): number | null {
    const log = this.logOf(branch);
    const n = ++log.n;
    log.entries.push({ ...entry, action: entry.action.slice(0, 64), summary: entry.summary.slice(0, this.limits.summaryChars), n });
    if (log.entries.length > this.limits.entries) {
      log.entries.shift();
      log.dropped++;
    }
    // The first shows the screen the agent started from.
    if (++log.sinceShot < log.every && n > 1) return null;
    log.sinceShot = 0;
    return n;
  }

  /** A screenshot taken after action `shot.after`; nothing when the branch went meanwhile, or the picture alone is over the bound. */
  addShot(branch: string, shot: TimelineShot): void {
    const log = this.logs.get(branch);
    const bytes = shot.image.length;
    if (!log || bytes > this.limits.shotBytes) return;
    log.shots.push(shot);
    log.shots.sort((a, b) => a.after - b.after);
    log.shotBytes += bytes;
    this.allShotBytes += bytes;
    while (log.shots.length > this.limits.shots || log.shotBytes > this.limits.shotBytes) this.thin(log);
    while (this.allShotBytes > this.limits.allShotBytes) this.thin(this.heaviest());
  }

  get(branch: string): Timeline {
    const log = this.logs.get(branch);
    return { workspace: branch, entries: [...(log?.entries ?? [])], shots: [...(log?.shots ?? [])], droppedEntries: log?.dropped ?? 0 };
  }

  drop(branch: string): void {
    const log = this.logs.get(branch);
    if (!log) return;
    this.allShotBytes -= log.shotBytes;
    this.logs.delete(branch);
  }

  /** Every other screenshot goes, counted back from the newest (which stays), and later ones come half as often. */
  private thin(log: BranchLog): void {
    const last = log.shots.length - 1;
    const kept = log.shots.length > 1 ? log.shots.filter((_, i) => (last - i) % 2 === 0) : [];
    const keptBytes = kept.reduce((sum, s) => sum + s.image.length, 0);
    this.allShotBytes -= log.shotBytes - keptBytes;
    log.shots = kept;
    log.shotBytes = keptBytes;
    log.every *= 2;
  }

  private heaviest(): BranchLog {
    return [...this.logs.values()].reduce((a, b) => (b.shotBytes > a.shotBytes ? b : a));
  }

  private logOf(branch: string): BranchLog {
    let log = this.logs.get(branch);
    if (!log) {
      log = { entries: [], shots: [], n: 0, dropped: 0, every: this.limits.shotEvery, sinceShot: 0, shotBytes: 0 };
      this.logs.set(branch, log);
    }
    return log;
  }
}

export interface RecorderDeps {
  /** The branch a call's target names (id or name), if it is there. */
  branchId(ref: string): string | null;
  /** A small picture of the branch's screen now, as a data: URL. */
  screenshot(branch: string): Promise<string>;
  log(msg: string): void;
}

/**
 * Fills a TimelineBook from the helper's events: agents' computer-use actions
 * (desktop.action) and their other audited calls on a branch (audit), and
 * drops a branch's when it goes. One screenshot at a time per branch: one due
 * while another is being taken is skipped.
 */
export class TimelineRecorder {
  private readonly shooting = new Set<string>();

  constructor(
    readonly book: TimelineBook,
    private readonly d: RecorderDeps,
  ) {}

  wants(topic: Topic): boolean {
    return topic === 'desktop.action' || topic === 'audit' || topic === 'workspace.removed';
  }

  deliver(topic: Topic, _seq: number, data: unknown, by: Actor | undefined): void {
    if (topic === 'workspace.removed') return this.book.drop((data as EventPayload<'workspace.removed'>).id);
    if (topic === 'desktop.action') {
      const a = data as EventPayload<'desktop.action'>;
      if (by?.role === 'agent') this.record(a.workspace, { by: maker(by), action: a.action, summary: a.summary, ok: a.ok, at: a.at });
      return;
    }
    const e = data as EventPayload<'audit'>;
    // Computer-use calls are told by their desktop.action, with more to say.
    if (e.actor?.role !== 'agent' || e.target === null || e.action.startsWith('desktop.')) return;
    const branch = this.d.branchId(e.target);
    if (branch === null) return;
    const summary = e.outcome === 'ok' ? e.action : `${e.action}: ${e.detail ?? 'failed'}`;
    this.record(branch, { by: maker(e.actor), action: e.action, summary, ok: e.outcome === 'ok', at: e.at });
  }

  private record(branch: string, entry: Omit<TimelineEntry, 'n'>): void {
    const due = this.book.record(branch, entry);
    if (due === null || this.shooting.has(branch)) return;
    this.shooting.add(branch);
    void this.d
      .screenshot(branch)
      .then((image) => this.book.addShot(branch, { after: due, at: new Date().toISOString(), image }))
      .catch((err: Error) => this.d.log(`timeline: no screenshot of ${branch} after action ${due}: ${err.message}`))
      .finally(() => this.shooting.delete(branch));
  }
}

function maker(a: Actor): TimelineEntry['by'] {
  return { role: a.role, uid: a.uid, user: a.user };
}
