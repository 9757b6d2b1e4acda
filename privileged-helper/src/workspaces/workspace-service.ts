// Workspaces: create, start, stop, delete, and adoption after a helper restart.
// A workspace is a writable btrfs snapshot of its image (its root), a network
// namespace with a veth pair, a crun container, and host-port forwarders.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { HelperConfig } from '../config.js';
import { snapshot } from '../host/btrfs.js';
import type { Crun } from '../host/crun.js';
import { PortForwarder } from '../host/forwarder.js';
import { MAX_NET_INDEX, applyFirewall, createNetns, createVeth, netnsPath, planNetwork, type NetPlan } from '../host/netns.js';
import { containerSpec } from '../host/oci-spec.js';
import type { PoolLayout } from '../host/pool.js';
import { isSameProcess, startTime, waitGone } from '../host/proc.js';
import type { ImageBuilder } from '../images/image-builder.js';
import type { Workspace } from '../protocol/entities.js';
import { ID_PATTERN } from '../protocol/names.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import { KeyedLock } from './keyed-lock.js';
import type { HostLedger } from './ledger.js';

/** VNC and a dev-server port are mapped for every workspace. */
export const STANDARD_PORTS = [5900, 3000] as const;

export interface WorkspaceEvents {
  changed(ws: Workspace): void;
  removed(id: string): void;
}

export class WorkspaceService {
  private readonly forwarders = new Map<string, PortForwarder[]>();
  private readonly lock = new KeyedLock();

  constructor(
    private readonly config: HelperConfig,
    private readonly pool: PoolLayout,
    private readonly registry: Registry,
    private readonly ledger: HostLedger,
    private readonly crun: Crun,
    private readonly images: ImageBuilder,
    private readonly events: WorkspaceEvents,
  ) {}

  list(): Workspace[] {
    return this.registry.listWorkspaces().map((r) => this.view(r));
  }

  get(ref: string): Workspace {
    return this.view(this.record(ref));
  }

  /** The record of a running workspace (for exec), or a clear error. */
  running(ref: string): WorkspaceRecord {
    const ws = this.record(ref);
    if (ws.state !== 'running') throw new GroveError('E_CONFLICT', `workspace '${ws.name}' is ${ws.state}, not running`);
    return ws;
  }

  containerId(ws: WorkspaceRecord): string {
    return `grove-${this.config.instance}-${ws.id}`;
  }

  async create(input: { name: string; image?: 'desktop'; ports?: number[] }): Promise<Workspace> {
    if (ID_PATTERN.test(input.name)) throw new GroveError('E_INVALID_PARAMS', `'${input.name}' looks like an id; choose another name`);
    const image = input.image ?? 'desktop';
    const imagePath = this.images.readyPath(image);
    const ws: WorkspaceRecord = this.registry.transaction(() => {
      if (this.registry.findWorkspace(input.name)) throw new GroveError('E_CONFLICT', `a workspace named '${input.name}' already exists`);
      const record: WorkspaceRecord = {
        id: this.freshId(),
        name: input.name,
        image,
        state: 'creating',
        hostname: input.name,
        machineId: randomBytes(16).toString('hex'),
        netIndex: this.freeNetIndex(),
        createdAt: new Date().toISOString(),
        pid: null,
        pidStart: null,
      };
      this.registry.insertWorkspace(record);
      for (const port of new Set([...STANDARD_PORTS, ...(input.ports ?? [])])) this.registry.setPort(record.id, port, null);
      return record;
    });
    return this.lock.run(ws.id, async () => {
      try {
        const rootfs = this.rootfsPath(ws);
        await this.ledger.make({ kind: 'subvolume', name: rootfs, owner: ws.id }, () => snapshot(imagePath, rootfs));
        await writeIdentity(rootfs, ws);
        return await this.startLocked(ws);
      } catch (err) {
        await this.destroy(ws);
        throw err;
      }
    });
  }

  start(ref: string): Promise<Workspace> {
    const { id } = this.record(ref);
    return this.lock.run(id, async () => {
      const current = this.record(id);
      if (current.state === 'running') return this.view(current);
      return this.startLocked(current);
    });
  }

  stop(ref: string): Promise<Workspace> {
    const { id } = this.record(ref);
    return this.lock.run(id, async () => {
      const ws = this.record(id);
      await this.stopRuntime(ws);
      this.registry.setWorkspaceState(ws.id, 'stopped', null);
      return this.publish(ws.id);
    });
  }

  delete(ref: string): Promise<{ deleted: string }> {
    const { id } = this.record(ref);
    return this.lock.run(id, async () => {
      const ws = this.record(id);
      await this.destroy(ws);
      this.events.removed(ws.id);
      return { deleted: ws.id };
    });
  }

  /**
   * After a helper restart: a workspace whose init is still the same process is
   * adopted (its forwarders re-open on the same host ports); any other is
   * brought to a clean stopped state, or removed if it died while being made.
   */
  async reconcile(): Promise<void> {
    for (const ws of this.registry.listWorkspaces()) {
      await this.lock.run(ws.id, async () => {
        if (ws.state === 'creating') return this.destroy(ws);
        if (ws.state === 'running' && (await this.stillRunning(ws))) return this.openForwarders(ws);
        await this.stopRuntime(ws);
        if (ws.state === 'running') this.registry.setWorkspaceState(ws.id, 'stopped', null);
      });
    }
  }

  /** Closes every forwarder (the helper is shutting down); workspaces keep running. */
  async detachAll(): Promise<void> {
    for (const id of [...this.forwarders.keys()]) await this.closeForwarders(id);
  }

  private async startLocked(ws: WorkspaceRecord): Promise<Workspace> {
    try {
      const net = this.netPlan(ws);
      await this.ledger.make({ kind: 'netns', name: net.netns, owner: ws.id }, () => createNetns(net.netns));
      await this.ledger.make({ kind: 'veth', name: net.hostVeth, owner: ws.id }, () => createVeth(net));
      await applyFirewall(net);
      const bundle = path.join(this.config.runDir, 'bundles', ws.id);
      const spec = containerSpec({ rootfs: this.rootfsPath(ws), hostname: ws.hostname, netnsPath: netnsPath(net.netns) });
      await this.ledger.make({ kind: 'bundle', name: bundle, owner: ws.id }, () => this.crun.writeBundle(bundle, spec));
      const containerId = this.containerId(ws);
      const pid = await this.ledger.make({ kind: 'container', name: containerId, owner: ws.id }, () => this.crun.start(containerId, bundle));
      const pidStart = await startTime(pid);
      if (pidStart === null) throw new GroveError('E_HOST', `workspace '${ws.name}' exited right after it started`);
      this.registry.setWorkspaceState(ws.id, 'running', { pid, pidStart });
      await this.openForwarders(ws);
      return this.publish(ws.id);
    } catch (err) {
      await this.stopRuntime(ws);
      if (ws.state !== 'creating') this.registry.setWorkspaceState(ws.id, 'stopped', null);
      throw err;
    }
  }

  private async stillRunning(ws: WorkspaceRecord): Promise<boolean> {
    if (ws.pid === null || ws.pidStart === null || !(await isSameProcess(ws.pid, ws.pidStart))) return false;
    return (await this.crun.state(this.containerId(ws)))?.pid === ws.pid;
  }

  /**
   * Removes everything a workspace runs on, keeping its root filesystem. Returns
   * once its init has fully exited: the kernel has then killed every other
   * process of its pid namespace too.
   */
  private async stopRuntime(ws: WorkspaceRecord): Promise<void> {
    await this.closeForwarders(ws.id);
    await this.ledger.removeOwned(ws.id, ['container', 'bundle', 'veth', 'netns']);
    if (ws.pid !== null && ws.pidStart !== null && !(await waitGone(ws.pid, ws.pidStart, 10_000))) {
      throw new GroveError('E_HOST', `workspace '${ws.name}' (pid ${ws.pid}) did not exit after it was killed`);
    }
  }

  /** Removes a workspace and every host object it has, and its record. */
  private async destroy(ws: WorkspaceRecord): Promise<void> {
    await this.stopRuntime(ws);
    await this.ledger.removeOwned(ws.id);
    this.registry.deleteWorkspace(ws.id);
  }

  private async openForwarders(ws: WorkspaceRecord): Promise<void> {
    await this.closeForwarders(ws.id);
    const target = this.netPlan(ws).containerAddress;
    const opened: PortForwarder[] = [];
    this.forwarders.set(ws.id, opened);
    for (const lease of this.registry.ports(ws.id)) {
      const forwarder = await openPreferring(lease.hostPort, { host: target, port: lease.containerPort });
      opened.push(forwarder);
      this.registry.setPort(ws.id, lease.containerPort, forwarder.hostPort);
    }
  }

  private async closeForwarders(id: string): Promise<void> {
    const list = this.forwarders.get(id) ?? [];
    this.forwarders.delete(id);
    await Promise.all(list.map((f) => f.close()));
  }

  private publish(id: string): Workspace {
    const view = this.get(id);
    this.events.changed(view);
    return view;
  }

  private view(ws: WorkspaceRecord): Workspace {
    return {
      id: ws.id,
      name: ws.name,
      image: ws.image,
      state: ws.state,
      hostname: ws.hostname,
      machineId: ws.machineId,
      createdAt: ws.createdAt,
      address: this.netPlan(ws).containerAddress,
      ports: this.registry
        .ports(ws.id)
        .filter((p) => ws.state === 'running' && p.hostPort !== null)
        .map((p) => ({ containerPort: p.containerPort, hostPort: p.hostPort as number, hostAddress: '127.0.0.1' as const })),
      pid: ws.state === 'running' ? ws.pid : null,
    };
  }

  private record(ref: string): WorkspaceRecord {
    const ws = this.registry.findWorkspace(ref);
    if (!ws) throw new GroveError('E_NOT_FOUND', `no workspace '${ref}'`);
    return ws;
  }

  private netPlan(ws: WorkspaceRecord): NetPlan {
    return planNetwork(this.config.instance, ws.id, this.config.subnet, ws.netIndex);
  }

  private rootfsPath(ws: WorkspaceRecord): string {
    return path.join(this.pool.workspaces, ws.id);
  }

  private freshId(): string {
    for (;;) {
      const id = randomBytes(4).toString('hex');
      if (!this.registry.findWorkspace(id)) return id;
    }
  }

  private freeNetIndex(): number {
    const used = this.registry.usedNetIndexes();
    for (let i = 0; i <= MAX_NET_INDEX; i++) if (!used.has(i)) return i;
    throw new GroveError('E_PRECONDITION', 'no free workspace network left');
  }
}

/** Re-uses the leased host port when it is free, so ports stay stable across restarts. */
async function openPreferring(hostPort: number | null, target: { host: string; port: number }): Promise<PortForwarder> {
  if (hostPort !== null) {
    try {
      return await PortForwarder.open(hostPort, target);
    } catch {
      // taken by something else meanwhile: fall through to a fresh port
    }
  }
  return PortForwarder.open(0, target);
}

/** Each workspace gets its own hostname and machine-id, never the image's. */
async function writeIdentity(rootfs: string, ws: WorkspaceRecord): Promise<void> {
  const etc = path.join(rootfs, 'etc');
  await mkdir(etc, { recursive: true });
  await writeFile(path.join(etc, 'hostname'), `${ws.hostname}\n`);
  await writeFile(path.join(etc, 'machine-id'), `${ws.machineId}\n`);
  await writeFile(path.join(etc, 'hosts'), `127.0.0.1\tlocalhost\n127.0.1.1\t${ws.hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n`);
}
