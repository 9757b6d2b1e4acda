// What a branch runs on: its network (netns, veth, firewall), its cgroups
// (resource limits, device allow list), its processes (a crun container for a
// fresh start, or a tree CRIU restored), and the host's forwarders to it (its
// desktop on a Unix socket, its dev ports on 127.0.0.1). Shared by start, fork and rollback, so each builds a branch
// the same way and tears it down the same way.
import path from 'node:path';
import type { HelperConfig } from '../config.js';
import type { Crun } from '../host/crun.js';
import { Forwarder, type ForwardTarget } from '../host/forwarder.js';
import { applyLimits, cgroupDirs, cgroupName, createCgroups, DEFAULT_LIMITS, readUsage, type CgroupUsage } from '../host/cgroups.js';
import type { ExecTarget } from '../exec/exec-service.js';
import type { BranchLimits } from '../protocol/entities.js';
import { createNetwork, MAX_NET_INDEX, netnsName, netnsPath, planNetwork, type NetPlan } from '../host/netns.js';
import { mountNetnsSysfs, netnsSysfsPath } from '../host/netns-sysfs.js';
import { containerSpec } from '../host/oci-spec.js';
import type { IdRanges } from '../registry/id-ranges.js';
import type { IdRange } from '../host/idmap.js';
import { startTime } from '../host/proc.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import type { EgressGate } from '../egress/gate.js';
import type { DesktopTarget } from '../desktop/session-pool.js';
import { BranchStreams } from '../stream/branch-streams.js';
import type { BranchStorage } from './branch-storage.js';
import { processObjectName, type HostLedger } from './ledger.js';
import { PreparedPool, type PreparedSlot } from './prepared-pool.js';

/** Where the desktop image's Xvnc listens in every branch (image/desktop/session.sh). */
export const VNC_PORT = 5900;

/** How many new branches' networks are kept ready (prepared-pool.ts). */
const PREPARED_AHEAD = 2;

export class BranchRuntime {
  private readonly forwarders = new Map<string, Forwarder[]>();
  private readonly pool: PreparedPool;
  /** Each running branch's Selkies stream (stream/branch-streams.ts). */
  readonly streams: BranchStreams;
  /** The trees of branches that have no record (standbys, branches/standby.ts), for their ids. */
  private readonly unrecordedTrees = new Map<string, string>();

  constructor(
    private readonly config: HelperConfig,
    private readonly registry: Registry,
    private readonly ledger: HostLedger,
    private readonly crun: Crun,
    private readonly storage: BranchStorage,
    private readonly gate: EgressGate,
    /** The person group: it may open the branches' desktop sockets. */
    private readonly personGid: number,
    private readonly ids: IdRanges,
    private readonly log: (msg: string) => void,
  ) {
    this.streams = new BranchStreams(config.stream, personGid, log);
    this.pool = new PreparedPool(PREPARED_AHEAD, {
      allocate: () => this.allocateSlot(),
      make: (slot) => this.makeHostSet(slot, DEFAULT_LIMITS),
      remove: (slot) => this.ledger.removeOwned(slot.id),
      log,
    });
  }

  /** A fresh id and network slot for a new branch, none of which a branch or the pool holds. */
  allocateSlot(): PreparedSlot {
    const held = this.pool.held();
    const used = this.registry.usedNetIndexes();
    for (let netIndex = 0; netIndex <= MAX_NET_INDEX; netIndex++) {
      if (!used.has(netIndex) && !held.netIndexes.has(netIndex)) return { id: this.registry.freshId(held.ids), netIndex };
    }
    throw new GroveError('E_PRECONDITION', 'no free workspace network left');
  }

  /** The host ids the branch's tree runs as (its user namespace), or null for a tree made before them. */
  idRange(ws: { id: string }): IdRange | null {
    const treeId = this.registry.findWorkspace(ws.id)?.treeId ?? this.unrecordedTrees.get(ws.id);
    return treeId ? this.ids.of(treeId) : null;
  }

  /** A branch without a record (a standby) runs as its tree's ids until it is forgotten. */
  runsAsTree(id: string, treeId: string): void {
    this.unrecordedTrees.set(id, treeId);
  }

  forgetTree(id: string): void {
    this.unrecordedTrees.delete(id);
  }

  /** A new tree's own host ids: call while recording its first branch (in the same transaction). None uncaged. */
  allocateIds(treeId: string): IdRange | null {
    return this.config.cage ? this.ids.allocate(treeId) : null;
  }

  netPlan(ws: Pick<WorkspaceRecord, 'id' | 'netIndex'>): NetPlan {
    return planNetwork(this.config.instance, ws.id, this.config.subnet, ws.netIndex);
  }

  /** A running branch's desktop, for the computer-use API (its VNC server listens on the branch's own address). */
  desktopTarget(ws: WorkspaceRecord): DesktopTarget {
    if (ws.pid === null) throw new GroveError('E_CONFLICT', notRunning(ws));
    return { id: ws.id, name: ws.name, pid: ws.pid, pidStart: ws.pidStart, address: this.netPlan(ws).containerAddress };
  }

  containerId(ws: { id: string }): string {
    return `grove-${this.config.instance}-${ws.id}`;
  }

  /**
   * What the branch's processes will run in: its network namespace with its
   * veth pair and firewall, and its cgroups. A new branch that took a set
   * made ahead (takePrepared) only gets its limits.
   */
  async prepareHost(ws: WorkspaceRecord): Promise<void> {
    if (this.pool.release(ws.id)) {
      if (this.config.cage) await applyLimits(this.cgroupName(ws), this.limits(ws));
      return;
    }
    await this.makeHostSet(ws, this.limits(ws));
  }

  /** A prepared network and cgroups for the next new branch, or null; its id and network slot become the branch's. */
  takePrepared(): PreparedSlot | null {
    return this.pool.take();
  }

  /** The ids sets are ready for now, and how many are kept (perf.get). */
  prepared(): { ready: string[]; kept: number } {
    return { ready: this.pool.readyIds(), kept: PREPARED_AHEAD };
  }

  giveBackPrepared(slot: PreparedSlot): void {
    this.pool.giveBack(slot);
  }

  /** Starts preparing sets ahead (after start-up's reconciliation), and removes the untaken ones at shutdown. */
  startPreparing(): void {
    this.pool.start();
  }

  stopPreparing(): Promise<void> {
    return this.pool.drain();
  }

  private async makeHostSet(slot: PreparedSlot, limits: BranchLimits): Promise<void> {
    const net = this.netPlan(slot);
    // Both recorded before the one run that makes them: whatever it leaves, the ledger removes.
    await this.ledger.make({ kind: 'netns', name: net.netns, owner: slot.id }, () =>
      this.ledger.make({ kind: 'veth', name: net.hostVeth, owner: slot.id }, () => createNetwork(net)),
    );
    await this.ensureSysfs(slot);
    if (!this.config.cage) return;
    const name = this.cgroupName(slot);
    await this.ledger.make({ kind: 'cgroup', name, owner: slot.id }, async () => createCgroups(name, limits));
  }

  /** Where the sysfs of the branch's network namespace is mounted (host/netns-sysfs.ts). */
  private sysfsPath(ws: { id: string }): string {
    return netnsSysfsPath(this.config.rootsDir, this.netnsPath(ws));
  }

  private netnsPath(ws: { id: string }): string {
    return netnsPath(netnsName(this.config.instance, ws.id));
  }

  /** The sysfs of the branch's network namespace, mounted unless it is; with its mount point, a host object of the branch's. */
  private async ensureSysfs(ws: { id: string }): Promise<void> {
    const at = this.sysfsPath(ws);
    const objects = [
      { kind: 'directory', name: at, owner: ws.id },
      { kind: 'mount', name: at, owner: ws.id },
    ] as const;
    await this.ledger.makeAll(objects, () => mountNetnsSysfs(this.netnsPath(ws), at));
  }

  cgroupName(ws: { id: string }): string {
    return cgroupName(this.config.instance, ws.id);
  }

  /** The branch's cgroup directories (what its processes join). */
  cgroups(ws: { id: string }): string[] {
    return this.config.cage ? cgroupDirs(this.cgroupName(ws)) : [];
  }

  limits(ws: { id: string }): BranchLimits {
    return this.registry.limits(ws.id) ?? DEFAULT_LIMITS;
  }

  /** Records new limits and applies them at once: its cgroups' when it has them (it is running), its disk limit running or not. */
  async setLimits(ws: WorkspaceRecord, limits: BranchLimits): Promise<void> {
    if (ws.state === 'running') await applyLimits(this.cgroupName(ws), limits);
    this.registry.setLimits(ws.id, limits);
    if (ws.state !== 'failed') await this.storage.limitDisk(ws); // a failed branch's files are gone
  }

  usage(ws: { id: string }): Promise<CgroupUsage> {
    return readUsage(this.cgroupName(ws));
  }

  /** Where exec enters a running branch. */
  execTarget(ws: WorkspaceRecord): ExecTarget {
    if (ws.pid === null) throw new GroveError('E_CONFLICT', notRunning(ws));
    return { pid: ws.pid, pidStart: ws.pidStart, cgroups: this.cgroups(ws), mergeable: !ws.sensitive };
  }

  /** Boots the branch's root filesystem in a fresh crun container. */
  async bootContainer(ws: WorkspaceRecord): Promise<{ pid: number; pidStart: number }> {
    const bundle = path.join(this.config.runDir, 'bundles', ws.id);
    const spec = containerSpec({
      rootfs: this.storage.rootfsPath(ws),
      hostname: ws.hostname,
      netnsPath: this.netnsPath(ws),
      caged: this.config.cage,
      idRange: this.idRange(ws),
      netnsSysfs: this.sysfsPath(ws),
    });
    await this.ledger.make({ kind: 'bundle', name: bundle, owner: ws.id }, () => this.crun.writeBundle(bundle, spec));
    const containerId = this.containerId(ws);
    const pid = await this.ledger.make({ kind: 'container', name: containerId, owner: ws.id }, () =>
      this.crun.start(containerId, bundle, this.cgroups(ws), !ws.sensitive),
    );
    return this.adoptProcess(ws, pid);
  }

  /** Records a branch's init process (by pid and start time) as one of its host objects. */
  async adoptProcess(ws: { id: string; name: string }, pid: number): Promise<{ pid: number; pidStart: number }> {
    const pidStart = await startTime(pid);
    if (pidStart === null) throw new GroveError('E_HOST', `branch '${ws.name}' exited right after it started`);
    this.registry.recordObject({ kind: 'process', name: processObjectName(pid, pidStart), owner: ws.id });
    return { pid, pidStart };
  }

  /** Ends every process of the branch; its network and files stay (rollback restores into them). */
  async killProcesses(ws: { id: string }): Promise<void> {
    await this.streams.detach(ws.id);
    await this.ledger.removeOwned(ws.id, ['process', 'container']);
  }

  /** Removes everything the branch runs on, keeping its files. */
  async tearDown(ws: { id: string }): Promise<void> {
    this.pool.release(ws.id); // a new branch undone before it used the set it took: the set goes with it below
    await this.gate.close(ws.id);
    await this.closeForwarders(ws.id);
    await this.streams.close(ws.id);
    await this.ledger.removeOwned(ws.id, ['process', 'container', 'bundle', 'cgroup']);
    for (const kind of ['mount', 'directory'] as const) await this.ledger.remove({ kind, name: this.sysfsPath(ws), owner: ws.id });
    await this.ledger.removeOwned(ws.id, ['veth', 'netns']);
  }

  /**
   * Where the branch's desktop is served while it runs. The main line's socket
   * is named after its tree, so it stays put when another branch is promoted
   * (a viewer pointed at it reconnects to the new main line); any other
   * branch's is named after its id.
   */
  vncSocketPath(ws: Pick<WorkspaceRecord, 'id' | 'treeId' | 'isMain'>): string {
    return path.join(this.config.vncDir, ws.isMain ? `main-${ws.treeId}.sock` : `${ws.id}.sock`);
  }

  /**
   * A branch found running at start-up: its network's sysfs, which a helper
   * from before branches had their own did not mount (a rollback restores
   * into that network and binds it), and what the host serves for it.
   */
  async adopt(ws: WorkspaceRecord): Promise<void> {
    await this.ensureSysfs(ws);
    await this.openForwarders(ws);
  }

  /**
   * Opens what the host listens on for the branch: its desktop socket, its
   * host ports (re-using each leased port number when it is free) and its
   * egress gate on the veth peer; and its stream socket, whose streamer
   * starts only when someone watches (stream/branch-streams.ts).
   */
  async openForwarders(ws: WorkspaceRecord): Promise<void> {
    await this.closeForwarders(ws.id);
    const net = this.netPlan(ws);
    const opened: Forwarder[] = [];
    this.forwarders.set(ws.id, opened);
    opened.push(await Forwarder.unix(this.vncSocketPath(ws), this.personGid, { host: net.containerAddress, port: VNC_PORT }, this.log));
    for (const lease of this.registry.ports(ws.id)) {
      const forwarder = await openPreferring(lease.hostPort, { host: net.containerAddress, port: lease.containerPort }, this.log);
      opened.push(forwarder);
      this.registry.setPort(ws.id, lease.containerPort, forwarder.hostPort);
    }
    await this.gate.open({ id: ws.id, name: ws.name, treeId: ws.treeId, hostAddress: net.hostAddress, containerAddress: net.containerAddress });
    // The registry's record, not the caller's: a fork's child got its process after its record was read.
    const { pid, pidStart } = this.registry.findWorkspace(ws.id) ?? ws;
    if (pid !== null && pidStart !== null) {
      const hostRoot = this.idRange(ws)?.hostBase ?? 0;
      await this.streams.serve({ id: ws.id, name: ws.name, pid, pidStart, hostRoot });
    }
  }

  async closeForwarders(id: string): Promise<void> {
    const list = this.forwarders.get(id) ?? [];
    this.forwarders.delete(id);
    await Promise.all(list.map((f) => f.close()));
  }

  /** The helper is shutting down: branches keep running, their sockets, ports and gates close. */
  async detachAll(): Promise<void> {
    await this.gate.closeAll();
    await this.streams.closeAll();
    for (const id of [...this.forwarders.keys()]) await this.closeForwarders(id);
  }
}

async function openPreferring(hostPort: number | null, target: ForwardTarget, log: (msg: string) => void): Promise<Forwarder> {
  if (hostPort !== null) {
    try {
      return await Forwarder.tcp(hostPort, target, log);
    } catch {
      // taken by something else meanwhile: fall through to a fresh port
    }
  }
  return Forwarder.tcp(0, target, log);
}

/** Why a branch cannot be used now, and for an exited one what can be done. */
export function notRunning(ws: Pick<WorkspaceRecord, 'name' | 'state' | 'exitReason'>): string {
  if (ws.state === 'exited')
    return `workspace '${ws.name}' has exited (${ws.exitReason ?? 'its processes ended'}): start it again from its files, or roll it back to a version`;
  if (ws.state === 'stopped') return `workspace '${ws.name}' is stopped, not running: start it first (grove ws start ${ws.name})`;
  return `workspace '${ws.name}' is ${ws.state}, not running`;
}
