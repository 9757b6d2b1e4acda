// One handler per method of the contract. The connection has already validated
// params against the method's schema; the handler's result is validated on the
// way out, so the contract holds in both directions.
import type { ExecService } from '../exec/exec-service.js';
import type { ImageBuilder } from '../images/image-builder.js';
import type { MethodName, Params, Result } from '../protocol/methods.js';
import type { Registry } from '../registry/registry.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { Doctor } from '../host/doctor.js';
import { diffTrees } from '../branches/diff.js';
import type { ForkService } from '../branches/fork.js';
import type { PromoteService } from '../branches/promote.js';
import type { VersionService } from '../branches/versions.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { BranchStorage } from '../workspaces/branch-storage.js';
import { GroveError } from '../protocol/wire.js';
import type { EventBus, EventListener } from './event-bus.js';
import type { EgressService } from '../egress/egress-service.js';
import type { PerfService } from '../perf/perf-service.js';
import { ID_PATTERN } from '../protocol/names.js';

export interface Services {
  registry: Registry;
  bus: EventBus;
  images: ImageBuilder;
  workspaces: WorkspaceService;
  exec: ExecService;
  doctor: Doctor;
  runtime: BranchRuntime;
  storage: BranchStorage;
  forks: ForkService;
  versions: VersionService;
  promotions: PromoteService;
  egress: EgressService;
  perf: PerfService;
}

export interface CallContext {
  /** Identifies the connection: owner of its terminal sessions and its event listener. */
  connection: EventListener;
  /** Who asked, for the audit log: the client's declared name and kind. */
  actor: string;
}

type Handler<M extends MethodName> = (params: Params<M>, ctx: CallContext) => Promise<Result<M>>;
export type Handlers = { [M in Exclude<MethodName, 'hello' | 'events.subscribe'>]: Handler<M> };

export function createHandlers(s: Services): Handlers {
  return {
    'host.doctor': () => s.doctor.report(),
    'image.list': async () => s.images.list(),
    'image.build': async (p) => {
      const job = `image-build-${p.name}-${Date.now()}`;
      return s.images.build(p.name, { rebuild: p.rebuild ?? false }, (stage, message) =>
        s.bus.broadcast('progress', { job, stage, message, done: stage === 'done' || stage === 'cached', image: p.name }),
      );
    },
    'workspace.create': (p) => s.workspaces.create(p),
    'workspace.list': async () => s.workspaces.list(),
    'workspace.get': async (p) => s.workspaces.get(p.workspace),
    'workspace.start': (p) => s.workspaces.start(p.workspace),
    'workspace.stop': (p) => s.workspaces.stop(p.workspace),
    'workspace.delete': (p) => s.workspaces.delete(p.workspace),
    'branch.fork': (p) => s.forks.fork(p.workspace, { copies: p.copies, names: p.names, faultAt: p.faultAt }),
    'branch.checkpoint': (p) => s.versions.checkpoint(p.workspace, p.label),
    'branch.rollback': (p) => s.versions.rollback(p.workspace, p.version),
    'branch.promote': (p) => s.promotions.promote(p.workspace, p.oldMain ?? 'version'),
    'branch.diff': async (p) => {
      const to = s.workspaces.record(p.workspace);
      const fromRef = p.other ?? to.parentId;
      if (fromRef === null) throw new GroveError('E_PRECONDITION', `'${to.name}' has no parent: name the branch to compare it with`);
      const from = s.workspaces.record(fromRef);
      return diffTrees(await s.storage.ensureMounted(from), await s.storage.ensureMounted(to));
    },
    'version.list': async (p) => s.versions.list(p.workspace),
    'version.delete': async (p) => {
      await s.versions.delete(p.version);
      return { deleted: p.version };
    },
    'exec.run': async (p) => {
      const ws = s.workspaces.running(p.workspace);
      return s.exec.run({ pid: ws.pid!, pidStart: ws.pidStart }, p);
    },
    'exec.open': async (p, ctx) => {
      const ws = s.workspaces.running(p.workspace);
      const session = await s.exec.open({ pid: ws.pid!, pidStart: ws.pidStart }, p, ctx.connection, {
        output: (id, data) => s.bus.unicast(ctx.connection, 'exec.output', { session: id, data }),
        exit: (id, exitCode, signal) => s.bus.unicast(ctx.connection, 'exec.exit', { session: id, exitCode, signal }),
      });
      return { session };
    },
    'exec.write': async (p, ctx) => {
      s.exec.write(p.session, ctx.connection, p.data);
      return {};
    },
    'exec.resize': async (p, ctx) => {
      await s.exec.resize(p.session, ctx.connection, p.cols, p.rows);
      return {};
    },
    'exec.close': async (p, ctx) => {
      s.exec.close(p.session, ctx.connection);
      return {};
    },
    'egress.status': (p) => s.egress.status(s.workspaces.record(p.workspace)),
    'egress.set': async (p, ctx) =>
      s.egress.set(s.workspaces.record(p.workspace), { mode: p.mode, holdMutating: p.holdMutating, allow: p.allow, remove: p.remove }, ctx.actor),
    'egress.pending': async (p) => s.egress.pending(p.workspace === undefined ? null : s.workspaces.record(p.workspace)),
    'egress.approve': async (p, ctx) => s.egress.approve(p.request, ctx.actor, p.always ?? false),
    'egress.deny': async (p, ctx) => s.egress.deny(p.request, ctx.actor),
    'egress.log': async (p) => {
      if (p.workspace === undefined) return s.egress.log(null, p.limit);
      // The log outlives its branches: a removed branch is still found by its id.
      const found = s.registry.findWorkspace(p.workspace);
      if (!found && !ID_PATTERN.test(p.workspace)) throw new GroveError('E_NOT_FOUND', `no workspace '${p.workspace}'`);
      return s.egress.log(found?.id ?? p.workspace, p.limit);
    },
    'perf.get': () => s.perf.report(),
  };
}

/** Methods whose calls are recorded in the audit log (they change something). */
export const AUDITED: ReadonlySet<MethodName> = new Set([
  'image.build',
  'workspace.create',
  'workspace.start',
  'workspace.stop',
  'workspace.delete',
  'exec.run',
  'exec.open',
  'branch.fork',
  'branch.checkpoint',
  'branch.rollback',
  'branch.promote',
  'version.delete',
  'egress.set',
  'egress.approve',
  'egress.deny',
]);
