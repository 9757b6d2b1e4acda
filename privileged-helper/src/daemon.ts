// The privileged helper: a root daemon that owns every host resource Grove uses
// and serves the typed protocol on a Unix socket.
//   daemon.ts           serve (default)
//   daemon.ts --purge   remove every host object of this instance, the pool included, and exit
//   daemon.ts --gate    the egress gate's unprivileged process (the helper starts it: egress/gate-child.ts)
import { existsSync } from 'node:fs';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig, type HelperConfig } from './config.js';
import { Crun } from './host/crun.js';
import { KsmPacer } from './host/ksm.js';
import { Doctor } from './host/doctor.js';
import { KernelTier } from './host/kernel-tier.js';
import { prepareSocketDir } from './host/forwarder.js';
import { guardBranchAddresses, hostTableName } from './host/host-firewall.js';
import { foreignRoutesIn, nameserversIn } from './host/netns.js';
import { DiskQuota } from './host/disk-quota.js';
import { ensurePool, unmountPool } from './host/pool.js';
import { ExecService } from './exec/exec-service.js';
import { ImageService } from './images/image-service.js';
import { RecipeBuilder } from './images/recipe-builder.js';
import { OciStore } from './host/oci-store.js';
import { FileCopy } from './files/file-copy.js';
import { Exporter } from './files/export.js';
import { ForkPoints } from './branches/fork-points.js';
import { MergeService } from './branches/merge.js';
import { reconcile } from './reconcile.js';
import { openDb } from './registry/db.js';
import { IdRanges } from './registry/id-ranges.js';
import { type IdRange } from './host/idmap.js';
import { ensureTmpfs, hasMountAtOrBelow } from './host/mounts.js';
import { Registry } from './registry/registry.js';
import { EventBus } from './server/event-bus.js';
import { listen } from './server/socket-server.js';
import { ensureGroup, ensureSystemUser } from './host/accounts.js';
import { HostLedger } from './workspaces/ledger.js';
import { BranchRuntime } from './workspaces/runtime.js';
import { BranchStorage } from './workspaces/branch-storage.js';
import { Criu } from './host/criu/criu.js';
import { ensureKdatCache } from './host/criu/kdat-cache.js';
import { ForkService } from './branches/fork.js';
import { PromoteService } from './branches/promote.js';
import { VersionService } from './branches/versions.js';
import { VersionCaptures } from './branches/version-captures.js';
import { WorkspaceService } from './workspaces/workspace-service.js';
import { DEFAULT_HOLD_TIMEOUT_MS, EgressGate } from './egress/gate.js';
import { EgressService } from './egress/egress-service.js';
import { runGateProcess } from './egress/gate-process.js';
import { PerfService } from './perf/perf-service.js';
import { StandbyService } from './branches/standby.js';
import { Launcher } from './host/launcher.js';
import { removeInstanceCgroups } from './host/cgroups.js';
import { ApprovalQueue } from './approvals/approval-queue.js';
import { ApprovalService } from './approvals/approval-service.js';
import { PreviewMaker } from './approvals/preview.js';
import { AuditLog } from './audit/audit-log.js';
import { agentOwner, type AuthorityLookup } from './auth/authority.js';
import { loadPeerCredentials } from './auth/peer-identity.js';
import { ScopeBook, systemAccounts } from './auth/scopes.js';
import { DesktopService } from './desktop/desktop-service.js';
import { createHandlers } from './server/handlers.js';
import { ExitWatch } from './workspaces/exit-watch.js';
import { SpaceService } from './space/space-service.js';
import { holdInstanceLock } from './host/instance-lock.js';
import { detachFromStarter, preferHelperCpu, removeHelperCgroups } from './host/detach.js';
import { TimelineBook, TimelineRecorder } from './desktop/timeline.js';
import { TIMELINE_LIMITS } from './protocol/timeline.js';

const log = (msg: string) => process.stderr.write(`[grove-helper] ${msg}\n`);

/** Checked before anything is made on the host, so that a helper that cannot start leaves nothing behind (no cgroups, no mounted pool). */
function requireRootAndTools(config: HelperConfig): void {
  if (process.getuid?.() !== 0) throw new Error('the helper must run as root');
  for (const [tool, why] of [
    [config.groveEnter, 'it starts what belongs to a branch inside its cage'],
    [config.groveMount, 'it makes the idmapped mounts of branches in user namespaces'],
    [config.groveNetlock, "it keeps a branch's network silent while CRIU restores it"],
    [config.groveSpawn, "it starts the helper's programs"],
    [config.groveAction, "CRIU runs it at every fork's, checkpoint's and rollback's freeze, thaw and resume"],
  ] as const) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: run build/host/setup.sh (${why})`);
  }
}

/** Also before anything is made: a subnet that something else on this host routes would give branches addresses that are not theirs. */
async function requireFreeSubnet(config: HelperConfig): Promise<void> {
  const foreign = await foreignRoutesIn(config.subnet, config.instance);
  if (foreign.length > 0) {
    throw new Error(`GROVE_SUBNET ${config.subnet} is already routed on this host (${foreign.slice(0, 3).join('; ')}): give this helper a free 10.X.0.0/16`);
  }
  const resolvers = await nameserversIn(config.subnet);
  if (resolvers.length > 0) {
    throw new Error(`GROVE_SUBNET ${config.subnet} holds this host's name server ${resolvers.join(', ')}: give this helper a free 10.X.0.0/16`);
  }
}

async function boot(config: HelperConfig) {
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  await mkdir(config.runDir, { recursive: true, mode: 0o750 });
  const db = openDb(path.join(config.stateDir, 'registry.sqlite'));
  const registry = new Registry(db);
  const pool = await ensurePool(config);
  const quota = new DiskQuota(config.groveQuota, pool.root);
  if (config.diskQuota) await quota.enable(log);
  else log("GROVE_BENCH_NO_DISK_QUOTA: the pool of this instance has no quotas, its branches no disk limit (for the benchmark's comparison only)");
  if (!config.cage) log("GROVE_BENCH_UNCAGED: branches of this instance run WITHOUT the cage (for the benchmark's comparison only)");
  const launcher = new Launcher(config.groveEnter, path.join(config.runDir, 'seccomp.rules'));
  await launcher.writeRules();
  const ksm = new KsmPacer();
  await ksm.start().catch((err: Error) => log(`KSM unavailable: ${err.message}`));
  const crun = new Crun(path.join(config.runDir, 'crun'), launcher);
  const ledger = new HostLedger(registry, crun);
  // Before any branch is adopted: from this host, only root may connect to a branch.
  await ledger.make({ kind: 'nft-table', name: hostTableName(config.instance), owner: null }, () => guardBranchAddresses(config.instance, config.subnet));
  const personGid = await ensureGroup(config.group);
  await prepareSocketDir({ path: config.vncDir, gid: personGid });
  await prepareSocketDir({ path: config.stream.dir, gid: personGid });
  // Each streamer, as its branch's root, must pass it to reach its own directory (0750) inside; no one may list it.
  await chmod(config.stream.dir, 0o751);
  const bus = new EventBus();
  const approvalQueue = new ApprovalQueue({
    opened: (a) => bus.broadcast('approval.opened', a),
    changed: (a) => bus.broadcast('approval.changed', a),
  });
  const exec = new ExecService(launcher);
  const desktop = new DesktopService({
    publish: (action) => bus.broadcast('desktop.action', action),
    exec: (t, req) => exec.run(runtime.execTarget(workspaces.running(t.id)), req, null),
    log,
    idleMs: config.desktopIdleMs,
  });
  const ids = new IdRanges(db);
  await mkdir(config.rootsDir, { recursive: true, mode: 0o711 });
  await chmod(config.rootsDir, 0o711);
  const storage: BranchStorage = new BranchStorage(
    pool,
    config.rootsDir,
    ledger,
    config.groveMount,
    (ws): IdRange | null => runtime.idRange(ws),
    quota,
    (ws) => runtime.limits(ws).diskBytes,
  );
  const lowersInUse = () => storage.lowersInUse();
  const ociStore = new OciStore({ graphRoot: pool.oci, runRoot: path.join(config.runDir, 'oci') });
  const images = new ImageService({ registry, pool, recipes: new RecipeBuilder(config, pool, lowersInUse), store: ociStore, lowersInUse });
  const gate = new EgressGate({
    registry,
    approvals: approvalQueue,
    subnet: config.subnet,
    user: await ensureSystemUser(config.gateUser),
    holdTimeoutMs: Number(process.env.GROVE_GATE_TIMEOUT_MS ?? DEFAULT_HOLD_TIMEOUT_MS),
    staticHosts: process.env.GROVE_GATE_HOSTS,
    publish: {
      decision: (d) => bus.broadcast('egress.decision', d),
    },
    log,
  });
  const runtime = new BranchRuntime(config, registry, ledger, crun, storage, gate, personGid, ids, log);
  const egress = new EgressService(registry, gate, (ws) => runtime.netPlan(ws));
  const forkPoints = new ForkPoints(registry, ledger);
  /** A branch or version gone may leave fork points no merge needs: removed in the background, one prune at a time. */
  const pruneForkPoints = () => void forkPoints.prune().catch((err: Error) => log(`fork points could not be removed: ${err.message}`));
  const removed = (id: string) => {
    pruneForkPoints();
    desktop.forget(id);
    approvalQueue.abandonBranch(id, 'the branch was removed');
    bus.broadcast('workspace.removed', { id });
  };
  const workspaces = new WorkspaceService(registry, ledger, runtime, storage, images, {
    changed: (workspace) => {
      bus.broadcast('workspace.changed', { workspace });
      if (workspace.state === 'running')
        ksm.boost(); // new pages to merge (a start, a fork, a rollback)
      else desktop.forget(workspace.id);
    },
    removed,
  });
  const criu = new Criu(config.criu, path.join(config.stateDir, 'logs'), launcher, config.rootsDir, {
    pagesAfterThaw: true,
    action: config.groveAction,
    netlock: config.groveNetlock,
  });
  if ((await ensureKdatCache(config.criu)) === 'not written')
    log('CRIU could not write its kernel-probe cache: every CRIU run will probe the kernel again, which each fork and checkpoint waits for');
  // Where CRIU writes a fork's or a checkpoint's images: a tmpfs of its own, whatever the run dir is on. Creating
  // a few hundred image files on ext4 (whose inode allocator looks for recently deleted inodes) lengthened
  // every freeze (docs/fork-profile.md); its size is tmpfs's default, half the memory.
  const scratchDir = path.join(config.runDir, 'scratch');
  await ledger.make({ kind: 'mount', name: scratchDir, owner: null }, () => ensureTmpfs(scratchDir, 'grove-scratch'));
  const kernelTier = new KernelTier(config.kernelTier);
  log(`kernel tier: fork memory ${(await kernelTier.current()).memory}`);
  const branchDeps = { registry, ledger, runtime, storage, workspaces, criu, exec, ksm, kernelTier };
  const captures = new VersionCaptures({ kernelTier, dir: scratchDir, log });
  const standbys = new StandbyService({
    registry,
    ledger,
    runtime,
    storage,
    criu,
    versionsDir: pool.versions,
    budgetMib: config.standbyBudgetMib,
    caged: config.cage,
    log,
  });
  const versions = new VersionService({
    ...branchDeps,
    versionsDir: pool.versions,
    scratchDir,
    captures,
    standbys,
    events: {
      changed: (version) => bus.broadcast('version.changed', { version }),
      removed: (id, reason) => {
        pruneForkPoints();
        bus.broadcast('version.removed', { id, ...(reason && { reason }) });
      },
    },
    log,
  });
  const forks = new ForkService({
    ...branchDeps,
    scratchDir,
    terminalsIn: (ws) => (ws.pid === null ? [] : exec.terminalsIn({ pid: ws.pid, pidStart: ws.pidStart })),
    runsIn: (ws) => (ws.pid === null ? [] : exec.runsIn({ pid: ws.pid, pidStart: ws.pidStart })),
    progress: (job, stage, message, done) => bus.broadcast('progress', { job, stage, message, done }),
    versions,
    standbys,
  });
  const promotions = new PromoteService(registry, runtime, workspaces, versions);
  await reconcile({ config, pool, registry, ledger, crun, workspaces, versions, promotions, storage, scratchDir, log });
  await forkPoints.prune();
  await images.reconcile(log);
  await storage.limitDisks(registry.listWorkspaces()).catch((err: Error) => log(`branches' disk limits could not be set: ${err.message}`));
  const exitWatch = new ExitWatch(registry, workspaces, log);
  const audit = new AuditLog(registry, (entry) => bus.broadcast('audit', entry), log, config.audit);
  const merges = new MergeService({ registry, ledger, workspaces, storage, runtime, exec, versions, forkPoints });
  const files = new FileCopy({ exec, poolDir: pool.root });
  const exporter = new Exporter({ files, registry, storage, versions, workspaces, runtime });
  const approvals = new ApprovalService({
    registry,
    queue: approvalQueue,
    workspaces,
    promotions,
    versions,
    egress,
    merges,
    exporter,
    previews: new PreviewMaker({ registry, runtime, storage, desktop, merges, exporter }),
    audit,
    defaultTimeoutMs: config.approvalTimeoutMs,
    grantChanged: (grant, revoked) => bus.broadcast('grant.changed', { grant, revoked }),
  });
  const authority: AuthorityLookup = {
    branch: (ref) => {
      const ws = registry.findWorkspace(ref);
      return ws && { name: ws.name, treeId: ws.treeId, ownedByAgentUid: agentOwner(ws) };
    },
    grant: (treeId, kind) => registry.findGrant(treeId, kind),
  };
  const space = new SpaceService(
    pool,
    registry,
    (w) => storage.filesPath(w),
    (w) => storage.diskUse(w),
  );
  const timeline = new TimelineRecorder(new TimelineBook(), {
    branchId: (ref) => registry.findWorkspace(ref)?.id ?? null,
    screenshot: (id) => desktop.thumbnail(runtime.desktopTarget(workspaces.running(id)), TIMELINE_LIMITS.shotWidth),
    log,
  });
  bus.add(timeline);
  const services = {
    registry,
    bus,
    images,
    files,
    exporter,
    workspaces,
    runtime,
    storage,
    forks,
    versions,
    promotions,
    merges,
    exec,
    doctor: new Doctor(config, kernelTier, quota),
    egress,
    perf: new PerfService(registry, runtime, () => space.poolSpace(), standbys),
    standbys,
    space,
    approvals,
    audit,
    desktop,
    timeline: timeline.book,
    authority,
    scopes: new ScopeBook(registry, systemAccounts, log),
    allowFaultInjection: config.allowFaultInjection,
    streamTlsDir: path.join(config.stateDir, 'tls'),
  };
  return { db, services, ledger, personGid, exitWatch };
}

async function serve(config: HelperConfig): Promise<void> {
  const credentials = loadPeerCredentials(config.peercredAddon);
  await detachFromStarter(config.instance, log);
  await preferHelperCpu(config.instance, log);
  const { db, services, personGid, exitWatch } = await boot(config);
  exitWatch.start();
  services.space.watch(
    (space) => services.bus.broadcast('pool.space', space),
    (id) => {
      if (services.registry.findWorkspace(id)) services.workspaces.publish(id); // not a branch discarded meanwhile
    },
  );
  const groups = { person: personGid, agent: await ensureGroup(config.agentGroup) };
  const deps = { services, handlers: createHandlers(services), groups, credentials, log };
  const servers = [
    await listen({ path: config.socketPath, role: 'person', gid: groups.person }, deps),
    await listen({ path: config.agentSocketPath, role: 'agent', gid: groups.agent }, deps),
  ];
  log(`listening on ${config.socketPath} (persons) and ${config.agentSocketPath} (agents); instance ${config.instance}, epoch ${services.bus.epoch}`);
  services.runtime.startPreparing();
  const shutdown = async (signal: string) => {
    log(`${signal}: closing; running workspaces keep running and are adopted on the next start`);
    for (const server of servers) server.close();
    exitWatch.stop();
    services.space.stop();
    await services.desktop.closeAll();
    await services.standbys.dropAll();
    await services.runtime.stopPreparing();
    await services.versions.close();
    await services.runtime.detachAll();
    db.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM').catch(fatal));
  process.once('SIGINT', () => void shutdown('SIGINT').catch(fatal));
}

async function purge(config: HelperConfig): Promise<void> {
  const { db, services, ledger } = await boot(config);
  for (const ws of services.workspaces.list()) await services.workspaces.delete(ws.id);
  await services.runtime.detachAll(); // the egress gate's process too
  await ledger.removeOwned(null); // the instance's own objects: its host firewall
  db.close();
  await unmountPool(config);
  await rm(config.stateDir, { recursive: true, force: true });
  await rm(config.runDir, { recursive: true, force: true });
  await rm(path.dirname(config.agentSocketPath), { recursive: true, force: true });
  await rm(config.stream.dir, { recursive: true, force: true });
  if (await hasMountAtOrBelow(config.rootsDir)) throw new Error(`something is still mounted under ${config.rootsDir}; not removing it`);
  await rm(config.rootsDir, { recursive: true, force: true });
  await removeInstanceCgroups(config.instance);
  await removeHelperCgroups(config.instance);
  log(`purged instance ${config.instance}`);
}

async function main(): Promise<void> {
  if (process.argv.includes('--gate')) return runGateProcess();
  const config = loadConfig();
  requireRootAndTools(config);
  // Before anything is read or made: a second helper (or a purge) of a running instance would reconcile under it.
  await holdInstanceLock(config.instance);
  if (process.argv.includes('--purge')) return purge(config);
  await requireFreeSubnet(config);
  // Whatever started the helper: what it and its programs create is readable
  // to all unless made otherwise (CRIU's images, which restores in a user
  // namespace read: host/criu/criu.ts, openToRestores).
  process.umask(0o022);
  return serve(config);
}

/** Ends the helper on a failure nothing else handles, with it in the log. */
function fatal(err: unknown): never {
  log(`fatal: ${(err as Error)?.stack ?? String(err)}`);
  process.exit(1);
}

main().catch(fatal);
