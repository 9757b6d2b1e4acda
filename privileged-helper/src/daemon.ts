// The privileged helper: a root daemon that owns every host resource Grove uses
// and serves the typed protocol on a Unix socket.
//   daemon.ts           serve (default)
//   daemon.ts --purge   remove every host object of this instance, the pool included, and exit
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig, type HelperConfig } from './config.js';
import { Crun } from './host/crun.js';
import { KsmPacer } from './host/ksm.js';
import { Doctor } from './host/doctor.js';
import { ensurePool, unmountPool } from './host/pool.js';
import { ExecService } from './exec/exec-service.js';
import { ImageBuilder } from './images/image-builder.js';
import { reconcile } from './reconcile.js';
import { openDb } from './registry/db.js';
import { Registry } from './registry/registry.js';
import { EventBus } from './server/event-bus.js';
import { ensureGroup, listen } from './server/socket-server.js';
import { HostLedger } from './workspaces/ledger.js';
import { BranchRuntime } from './workspaces/runtime.js';
import { BranchStorage } from './workspaces/branch-storage.js';
import { Criu } from './host/criu/criu.js';
import { ForkService } from './branches/fork.js';
import { PromoteService } from './branches/promote.js';
import { VersionService } from './branches/versions.js';
import { WorkspaceService } from './workspaces/workspace-service.js';
import { DEFAULT_HOLD_TIMEOUT_MS, EgressGate } from './egress/gate.js';
import { EgressService } from './egress/egress-service.js';
import { parseHostsMap } from './egress/policy.js';
import { PerfService } from './perf/perf-service.js';

const log = (msg: string) => process.stderr.write(`[grove-helper] ${msg}\n`);

async function boot(config: HelperConfig) {
  if (process.getuid?.() !== 0) throw new Error('the helper must run as root');
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  await mkdir(config.runDir, { recursive: true, mode: 0o750 });
  const db = openDb(path.join(config.stateDir, 'registry.sqlite'));
  const registry = new Registry(db);
  const pool = await ensurePool(config);
  const launcher = existsSync(config.ksmExec) ? config.ksmExec : null;
  if (!launcher) log(`no ${config.ksmExec}: branches will not share memory through KSM (run build/host/setup.sh)`);
  const ksm = new KsmPacer();
  await ksm.start().catch((err: Error) => log(`KSM unavailable: ${err.message}`));
  const crun = new Crun(path.join(config.runDir, 'crun'), launcher);
  const ledger = new HostLedger(registry, crun);
  const bus = new EventBus();
  const storage = new BranchStorage(pool, path.join(config.runDir, 'roots'), ledger);
  const images = new ImageBuilder(config, pool, registry, () => storage.lowersInUse());
  const gate = new EgressGate({
    registry,
    subnet: config.subnet,
    holdTimeoutMs: Number(process.env.GROVE_GATE_TIMEOUT_MS ?? DEFAULT_HOLD_TIMEOUT_MS),
    staticHosts: parseHostsMap(process.env.GROVE_GATE_HOSTS),
    publish: {
      request: (req) => bus.broadcast('egress.request', req),
      decision: (d) => bus.broadcast('egress.decision', d),
    },
    log,
  });
  const runtime = new BranchRuntime(config, registry, ledger, crun, storage, gate);
  const egress = new EgressService(registry, gate, (ws) => runtime.netPlan(ws));
  const removed = (id: string) => bus.broadcast('workspace.removed', { id });
  const workspaces = new WorkspaceService(registry, ledger, runtime, storage, images, {
    changed: (workspace) => {
      bus.broadcast('workspace.changed', { workspace });
      if (workspace.state === 'running') ksm.boost(); // new pages to merge (a start, a fork, a rollback)
    },
    removed,
  });
  const criu = new Criu(config.criu, path.join(config.stateDir, 'logs'), launcher);
  const versions = new VersionService({ registry, ledger, runtime, storage, workspaces, criu, versionsDir: pool.versions });
  const forks = new ForkService({
    registry,
    ledger,
    runtime,
    storage,
    workspaces,
    criu,
    scratchDir: path.join(config.runDir, 'scratch'),
    allowFaultInjection: config.allowFaultInjection,
    progress: (job, stage, message, done) => bus.broadcast('progress', { job, stage, message, done }),
  });
  await reconcile({ config, pool, registry, ledger, crun, workspaces, storage, log });
  const services = {
    registry,
    bus,
    images,
    workspaces,
    runtime,
    storage,
    forks,
    versions,
    promotions: new PromoteService(registry, runtime, workspaces, versions, removed),
    exec: new ExecService(),
    doctor: new Doctor(config),
    egress,
    perf: new PerfService(registry),
  };
  return { db, services };
}

async function serve(config: HelperConfig): Promise<void> {
  const { db, services } = await boot(config);
  const gid = await ensureGroup(config.group);
  const server = await listen(config.socketPath, gid, services, log);
  log(`listening on ${config.socketPath} (instance ${config.instance}, epoch ${services.bus.epoch})`);
  const shutdown = async (signal: string) => {
    log(`${signal}: closing; running workspaces keep running and are adopted on the next start`);
    server.close();
    await services.runtime.detachAll();
    db.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

async function purge(config: HelperConfig): Promise<void> {
  const { db, services } = await boot(config);
  for (const ws of services.workspaces.list()) await services.workspaces.delete(ws.id);
  db.close();
  await unmountPool(config);
  await rm(config.stateDir, { recursive: true, force: true });
  await rm(config.runDir, { recursive: true, force: true });
  log(`purged instance ${config.instance}`);
}

const config = loadConfig();
(process.argv.includes('--purge') ? purge(config) : serve(config)).catch((err: unknown) => {
  log(`fatal: ${(err as Error)?.stack ?? String(err)}`);
  process.exit(1);
});
