// The privileged helper: a root daemon that owns every host resource Grove uses
// and serves the typed protocol on a Unix socket.
//   daemon.ts           serve (default)
//   daemon.ts --purge   remove every host object of this instance, the pool included, and exit
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig, type HelperConfig } from './config.js';
import { Crun } from './host/crun.js';
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
import { Criu } from './host/criu/criu.js';
import { ForkService } from './branches/fork.js';
import { PromoteService } from './branches/promote.js';
import { VersionService } from './branches/versions.js';
import { WorkspaceService } from './workspaces/workspace-service.js';

const log = (msg: string) => process.stderr.write(`[grove-helper] ${msg}\n`);

async function boot(config: HelperConfig) {
  if (process.getuid?.() !== 0) throw new Error('the helper must run as root');
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  await mkdir(config.runDir, { recursive: true, mode: 0o750 });
  const db = openDb(path.join(config.stateDir, 'registry.sqlite'));
  const registry = new Registry(db);
  const pool = await ensurePool(config);
  const crun = new Crun(path.join(config.runDir, 'crun'));
  const ledger = new HostLedger(registry, crun);
  const bus = new EventBus();
  const images = new ImageBuilder(config, pool, registry);
  const runtime = new BranchRuntime(config, pool, registry, ledger, crun);
  const removed = (id: string) => bus.broadcast('workspace.removed', { id });
  const workspaces = new WorkspaceService(registry, ledger, runtime, images, {
    changed: (workspace) => bus.broadcast('workspace.changed', { workspace }),
    removed,
  });
  const criu = new Criu(config.criu);
  const versions = new VersionService({ registry, ledger, runtime, workspaces, criu, versionsDir: pool.versions });
  const forks = new ForkService({
    registry,
    ledger,
    runtime,
    workspaces,
    criu,
    scratchDir: path.join(config.runDir, 'scratch'),
    allowFaultInjection: config.allowFaultInjection,
    progress: (job, stage, message, done) => bus.broadcast('progress', { job, stage, message, done }),
  });
  await reconcile({ config, pool, registry, ledger, crun, workspaces, log });
  const services = {
    registry,
    bus,
    images,
    workspaces,
    runtime,
    forks,
    versions,
    promotions: new PromoteService(registry, runtime, workspaces, versions, removed),
    exec: new ExecService(),
    doctor: new Doctor(config),
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
