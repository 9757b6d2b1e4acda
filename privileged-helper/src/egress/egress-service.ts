// Egress, the API side: each branch's policy (stored in the registry, inherited
// by forks), its firewall's drop counters and the log. (Held requests wait in
// the approvals queue: approvals/.)
import type { NetPlan } from '../host/netns.js';
import type { EgressChange, EgressLogEntry, EgressPolicy, EgressRule, EgressStatus } from '../protocol/entities.js';
import type { Actor } from '../protocol/identity.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import { readDropCounters } from './counters.js';
import type { EgressGate } from './gate.js';
import { editAllowList } from './policy.js';

export class EgressService {
  constructor(
    private readonly registry: Registry,
    readonly gate: EgressGate,
    private readonly netPlan: (ws: WorkspaceRecord) => NetPlan,
  ) {}

  policy(ws: WorkspaceRecord): EgressPolicy {
    return this.registry.egressPolicy(ws.id);
  }

  /** Changes one branch's policy (never its source's or children's); held requests are decided again. */
  set(ws: WorkspaceRecord, change: EgressChange, actor: Actor): EgressPolicy {
    const current = this.registry.egressPolicy(ws.id);
    const next: EgressPolicy = {
      mode: change.mode ?? current.mode,
      holdMutating: change.holdMutating ?? current.holdMutating,
      allow: editAllowList(current.allow, (change.allow ?? []).map(lower), (change.remove ?? []).map(lower)),
    };
    this.registry.setEgressPolicy(ws.id, next);
    void this.gate.reevaluate(ws.id, actor);
    return next;
  }

  /** A fork's child starts with a copy of its source's policy: call in the fork's prepare, after reserve. */
  inheritPolicy(parentId: string, childId: string): void {
    this.registry.copyEgressPolicy(parentId, childId);
  }

  async status(ws: WorkspaceRecord): Promise<EgressStatus> {
    return {
      workspace: ws.id,
      policy: this.registry.egressPolicy(ws.id),
      dropped: await readDropCounters(this.netPlan(ws).netns),
    };
  }

  log(workspaceId: string | null, limit = 500): EgressLogEntry[] {
    return this.registry.egressLog(workspaceId, limit);
  }
}

const lower = (r: EgressRule): EgressRule => (r.port === undefined ? { host: r.host.toLowerCase() } : { host: r.host.toLowerCase(), port: r.port });
