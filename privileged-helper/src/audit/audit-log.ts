// Who did what: every call that changes something (and every request an agent
// had a person approve) is written to the registry's audit table with the
// kernel-derived identity of its caller, and published as an `audit` event.
// The log is kept within its retention (rows and days): pruned when opened and
// with every entry written, so it never grows past its bounds between restarts.
import type { AuditEntry } from '../protocol/approvals.js';
import type { Actor } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { AuditFilter, AuditRetention, Registry } from '../registry/registry.js';

export class AuditLog {
  constructor(
    private readonly registry: Registry,
    private readonly publish: (entry: AuditEntry) => void,
    private readonly log: (msg: string) => void,
    private readonly retention: AuditRetention,
  ) {
    try {
      const dropped = registry.pruneAudit(retention);
      if (dropped > 0) log(`audit: dropped ${dropped} entries beyond ${retention.maxRows} rows or ${retention.maxDays} days`);
    } catch (err) {
      this.log(`audit: cannot prune: ${(err as Error).message}`);
    }
  }

  record(actor: Actor | null, action: string, target: string | null, outcome: 'ok' | 'error', detail: string | null): void {
    try {
      const entry = this.registry.transaction(() => {
        const written = this.registry.audit({ actor, action, target, outcome, detail });
        this.registry.pruneAudit(this.retention);
        return written;
      });
      this.publish(entry);
    } catch (err) {
      // An audit failure (e.g. a full disk) must not turn a done call into a failed one; it is logged loudly.
      this.log(`audit: cannot record ${action} on ${target ?? '-'} by ${actor?.user ?? 'helper'}: ${(err as Error).message}`);
    }
  }

  /** The newest entries matching `filter`, about one branch (by id or name) or all, oldest first. */
  list(ref: string | undefined, limit: number, filter: AuditFilter = {}): AuditEntry[] {
    const since = filter.since === undefined ? undefined : storedTime(filter.since);
    const until = filter.until === undefined ? undefined : storedTime(filter.until);
    return this.registry.auditLog(ref === undefined ? null : this.targetsOf(ref), limit, { ...filter, since, until });
  }

  /**
   * What entries about a branch name as their target: its id and its name. The
   * log outlives the branch, so a removed one is still found by the id or name
   * its calls named it by.
   */
  private targetsOf(ref: string): string[] {
    const ws = this.registry.findWorkspace(ref);
    if (ws) return [ws.id, ws.name];
    if (!this.registry.auditNames(ref)) throw new GroveError('E_NOT_FOUND', `no workspace '${ref}', and no audit entry names it`);
    return [ref];
  }
}

/** Entries store their time as toISOString() does (UTC, milliseconds), so times are compared in that form. */
function storedTime(iso: string): string {
  return new Date(iso).toISOString();
}
