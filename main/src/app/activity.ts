// The app's activity log: what was done in this app and what the helper
// reported, each with who did it as the helper identified them. Bounded; the
// same thing done again and again (an agent clicking through a page, a script
// running commands) folds into one entry with a count, so a busy agent cannot
// push everything else out.
import type { ActivityEntry, Actor } from '../api/contract.js';
import { isSelf } from '../api/words.js';

const MAX_ACTIVITY = 500;
/** A repeat folds into the newest entry when it comes within this long of it. */
const FOLD_WINDOW_MS = 60_000;

export type Who = Pick<ActivityEntry, 'actor' | 'who'>;

export const YOU: Who = { actor: 'you', who: null };
export const HELPER: Who = { actor: 'helper', who: null };
export const CONTROLLER: Who = { actor: 'controller', who: null };

/** Who an identity the helper reported is, from this app's point of view; no identity: the helper acted by itself. */
export function attribute(by: Actor | null | undefined, self: Actor | null): Who {
  if (!by) return HELPER;
  if (isSelf(by, self)) return YOU;
  return { actor: by.role, who: { role: by.role, uid: by.uid, user: by.user } };
}

export class ActivityLog {
  private list: ActivityEntry[] = [];
  private seq = 0;

  get entries(): ActivityEntry[] {
    return this.list;
  }

  add(who: Who, action: string, target: string | null, outcome: ActivityEntry['outcome'], detail: string): void {
    const at = new Date().toISOString();
    const last = this.list.at(-1);
    if (last && isRepeat(last, who, action, target, outcome) && Date.parse(at) - Date.parse(last.at) < FOLD_WINDOW_MS) {
      this.list = [...this.list.slice(0, -1), { ...last, at, detail, count: last.count + 1 }];
      return;
    }
    this.list = [...this.list, { seq: ++this.seq, at, ...who, action, target, outcome, detail, count: 1 }].slice(-MAX_ACTIVITY);
  }
}

function isRepeat(e: ActivityEntry, who: Who, action: string, target: string | null, outcome: ActivityEntry['outcome']): boolean {
  return e.actor === who.actor && e.who?.uid === who.who?.uid && e.action === action && e.target === target && e.outcome === outcome;
}
