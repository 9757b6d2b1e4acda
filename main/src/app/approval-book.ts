// The approvals queue as the app keeps it: open requests (pending, or approved
// and being carried out), the ones it saw close lately, and the standing
// approvals (grants). Open requests and grants are read with approval.list and
// grant.list after every (re)connect and kept live from the helper's approval.*
// and grant.changed events in between; the history comes from those events.
import { MAX_DECIDED, OPEN_STATES, type Approval, type ApprovalState, type Grant } from '../api/contract.js';

export class ApprovalBook {
  private open = new Map<string, Approval>();
  /** Newest decision first, without thumbnails: a history, not something to decide on. */
  private decided: Approval[] = [];
  private grants = new Map<string, Grant>();

  /** What the helper holds open now, and its grants, replace what was known; the history is the app's own and stays. */
  reset(open: readonly Approval[], grants: readonly Grant[]): void {
    this.open = new Map(open.map((a) => [a.id, a]));
    this.grants = new Map(grants.map((g) => [g.id, g]));
  }

  /**
   * Takes a request as the helper reports it and answers the state the app
   * knew it in (null: new to the app). A closed request never opens again: an
   * older report of it that arrives late changes nothing.
   */
  apply(a: Approval): ApprovalState | null {
    const before = this.get(a.id)?.state ?? null;
    if (before !== null && !OPEN_STATES.has(before) && isOpen(a)) return before;
    if (isOpen(a)) {
      this.open.set(a.id, a);
    } else {
      this.open.delete(a.id);
      this.remember(a);
    }
    return before;
  }

  get(id: string): Approval | undefined {
    return this.open.get(id) ?? this.decided.find((a) => a.id === id);
  }

  /** The helper no longer knows it (decided elsewhere, timed out): the queue must not keep showing it. */
  drop(id: string): void {
    this.open.delete(id);
  }

  grant(g: Grant, revoked: boolean): void {
    if (revoked) this.grants.delete(g.id);
    else this.grants.set(g.id, g);
  }

  grantById(id: string): Grant | undefined {
    return this.grants.get(id);
  }

  snapshot(): { approvals: Approval[]; decided: Approval[]; grants: Grant[] } {
    return {
      approvals: [...this.open.values()].sort((a, b) => a.at.localeCompare(b.at) || a.id.localeCompare(b.id)),
      decided: this.decided,
      grants: [...this.grants.values()].sort((a, b) => a.treeName.localeCompare(b.treeName) || a.kind.localeCompare(b.kind)),
    };
  }

  private remember(a: Approval): void {
    const kept = { ...a, preview: { ...a.preview, thumbnail: null } };
    this.decided = [kept, ...this.decided.filter((d) => d.id !== a.id)].sort((x, y) => closedAt(y).localeCompare(closedAt(x))).slice(0, MAX_DECIDED);
  }
}

function isOpen(a: Approval): boolean {
  return OPEN_STATES.has(a.state);
}

/** When it was decided (by a person, a grant or the helper); one that timed out, when its time ran out. */
function closedAt(a: Approval): string {
  return a.decision?.at ?? a.expiresAt;
}
