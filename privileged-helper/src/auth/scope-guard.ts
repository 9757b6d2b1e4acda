// An agent's call seen through its scope (scopes.ts): every branch, version
// and request it names must be in its scope, or the call fails as if the
// thing did not exist (E_NOT_FOUND, in the words a missing one gets, so names
// do not leak); lists come back without what lies outside; events about it do
// not reach the agent. Persons' calls never pass through here.
import type { Approval, AuditEntry, Grant } from '../protocol/approvals.js';
import type { EgressLogEntry, PerfReport, SpaceReport, Version, Workspace } from '../protocol/entities.js';
import type { Topic } from '../protocol/events.js';
import type { Actor } from '../protocol/identity.js';
import type { MethodName } from '../protocol/methods.js';
import type { Scope } from '../protocol/scopes.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry } from '../registry/registry.js';
import { appliesTo, type AgentAccount, type AgentView } from './scopes.js';

export interface GuardDeps {
  registry: Registry;
  /** A request by id (throws E_NOT_FOUND when there is none). */
  approval(id: string): Approval;
}

/** Params fields that name a branch, whatever the method. */
interface BranchNaming {
  workspace?: unknown;
  other?: unknown;
  sources?: unknown;
  action?: { sources?: unknown };
  version?: unknown;
  id?: unknown;
}

export class ScopeGuard {
  constructor(
    private readonly d: GuardDeps,
    private readonly view: AgentView,
    private readonly agent: Actor,
    private readonly account: AgentAccount,
  ) {}

  /** Throws unless everything the call names is in the agent's scope. */
  check(method: MethodName, params: BranchNaming): void {
    if (method === 'workspace.create' && !this.view.mayCreate) {
      throw new GroveError(
        'E_FORBIDDEN',
        `a person has not let ${this.agent.user} create workspaces (a person can: grove agents allow ${this.agent.user} --create)`,
      );
    }
    const refs = [params.workspace, params.other, params.sources, params.action?.sources].flat().filter((r): r is string => typeof r === 'string');
    for (const ref of refs) {
      const ws = this.d.registry.findWorkspace(ref);
      if (ws && !this.view.sees(ws)) throw new GroveError('E_NOT_FOUND', `no workspace '${ref}'`);
    }
    if ((method === 'branch.rollback' || method === 'branch.fork') && typeof params.version === 'string') {
      const version = this.d.registry.findVersion(params.version);
      if (version && !this.seesTree(version.treeId)) throw new GroveError('E_NOT_FOUND', `no version '${params.version}'`);
    }
    if (method.startsWith('approval.') && method !== 'approval.create' && typeof params.id === 'string') {
      if (!this.seesTree(this.d.approval(params.id).tree)) throw new GroveError('E_NOT_FOUND', `no request '${params.id}' (it may be long closed)`);
    }
  }

  /** The call's result without what lies outside the scope. */
  filter(method: MethodName, result: unknown): unknown {
    switch (method) {
      case 'workspace.list':
        return (result as Workspace[]).filter((w) => this.view.sees({ treeId: w.tree, image: w.image }));
      case 'version.list':
        return (result as Version[]).filter((v) => this.seesTree(v.tree));
      case 'approval.list':
        return (result as Approval[]).filter((a) => this.seesTree(a.tree));
      case 'grant.list':
        return (result as Grant[]).filter((g) => this.seesTree(g.tree));
      case 'audit.list':
        return (result as AuditEntry[]).filter((e) => this.seesEntry(e));
      case 'egress.log':
        return (result as EgressLogEntry[]).filter((e) => this.seesBranch(e.workspace));
      case 'scope.list':
        return (result as Scope[]).filter((s) => appliesTo(s.subject, this.account));
      case 'perf.get': {
        const r = result as PerfReport;
        return {
          ...r,
          forks: r.forks.filter((f) => this.seesBranch(f.source.id)),
          branches: r.branches.filter((b) => this.seesBranch(b.workspace)),
          // Branches made ahead of forks are nobody's yet.
          prepared: { ...r.prepared, ready: [] },
          standbys: r.standbys.filter((s) => this.seesTree(this.d.registry.findVersion(s.version)?.treeId ?? null)),
        };
      }
      case 'space.get': {
        const r = result as SpaceReport;
        return {
          ...r,
          branches: r.branches.filter((b) => this.seesBranch(b.workspace)),
          versions: r.versions.filter((v) => this.seesTree(this.d.registry.findVersion(v.version)?.treeId ?? null)),
          forkPoints: r.forkPoints.filter((f) => this.seesBranch(f.source)),
        };
      }
      default:
        return result;
    }
  }

  /** Whether an event may reach the agent. */
  allows(topic: Topic, data: unknown): boolean {
    switch (topic) {
      case 'workspace.changed': {
        const w = (data as { workspace: Workspace }).workspace;
        return this.view.sees({ treeId: w.tree, image: w.image });
      }
      case 'version.changed':
        return this.seesTree((data as { version: Version }).version.tree);
      case 'approval.opened':
      case 'approval.changed':
        return this.seesTree((data as Approval).tree);
      case 'grant.changed':
        return this.seesTree((data as { grant: Grant }).grant.tree);
      case 'audit':
        return this.seesEntry(data as AuditEntry);
      case 'desktop.action':
      case 'egress.decision':
        return this.seesBranch((data as { workspace: string }).workspace);
      case 'progress': {
        const p = data as { image?: string; workspace?: string };
        return p.image !== undefined || (p.workspace !== undefined && this.seesBranch(p.workspace));
      }
      default:
        return true; // an id that went, the pool's space, the agent's own terminals
    }
  }

  private seesBranch(ref: string): boolean {
    const ws = this.d.registry.findWorkspace(ref);
    return ws !== null && this.view.sees(ws);
  }

  /** A workspace by its tree id: given as a whole, or a branch of it has an image given. */
  private seesTree(treeId: string | null): boolean {
    if (treeId === null) return false;
    if (this.view.trees.has(treeId)) return true;
    return this.view.images.size > 0 && this.d.registry.listWorkspaces().some((w) => w.treeId === treeId && this.view.images.has(w.image));
  }

  /** The agent's own calls, and calls about branches in its scope. */
  private seesEntry(e: AuditEntry): boolean {
    return (e.actor?.role === 'agent' && e.actor.uid === this.agent.uid) || (e.target !== null && this.seesBranch(e.target));
  }
}
