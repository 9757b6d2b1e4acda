// Who did what: every call that changes something (and every request an agent
// had a person approve) is written to the registry's audit table with the
// kernel-derived identity of its caller, and published as an `audit` event.
import type { AuditEntry } from '../protocol/approvals.js';
import type { Actor } from '../protocol/identity.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';

export class AuditLog {
  constructor(
    private readonly registry: Registry,
    private readonly publish: (entry: AuditEntry) => void,
    private readonly log: (msg: string) => void,
  ) {}

  record(actor: Actor | null, action: string, target: string | null, outcome: 'ok' | 'error', detail: string | null): void {
    try {
      this.publish(this.registry.audit({ actor, action, target, outcome, detail }));
    } catch (err) {
      // An audit failure (e.g. a full disk) must not turn a done call into a failed one; it is logged loudly.
      this.log(`audit: cannot record ${action} on ${target ?? '-'} by ${actor?.user ?? 'helper'}: ${(err as Error).message}`);
    }
  }

  /** The newest entries, about one branch (by its id or name) or all. */
  list(branch: WorkspaceRecord | null, limit: number): AuditEntry[] {
    return this.registry.auditLog(branch ? [branch.id, branch.name] : null, limit);
  }
}
