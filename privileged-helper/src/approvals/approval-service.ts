// Agents' requests and persons' decisions, for the handlers: an agent asks for
// what only a person may do (promote, discard or stop a branch, change its
// outside access, merge into a branch not its own) with a reason; the request waits in the approvals queue with
// a preview, unless a person granted that kind for the workspace beforehand;
// a person approves (it is carried out then, in the helper) or denies it.
import { randomBytes } from 'node:crypto';
import type { AuditLog } from '../audit/audit-log.js';
import type { MergeService } from '../branches/merge.js';
import type { Exporter } from '../files/export.js';
import type { PromoteService } from '../branches/promote.js';
import type { VersionService } from '../branches/versions.js';
import type { EgressService } from '../egress/egress-service.js';
import { describeEgressChange } from '../protocol/egress-rules.js';
import type { AgentRequestAction, AgentRequestKind, Approval, Grant } from '../protocol/approvals.js';
import { describeActor, type Actor } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { GrantRecord, Registry, WorkspaceRecord } from '../registry/registry.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { ApprovalQueue, Decision } from './approval-queue.js';
import type { PreviewMaker } from './preview.js';

export interface ApprovalDeps {
  registry: Registry;
  queue: ApprovalQueue;
  workspaces: WorkspaceService;
  promotions: PromoteService;
  versions: VersionService;
  merges: MergeService;
  exporter: Exporter;
  egress: EgressService;
  previews: PreviewMaker;
  audit: AuditLog;
  defaultTimeoutMs: number;
  grantChanged(grant: Grant, revoked: boolean): void;
}

/** The method an approved request runs as (the audit log names it so). */
const METHOD_OF: Record<AgentRequestKind, string> = {
  'branch.promote': 'branch.promote',
  'branch.discard': 'workspace.delete',
  'workspace.stop': 'workspace.stop',
  'egress.policy': 'egress.set',
  'branch.merge': 'branch.merge',
  'branch.rollback': 'branch.rollback',
  'branch.export': 'branch.export',
};

export class ApprovalService {
  constructor(private readonly d: ApprovalDeps) {}

  async create(actor: Actor, ws: WorkspaceRecord, action: AgentRequestAction, reason: string, timeoutS?: number): Promise<Approval> {
    this.check(ws, action);
    const same = this.d.queue.openOf(
      (a) => a.workspace === ws.id && a.requestedBy?.uid === actor.uid && a.state === 'pending' && JSON.stringify(a.action) === JSON.stringify(action),
    );
    if (same[0]) return same[0]; // an agent that asks again gets its waiting request back
    const opened = this.d.queue.open({
      action,
      branch: { id: ws.id, name: ws.name, treeId: ws.treeId },
      requestedBy: actor,
      reason,
      effect: this.effect(ws, action),
      preview: await this.d.previews.make(ws, action),
      timeoutMs: timeoutS === undefined ? this.d.defaultTimeoutMs : timeoutS * 1000,
      carryOut: (decision) => this.carryOut(ws.id, action, actor, decision),
    });
    const grant = this.d.registry.findGrant(ws.treeId, action.kind);
    return grant ? this.d.queue.approve(opened.id, grant.grantedBy, { grant: grant.id, note: 'a standing approval for this workspace' }) : opened;
  }

  list(ws: WorkspaceRecord | null, all: boolean): Approval[] {
    return this.d.queue.list({ workspace: ws?.id, all });
  }

  get(id: string): Approval {
    return this.d.queue.get(id);
  }

  wait(id: string, ms: number): Promise<Approval> {
    return this.d.queue.wait(id, ms);
  }

  withdraw(id: string, actor: Actor): Approval {
    return this.d.queue.withdraw(id, actor);
  }

  approve(id: string, actor: Actor, opts: { always: boolean; note: string | null }): Promise<Approval> {
    return this.d.queue.approve(id, actor, opts);
  }

  deny(id: string, actor: Actor, note: string | null): Approval {
    return this.d.queue.deny(id, actor, note);
  }

  grants(ws: WorkspaceRecord | null): Grant[] {
    return this.d.registry.grants(ws?.treeId).map((g) => this.view(g));
  }

  /** Agents may now do `kind` anywhere in the workspace without asking; its waiting requests of that kind are approved too. */
  async grant(actor: Actor, ws: WorkspaceRecord, kind: AgentRequestKind): Promise<Grant> {
    const record = this.d.registry.putGrant({
      id: `g${randomBytes(4).toString('hex')}`,
      treeId: ws.treeId,
      kind,
      grantedBy: actor,
      at: new Date().toISOString(),
    });
    const grant = this.view(record);
    this.d.grantChanged(grant, false);
    const waiting = this.d.queue.openOf((a) => a.tree === ws.treeId && a.action.kind === kind && a.state === 'pending');
    for (const a of waiting) await this.d.queue.approve(a.id, actor, { grant: record.id, note: 'approved by a new standing approval' });
    return grant;
  }

  revoke(_actor: Actor, id: string): Grant {
    const record = this.d.registry.grants().find((g) => g.id === id);
    if (!record) throw new GroveError('E_NOT_FOUND', `no grant '${id}'`);
    this.d.registry.deleteGrant(id);
    const grant = this.view(record);
    this.d.grantChanged(grant, true);
    return grant;
  }

  /** Refuses now what could never be carried out, rather than after a person approved it. */
  private check(ws: WorkspaceRecord, action: AgentRequestAction): void {
    if (action.kind === 'branch.promote' && ws.isMain) throw new GroveError('E_CONFLICT', `'${ws.name}' is the main line already`);
    if (action.kind === 'branch.promote' && ws.state !== 'running')
      throw new GroveError('E_CONFLICT', `only a running branch can be promoted; '${ws.name}' is ${ws.state}`);
    if (action.kind === 'workspace.stop' && ws.state !== 'running') throw new GroveError('E_CONFLICT', `'${ws.name}' is ${ws.state} already`);
    if (action.kind === 'branch.merge' && ws.state !== 'running')
      throw new GroveError('E_CONFLICT', `only a live branch can be merged into; '${ws.name}' is ${ws.state}`);
    if (action.kind === 'branch.rollback') {
      const version = this.d.registry.listVersions(ws.treeId).find((v) => v.id === action.version);
      if (!version) throw new GroveError('E_NOT_FOUND', `no version '${action.version}' of ${ws.name}'s workspace`);
    }
    if (action.kind === 'branch.export' && ws.state !== 'running')
      throw new GroveError('E_CONFLICT', `only a live branch can be exported; '${ws.name}' is ${ws.state}`);
    if (action.kind === 'egress.policy' && describeEgressChange(action.change) === 'no change') {
      throw new GroveError('E_INVALID_PARAMS', 'the requested change of outside access changes nothing');
    }
  }

  private effect(ws: WorkspaceRecord, action: AgentRequestAction): string {
    switch (action.kind) {
      case 'branch.promote': {
        const main = this.d.registry.listWorkspaces().find((w) => w.treeId === ws.treeId && w.isMain);
        const fate = { version: 'is checkpointed as a version and removed', discard: 'is discarded', keep: 'keeps running as a branch' }[
          action.oldMain ?? 'version'
        ];
        return `${ws.name} becomes the main line and takes over its stable host ports and desktop socket; the main line now${main ? ` (${main.name})` : ''} ${fate}`;
      }
      case 'branch.discard':
        return `${ws.name} is removed for good, with its processes and files (its versions are kept)`;
      case 'workspace.stop':
        return `${ws.name}'s processes end; its files are kept and a person can start it again`;
      case 'egress.policy':
        return `${ws.name}'s outside access changes: ${describeEgressChange(action.change)}`;
      case 'branch.merge':
        return `what ${action.sources.join(', ')} changed comes into ${ws.name}${action.all ? '' : "'s project"}, file by file, while it runs; it is checkpointed first`;
      case 'branch.rollback':
        return `${ws.name} returns to version ${action.version}: its processes and files as they were then; what it did since is lost unless checkpointed`;
      case 'branch.export':
        return `what ${ws.name} changed in its project${action.since ? ` since version ${action.since}` : ''} becomes one commit on a new branch ${action.branch} of ${action.repo}, written by the person who approves (it must be their repository)`;
    }
  }

  /** Runs an approved request as the helper, audited in the name of the agent that asked. */
  private async carryOut(branchId: string, action: AgentRequestAction, asker: Actor, decision: Decision): Promise<string> {
    const method = METHOD_OF[action.kind];
    const approvedBy = `approved by ${decision.by ? describeActor(decision.by) : 'the helper'}${decision.grant ? ` (grant ${decision.grant})` : ''}`;
    try {
      const outcome = await this.run(this.d.workspaces.record(branchId), action, decision);
      // A person decided about this branch: it is theirs from now on (auth/authority.ts), if it is still there.
      if (decision.by?.role === 'person') this.d.registry.claimWorkspace(branchId, decision.by);
      this.d.audit.record(asker, method, branchId, 'ok', approvedBy);
      return outcome;
    } catch (err) {
      this.d.audit.record(asker, method, branchId, 'error', `${approvedBy}; failed: ${(err as Error).message}`);
      throw err;
    }
  }

  private async run(ws: WorkspaceRecord, action: AgentRequestAction, decision: Decision): Promise<string> {
    switch (action.kind) {
      case 'branch.promote':
        await this.d.promotions.promote(ws.id, action.oldMain ?? 'version');
        return `${ws.name} is now the main line`;
      case 'branch.discard':
        await this.d.workspaces.delete(ws.id);
        return `${ws.name} was discarded`;
      case 'workspace.stop':
        await this.d.workspaces.stop(ws.id);
        return `${ws.name} was stopped`;
      case 'egress.policy': {
        const policy = this.d.egress.set(ws, action.change, decision.by!);
        return `${ws.name}'s outside access: mode ${policy.mode}, ${policy.allow.length} allowed destination(s)`;
      }
      case 'branch.merge': {
        const r = await this.d.merges.merge({ workspace: ws.id, sources: action.sources, take: action.take, all: action.all });
        if (!r.merged)
          throw new GroveError(
            'E_CONFLICT',
            `nothing was merged: ${r.conflicts.length} conflict(s) (${r.conflicts.map((c) => c.path).join(', ')}); ask again with take settling each`,
          );
        return r.version ? `merged ${r.changes.length} file(s) into ${ws.name}; before it is version ${r.version}` : `nothing to merge into ${ws.name}`;
      }
      case 'branch.rollback': {
        const w = await this.d.versions.rollback(ws.id, action.version);
        return `${w.name} is back at version ${action.version}`;
      }
      case 'branch.export': {
        const { kind: _, ...params } = action;
        const r = await this.d.exporter.exportApproved(ws.id, params, decision.by!);
        return `commit ${r.commit} on ${r.parent.slice(0, 12)} is branch ${action.branch} of ${action.repo}, ${r.files} file(s)`;
      }
    }
  }

  private view(g: GrantRecord): Grant {
    const main = this.d.registry.listWorkspaces().find((w) => w.treeId === g.treeId && w.isMain);
    return { id: g.id, tree: g.treeId, treeName: main?.name ?? g.treeId, kind: g.kind, grantedBy: g.grantedBy, at: g.at };
  }
}
