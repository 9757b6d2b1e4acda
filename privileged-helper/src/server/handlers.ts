// One handler per method of the contract. The connection has already validated
// params against the method's schema; the handler's result is validated on the
// way out, so the contract holds in both directions.
import type { TimelineBook } from '../desktop/timeline.js';
import type { ExecService } from '../exec/exec-service.js';
import type { ImageService } from '../images/image-service.js';
import type { FileCopy } from '../files/file-copy.js';
import type { Exporter } from '../files/export.js';
import { DEFAULT_PROJECT_PATH, projectOrigin } from '../files/project.js';
import type { MethodName, Params, Result } from '../protocol/methods.js';
import type { Registry } from '../registry/registry.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { Doctor } from '../host/doctor.js';
import { diffTrees } from '../branches/diff.js';
import { Noise } from '../branches/noise.js';
import type { ForkService } from '../branches/fork.js';
import type { PromoteService } from '../branches/promote.js';
import type { MergeService } from '../branches/merge.js';
import type { VersionService } from '../branches/versions.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { BranchStorage } from '../workspaces/branch-storage.js';
import { GroveError } from '../protocol/wire.js';
import { requestedFault } from '../workspaces/faults.js';
import type { EventBus, EventListener } from './event-bus.js';
import type { EgressService } from '../egress/egress-service.js';
import type { StandbyService } from '../branches/standby.js';
import type { PerfService } from '../perf/perf-service.js';
import type { SpaceService } from '../space/space-service.js';
import { ID_PATTERN } from '../protocol/names.js';
import type { Actor } from '../protocol/identity.js';
import { versionsFate, type AuthorityLookup } from '../auth/authority.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { DesktopService } from '../desktop/desktop-service.js';
import type { DesktopTarget } from '../desktop/session-pool.js';
import { downloadFile, uploadFile } from '../files/transfer.js';
import type { ScopeBook } from '../auth/scopes.js';
import { ensureStreamTls } from '../stream/stream-tls.js';

export interface Services {
  registry: Registry;
  bus: EventBus;
  images: ImageService;
  files: FileCopy;
  exporter: Exporter;
  workspaces: WorkspaceService;
  exec: ExecService;
  doctor: Doctor;
  runtime: BranchRuntime;
  storage: BranchStorage;
  forks: ForkService;
  versions: VersionService;
  promotions: PromoteService;
  merges: MergeService;
  egress: EgressService;
  perf: PerfService;
  standbys: StandbyService;
  space: SpaceService;
  approvals: ApprovalService;
  audit: AuditLog;
  desktop: DesktopService;
  /** What agents did in each branch ("what it did" on a request). */
  timeline: TimelineBook;
  authority: AuthorityLookup;
  scopes: ScopeBook;
  /** Where the stream's CA and host certificate are kept (stream/stream-tls.ts). */
  streamTlsDir: string;
  /** Whether requests may inject faults (tests of the transactions: workspaces/faults.ts). */
  allowFaultInjection: boolean;
}

export interface CallContext {
  /** Identifies the connection: owner of its terminal sessions and its event listener. */
  connection: EventListener;
  /** Who asked: from the kernel's peer credentials of the connection. */
  actor: Actor;
}

type Handler<M extends MethodName> = (params: Params<M>, ctx: CallContext) => Promise<Result<M>>;
export type Handlers = { [M in Exclude<MethodName, 'hello' | 'events.subscribe'>]: Handler<M> };

export function createHandlers(s: Services): Handlers {
  /** An image operation's progress events: each line of its tools' output, the last one done. */
  const imageProgress = (image: string, kind: string) => {
    const job = `image-${kind}-${image}-${Date.now()}`;
    return (stage: string, message: string) => s.bus.broadcast('progress', { job, stage, message, done: stage === 'done' || stage === 'cached', image });
  };
  /** A copy's progress events, at most two a second. */
  const copyProgress = (workspace: string, what: string) => {
    const job = `copy-${workspace}-${Date.now()}`;
    return (bytes: number, total: number | null) =>
      s.bus.broadcast('progress', {
        job,
        stage: 'copy',
        message: `${what}: ${mibText(bytes)}${total === null ? '' : ` of ${mibText(total)}`} copied`,
        done: false,
        workspace,
      });
  };
  const desktop = (ref: string): DesktopTarget => s.runtime.desktopTarget(s.workspaces.running(ref));
  const fault = <S extends string>(p: { faultAt?: S; crash?: boolean }) => requestedFault(s.allowFaultInjection, p);
  const branchOrNull = (ref: string | undefined) => (ref === undefined ? null : s.workspaces.record(ref));
  const createWorkspace = async ({ project, ...p }: Params<'workspace.create'>, actor: Actor) => {
    if (!project) return s.workspaces.create(p, actor);
    // The project is looked at (and room for it checked) before anything is made.
    const origin = await projectOrigin(actor, project.hostPath, project.path ?? DEFAULT_PROJECT_PATH, s.storage.workspacesDir);
    return s.workspaces.create(p, actor, async (ws) => {
      await s.files.copyIn(
        s.runtime.execTarget(ws),
        { branch: ws.name, from: origin.hostPath, to: origin.path, as: true },
        actor,
        copyProgress(ws.name, origin.hostPath),
      );
      s.registry.setProject(ws.treeId, origin);
    });
  };
  return {
    'host.doctor': () => s.doctor.report(),
    'image.list': async () => s.images.list(),
    'image.build': (p, ctx) => s.images.build(p, ctx.actor, imageProgress(p.name, 'build')),
    'image.pull': ({ credentials, ...p }, ctx) => s.images.pull({ ...p, credentials }, ctx.actor, imageProgress(p.name, 'pull')),
    'image.push': ({ credentials, ...p }) => s.images.push({ ...p, credentials }, imageProgress(p.name, 'push')),
    'image.remove': async (p) => {
      await s.images.remove(p.name);
      return { removed: p.name };
    },
    'workspace.create': async (p, ctx) => {
      const ws = await createWorkspace(p, ctx.actor);
      // One an agent created (a person let it: auth/scope-guard.ts) is its own, in its scope.
      if (ctx.actor.role === 'agent') s.scopes.own(ctx.actor, ws.tree);
      return ws;
    },
    'workspace.list': async () => s.workspaces.list(),
    'workspace.get': async (p) => s.workspaces.get(p.workspace),
    'workspace.start': (p) => s.workspaces.start(p.workspace),
    'workspace.stop': (p) => s.workspaces.stop(p.workspace),
    'workspace.delete': async (p, ctx) => {
      const fate = versionsFate(ctx.actor, p.versions);
      const { id, treeId } = s.workspaces.record(p.workspace);
      const { deleted } = await s.workspaces.delete(id, fault(p));
      const versions = await s.versions.settleOrphans(treeId, fate);
      return versions ? { deleted, versions } : { deleted };
    },
    'workspace.limits': ({ workspace, ...change }) => s.workspaces.setLimits(workspace, change),
    'branch.fork': (p, ctx) => s.forks.fork(p.workspace, { copies: p.copies, names: p.names, version: p.version, fault: fault(p), madeBy: ctx.actor }),
    'branch.checkpoint': (p) => s.versions.checkpoint(p.workspace, p.label, fault(p)),
    'branch.rollback': (p) => s.versions.rollback(p.workspace, p.version, { keep: p.keep === true, fault: fault(p) }),
    'branch.promote': (p) => s.promotions.promote(p.workspace, p.oldMain ?? 'version', fault(p)),
    'branch.pick': (p) => s.promotions.pick(p.workspace, p.others, p.losers, p.oldMain ?? 'version', fault(p)),
    'branch.diff': async (p) => {
      const to = s.workspaces.record(p.workspace);
      const fromRef = p.other ?? to.parentId;
      if (fromRef === null) throw new GroveError('E_PRECONDITION', `'${to.name}' has no parent: name the branch to compare it with`);
      const from = s.workspaces.record(fromRef);
      // Read turns of both (by id, as promote takes its two): no rollback unmounts either while the diff reads it.
      const [first, second] = [from.id, to.id].sort();
      return s.workspaces.lock.read(first!, () =>
        s.workspaces.lock.read(second!, async () => {
          const root = await s.storage.ensureMounted(to);
          const noise = p.all ? undefined : new Noise(root, s.registry.project(to.treeId)?.path ?? null);
          return diffTrees(await s.storage.ensureMounted(from), root, { noise });
        }),
      );
    },
    // A copy reads the branch under its read turn (a rollback waits for it); live() first, outside the turn: a branch
    // found exited is marked so under its exclusive turn.
    'file.copyIn': async (p, ctx) => {
      const { id } = await s.workspaces.live(p.workspace);
      return s.workspaces.lock.read(id, () => {
        const ws = s.workspaces.running(id);
        return s.files.copyIn(s.runtime.execTarget(ws), { branch: ws.name, from: p.from, to: p.to }, ctx.actor, copyProgress(ws.name, p.from));
      });
    },
    'file.copyOut': async (p, ctx) => {
      const { id } = await s.workspaces.live(p.workspace);
      return s.workspaces.lock.read(id, () => {
        const ws = s.workspaces.running(id);
        return s.files.copyOut(s.runtime.execTarget(ws), { branch: ws.name, from: p.from, to: p.to }, ctx.actor, copyProgress(ws.name, p.from));
      });
    },
    'branch.export': ({ workspace, ...p }, ctx) => s.exporter.export(workspace, p, ctx.actor),
    'branch.merge': ({ faultAt, crash, ...req }) => s.merges.merge(req, fault({ faultAt, crash })),
    'version.list': (p) => s.versions.list(p.workspace, p.sizes ?? false),
    'version.label': async (p) => s.versions.relabel(p.version, p.label),
    'version.delete': async (p) => {
      await s.versions.delete(p.version);
      return { deleted: p.version };
    },
    'exec.run': async (p, ctx) => {
      const ws = await s.workspaces.live(p.workspace);
      return s.exec.run(s.runtime.execTarget(ws), p, ctx.connection);
    },
    'exec.log': async (p) => s.exec.log(s.runtime.execTarget(await s.workspaces.live(p.workspace)), p.run),
    'exec.terminals': async (p) => s.exec.terminals(s.runtime.execTarget(await s.workspaces.live(p.workspace))),
    'exec.open': async (p, ctx) => {
      const ws = await s.workspaces.live(p.workspace);
      const session = await s.exec.open(s.runtime.execTarget(ws), p, ctx.connection, {
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
    'egress.set': async ({ workspace, ...change }, ctx) => s.egress.set(s.workspaces.record(workspace), change, ctx.actor),
    'egress.log': async (p) => {
      if (p.workspace === undefined) return s.egress.log(null, p.limit);
      // The log outlives its branches: a removed branch is still found by its id.
      const found = s.registry.findWorkspace(p.workspace);
      if (!found && !ID_PATTERN.test(p.workspace)) throw new GroveError('E_NOT_FOUND', `no workspace '${p.workspace}'`);
      return s.egress.log(found?.id ?? p.workspace, p.limit);
    },
    'perf.get': () => s.perf.report(),
    'space.get': () => s.space.report(),
    'space.pool': () => s.space.poolSpace(),
    'stream.tls': () => ensureStreamTls(s.streamTlsDir),
    'approval.list': async (p) => s.approvals.list(branchOrNull(p.workspace), p.all ?? false),
    'approval.get': async (p) => s.approvals.get(p.id),
    'approval.create': (p, ctx) => s.approvals.create(ctx.actor, s.workspaces.record(p.workspace), p.action, p.reason, p.timeoutS),
    'approval.wait': (p) => s.approvals.wait(p.id, p.timeoutMs),
    'approval.withdraw': async (p, ctx) => s.approvals.withdraw(p.id, ctx.actor),
    'approval.approve': (p, ctx) => s.approvals.approve(p.id, ctx.actor, { always: p.always ?? false, note: p.note ?? null }),
    'approval.deny': async (p, ctx) => s.approvals.deny(p.id, ctx.actor, p.note ?? null),
    'grant.list': async (p) => s.approvals.grants(branchOrNull(p.workspace)),
    'grant.set': async (p, ctx) => s.approvals.grant(ctx.actor, s.workspaces.record(p.workspace), p.kind),
    'grant.revoke': async (p, ctx) => s.approvals.revoke(ctx.actor, p.grant),
    'scope.list': async (p) => s.scopes.list().filter((x) => p.user === undefined || (x.subject.kind === 'user' && x.subject.name === p.user)),
    'scope.allow': (p, ctx) => s.scopes.allow(ctx.actor, p),
    'scope.revoke': ({ who, ...what }) => s.scopes.revoke(who, what),
    'audit.list': async ({ workspace, limit, ...filter }) => s.audit.list(workspace, limit ?? 500, filter),
    'desktop.screenshot': (p) => s.desktop.screenshot(desktop(p.workspace), p),
    'desktop.cursor': (p) => s.desktop.cursor(desktop(p.workspace)),
    'desktop.move': (p) => s.desktop.move(desktop(p.workspace), p),
    'desktop.click': (p) => s.desktop.click(desktop(p.workspace), p),
    'desktop.button': (p) => s.desktop.button(desktop(p.workspace), p),
    'desktop.drag': (p) => s.desktop.drag(desktop(p.workspace), p),
    'desktop.scroll': (p) => s.desktop.scroll(desktop(p.workspace), p),
    'desktop.key': (p) => s.desktop.key(desktop(p.workspace), p),
    'desktop.type': (p) => s.desktop.type(desktop(p.workspace), p),
    'desktop.wait': (p) => s.desktop.wait(desktop(p.workspace), p),
    'desktop.holdKey': (p) => s.desktop.holdKey(desktop(p.workspace), p),
    'desktop.zoom': (p) => s.desktop.zoom(desktop(p.workspace), p),
    'branch.timeline': async (p) => s.timeline.get(s.workspaces.record(p.workspace).id),
    'desktop.windows': (p) => s.desktop.windows(desktop(p.workspace)),
    'desktop.openUrl': (p) => s.desktop.openUrl(desktop(p.workspace), p),
    'desktop.launch': (p) => s.desktop.launch(desktop(p.workspace), p),
    'file.upload': async (p, ctx) => uploadFile(s.exec, s.runtime.execTarget(await s.workspaces.live(p.workspace)), p, ctx.connection),
    'file.download': async (p, ctx) => downloadFile(s.exec, s.runtime.execTarget(await s.workspaces.live(p.workspace)), p, ctx.connection),
  };
}

function mibText(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
