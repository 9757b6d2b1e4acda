// Workspaces: create, start, stop, delete, and adoption after a helper restart.
// A workspace is a writable btrfs snapshot of its image (its root), a network
// namespace with a veth pair, a crun container, and the host's forwarders to it.
import { randomBytes } from 'node:crypto';
import { access } from 'node:fs/promises';
import { injectFault, type Fault } from './faults.js';
import { isSameProcess } from '../host/proc.js';
import { BRANCH_HEADROOM_BYTES, requireSpace } from '../host/space.js';
import type { ImageService } from '../images/image-service.js';
import { MAX_MERGES_SHOWN, type BranchLimits, type DiscardStage, type Workspace } from '../protocol/entities.js';
import type { Maker } from '../protocol/identity.js';
import { DESKTOP_IMAGE, ID_PATTERN } from '../protocol/names.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import { KeyedLock } from './keyed-lock.js';
import { writeInside, type FileOwner } from '../host/rootfs-files.js';
import { writeProxyConfig } from '../egress/workspace-config.js';
import type { HostLedger } from './ledger.js';
import { notRunning, VNC_PORT, type BranchRuntime } from './runtime.js';
import type { BranchStorage } from './branch-storage.js';
import type { PreparedSlot } from './prepared-pool.js';
import { undoAfter } from '../undo.js';
import { renewGeneration, type Generation } from './generation.js';

/** A dev-server port is mapped for every workspace (its desktop is served on a socket: see BranchRuntime.vncSocketPath). */
export const STANDARD_PORTS = [3000] as const;

export interface WorkspaceEvents {
  changed(ws: Workspace): void;
  removed(id: string): void;
}

export class WorkspaceService {
  /** Serialises operations on one branch (start, stop, fork, rollback…). */
  readonly lock = new KeyedLock();

  constructor(
    private readonly registry: Registry,
    private readonly ledger: HostLedger,
    private readonly runtime: BranchRuntime,
    private readonly storage: BranchStorage,
    private readonly images: Pick<ImageService, 'readyLower'>,
    private readonly events: WorkspaceEvents,
  ) {}

  list(): Workspace[] {
    return this.registry.listWorkspaces().map((r) => this.view(r));
  }

  get(ref: string): Workspace {
    return this.view(this.record(ref));
  }

  record(ref: string): WorkspaceRecord {
    const ws = this.registry.findWorkspace(ref);
    if (!ws) throw new GroveError('E_NOT_FOUND', `no workspace '${ref}'`);
    return ws;
  }

  /** The record of a running branch, or a clear error. */
  running(ref: string): WorkspaceRecord {
    const ws = this.record(ref);
    if (ws.state !== 'running' || ws.pid === null) throw new GroveError('E_CONFLICT', notRunning(ws));
    return ws;
  }

  /** A running branch whose init is still there; one found gone is shown as exited (noticeExit) and refused, saying why. */
  async live(ref: string): Promise<WorkspaceRecord> {
    const ws = this.running(ref);
    if (ws.pidStart === null || (await isSameProcess(ws.pid!, ws.pidStart))) return ws;
    if (await this.noticeExit(ws.id)) throw new GroveError('E_CONFLICT', notRunning(this.record(ws.id)));
    return this.running(ws.id); // an operation (a rollback) replaced its processes meanwhile
  }

  /**
   * A branch marked running whose init is gone (it exited, or the kernel
   * killed it) is torn down, keeping its files, and shown as exited, with
   * what was seen. Found by the watcher (exit-watch.ts), by exec and by
   * reconcile; a branch an operation holds is looked at once it is done.
   */
  async noticeExit(id: string, when: 'now' | 'while the helper was down' = 'now'): Promise<boolean> {
    return this.lock.run(id, async () => {
      const ws = this.registry.findWorkspace(id);
      if (!ws || ws.state !== 'running' || ws.pid === null || ws.pidStart === null) return false;
      if (await isSameProcess(ws.pid, ws.pidStart)) return false;
      const oomKills = await this.runtime.usage(ws).then(
        (u) => u.oomKills,
        () => 0,
      );
      await this.runtime.tearDown(ws);
      this.registry.setExited(ws.id, exitReason(ws, oomKills, this.runtime.limits(ws), when));
      this.publish(ws.id);
      return true;
    });
  }

  /**
   * Makes a workspace of the image and starts it; `then` (a project's copy)
   * runs on it once it runs, still under its lock and inside the same undo:
   * a workspace whose `then` fails is removed with everything it had.
   */
  async create(
    input: { name: string; image?: string; ports?: number[]; sensitive?: boolean },
    madeBy: Maker,
    then?: (ws: WorkspaceRecord) => Promise<void>,
  ): Promise<Workspace> {
    if (input.ports?.includes(VNC_PORT)) {
      throw new GroveError(
        'E_INVALID_PARAMS',
        `port ${VNC_PORT} is the desktop: it is served on the branch's VNC socket, only to root and the person group, never on a host port`,
      );
    }
    const image = input.image ?? DESKTOP_IMAGE;
    const imagePath = this.images.readyLower(image);
    await requireSpace(`workspace '${input.name}'`, [
      { where: 'the pool', dir: this.storage.workspacesDir, bytes: BRANCH_HEADROOM_BYTES, why: 'room for its first writes' },
    ]);
    const ws = this.reserve({ name: input.name, image, parent: null, ports: [...STANDARD_PORTS, ...(input.ports ?? [])], madeBy, sensitive: input.sensitive });
    return this.lock.run(ws.id, async () => {
      try {
        await writeIdentity(await this.storage.createFromImage(ws, imagePath), ws, this.storage.owner(ws));
        const started = await this.startLocked(ws);
        if (!then) return started;
        await then(this.record(ws.id));
        return this.publish(ws.id);
      } catch (err) {
        throw await undoAfter(err, [() => this.destroy(this.registry.findWorkspace(ws.id) ?? ws)]);
      }
    });
  }

  /**
   * Records a new branch in state 'creating' with a fresh id, network slot,
   * hostname and machine-id. A branch forked from `parent` joins its tree and
   * leases the same container ports. `madeBy` is kept with it (who may discard it without asking depends on it).
   */
  reserve(input: {
    name: string;
    image: string;
    parent: WorkspaceRecord | null;
    ports: number[];
    madeBy: Maker;
    sensitive?: boolean;
    /** The id and network slot of a standby the branch becomes (branches/standby.ts), instead of a set prepared ahead. */
    standby?: PreparedSlot;
  }): WorkspaceRecord {
    if (ID_PATTERN.test(input.name)) throw new GroveError('E_INVALID_PARAMS', `'${input.name}' looks like an id; choose another name`);
    const prepared = input.standby ?? this.runtime.takePrepared();
    try {
      return this.registry.transaction(() => this.insertReserved(input, prepared));
    } catch (err) {
      if (prepared && !input.standby) this.runtime.giveBackPrepared(prepared);
      throw err;
    }
  }

  /** reserve's record, with the id and network slot of a set prepared ahead if there was one. */
  private insertReserved(input: Parameters<WorkspaceService['reserve']>[0], prepared: PreparedSlot | null): WorkspaceRecord {
    if (this.registry.findWorkspace(input.name)) throw nameTaken(input.name, input.madeBy);
    if (input.parent && this.registry.nameUsedInTree(input.parent.treeId, input.name))
      throw new GroveError(
        'E_CONFLICT',
        `'${input.name}' was the name of an earlier branch of this workspace; a workspace never reuses a name: choose another`,
      );
    const { id, netIndex } = prepared ?? this.runtime.allocateSlot();
    const record: WorkspaceRecord = {
      id,
      name: input.name,
      image: input.image,
      state: 'creating',
      hostname: input.name,
      machineId: randomBytes(16).toString('hex'),
      netIndex,
      createdAt: new Date().toISOString(),
      pid: null,
      pidStart: null,
      exitReason: null,
      // A fork is as sensitive as its tree.
      sensitive: input.parent?.sensitive ?? input.sensitive ?? false,
      parentId: input.parent?.id ?? null,
      treeId: input.parent?.treeId ?? id,
      versionId: input.parent?.versionId ?? null,
      isMain: input.parent === null,
      madeBy: { role: input.madeBy.role, uid: input.madeBy.uid, user: input.madeBy.user },
      claimedBy: null,
      retiredAt: null,
    };
    this.registry.insertWorkspace(record);
    if (input.parent === null) this.runtime.allocateIds(record.treeId);
    for (const port of new Set(input.ports)) this.registry.setPort(record.id, port, null);
    return record;
  }

  start(ref: string): Promise<Workspace> {
    const { id } = this.record(ref);
    return this.lock.run(id, async () => {
      const current = this.record(id);
      if (current.state === 'running') return this.view(current);
      if (current.state === 'failed')
        throw new GroveError('E_CONFLICT', `workspace '${current.name}' failed while it was being discarded and its files are gone: discard it again`);
      return this.startLocked(current);
    });
  }

  /** Changes a branch's limits (fields left out stay), live when it runs; its future forks inherit them. */
  setLimits(ref: string, change: Partial<BranchLimits>): Promise<Workspace> {
    const { id } = this.record(ref);
    return this.lock.run(id, async () => {
      const ws = this.record(id);
      await this.runtime.setLimits(ws, { ...this.runtime.limits(ws), ...change });
      return this.publish(id);
    });
  }

  stop(ref: string): Promise<Workspace> {
    const { id } = this.record(ref);
    return this.lock.run(id, async () => {
      await this.runtime.tearDown(this.record(id));
      this.registry.setWorkspaceState(id, 'stopped', null);
      return this.publish(id);
    });
  }

  /** Discards a branch; a helper that dies on the way leaves it to the next start to finish (finishDiscard). */
  delete(ref: string, fault?: Fault<DiscardStage>): Promise<{ deleted: string }> {
    const { id } = this.record(ref);
    return this.lock.run(id, async () => {
      this.registry.beginPendingOp({ kind: 'discard', workspaceId: id });
      await this.destroy(this.record(id), fault);
      return { deleted: id };
    });
  }

  /** A discard the last helper was killed in: it is finished (reconcile.ts). */
  async finishDiscard(id: string): Promise<void> {
    await this.lock.run(id, async () => {
      const ws = this.registry.findWorkspace(id);
      if (ws) await this.destroy(ws);
      else this.registry.endPendingOp(id);
    });
  }

  /**
   * After a helper restart: a branch whose init is still the same process is
   * adopted (its forwarders re-open on the same socket and host ports); any other is
   * brought to a clean stopped state, or removed if it died while being made.
   */
  async reconcile(): Promise<void> {
    for (const ws of this.registry.listWorkspaces()) {
      if (ws.state === 'running' && (await this.noticeExit(ws.id, 'while the helper was down'))) continue;
      await this.lock.run(ws.id, async () => {
        if (ws.state === 'creating') return this.destroy(ws);
        if (ws.state === 'running' && ws.pid !== null && ws.pidStart !== null) return this.runtime.adopt(ws);
        await this.runtime.tearDown(ws);
        if (ws.state === 'running') this.registry.setWorkspaceState(ws.id, 'stopped', null); // a record without its process's identity
      });
    }
  }

  /** Marks a branch running with its init process and publishes it. */
  async markRunning(ws: WorkspaceRecord, proc: { pid: number; pidStart: number }): Promise<Workspace> {
    this.registry.setWorkspaceState(ws.id, 'running', proc);
    await this.runtime.openForwarders(this.record(ws.id));
    return this.publish(ws.id);
  }

  /**
   * Removes a branch, every host object it has, and its record; its children
   * move up to its parent. Its record goes last: a failure on the way leaves
   * it stopped with its files (or failed, once they are gone), never half
   * running, and discarding it again finishes the job. Its removal is
   * announced here, whoever removes it: a discard, a promotion, or the undo
   * of a fork that had already announced it running.
   */
  async destroy(ws: WorkspaceRecord, fault?: Fault<DiscardStage>): Promise<void> {
    try {
      await this.runtime.tearDown(ws);
      injectFault(fault, 'teardown', "fault injected after the discard's teardown");
      await this.ledger.removeOwned(ws.id);
      injectFault(fault, 'files', "fault injected after the discard's files");
    } catch (err) {
      this.registry.endPendingOp(ws.id); // what is left is for a person to discard again
      const filesKept = await access(this.storage.filesPath(ws)).then(
        () => true,
        () => false,
      );
      this.registry.setWorkspaceState(ws.id, filesKept ? 'stopped' : 'failed', null);
      this.publish(ws.id);
      const left = filesKept ? 'it is stopped, with its files' : 'its files are gone too';
      throw new GroveError('E_HOST', `discarding '${ws.name}' failed (${(err as Error).message}); ${left}: discard it again`);
    }
    for (const child of this.registry.deleteWorkspace(ws.id)) this.publish(child); // its pending operation with it
    this.events.removed(ws.id);
  }

  publish(id: string): Workspace {
    const view = this.get(id);
    this.events.changed(view);
    return view;
  }

  private async startLocked(ws: WorkspaceRecord): Promise<Workspace> {
    try {
      await this.storage.ensureMounted(ws);
      await this.runtime.prepareHost(ws);
      return await this.markRunning(ws, await this.runtime.bootContainer(ws));
    } catch (err) {
      throw await undoAfter(err, [
        async () => {
          await this.runtime.tearDown(ws);
          if (ws.state !== 'creating') this.registry.setWorkspaceState(ws.id, 'stopped', null);
        },
      ]);
    }
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
      address: this.runtime.netPlan(ws).containerAddress,
      ports: this.registry
        .ports(ws.id)
        .filter((p) => ws.state === 'running' && p.hostPort !== null)
        .map((p) => ({ containerPort: p.containerPort, hostPort: p.hostPort as number, hostAddress: '127.0.0.1' as const })),
      vncSocket: ws.state === 'running' ? this.runtime.vncSocketPath(ws) : null,
      streamSocket: ws.state === 'running' ? this.runtime.streams.socketPath(ws.id) : null,
      pid: ws.state === 'running' ? ws.pid : null,
      exitReason: ws.state === 'exited' ? ws.exitReason : null,
      parent: ws.parentId,
      tree: ws.treeId,
      version: ws.versionId,
      main: ws.isMain,
      madeBy: ws.madeBy,
      claimedBy: ws.claimedBy,
      limits: this.runtime.limits(ws),
      project: this.registry.project(ws.treeId),
      sensitive: ws.sensitive,
      disk: this.storage.diskUse(ws),
      retiredAt: ws.retiredAt,
      merges: this.registry.mergesInto(ws.id, MAX_MERGES_SHOWN),
    };
  }
}

/** What can be said of a branch whose init was found gone: the kernel's OOM kills in it, if any, and its memory limit. */
export function exitReason(ws: Pick<WorkspaceRecord, 'pid'>, oomKills: number, limits: BranchLimits, when: 'now' | 'while the helper was down'): string {
  const gone = `its init (host pid ${ws.pid}) ended ${when === 'now' ? 'on its own' : 'while the helper was down'}`;
  if (oomKills === 0) return gone;
  return `${gone}; the kernel's out-of-memory killer had ended ${oomKills} of its processes (memory limit ${Math.round(limits.memoryBytes / 2 ** 20)} MiB)`;
}

/**
 * Each branch gets its own hostname and machine-id, never its image's or its
 * parent's, a new fork generation (generation.ts, returned to be announced
 * once its processes run), and its apps are pointed at the egress gate.
 * Written without following symlinks, before any process of the branch runs
 * in the root: the root belongs to the branch, the writer is root.
 */
export async function writeIdentity(rootfs: string, ws: WorkspaceRecord, owner: FileOwner): Promise<Generation> {
  await writeInside(rootfs, 'etc/hostname', `${ws.hostname}\n`, owner);
  await writeInside(rootfs, 'etc/machine-id', `${ws.machineId}\n`, owner);
  await writeInside(rootfs, 'etc/hosts', `127.0.0.1\tlocalhost\n127.0.1.1\t${ws.hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n`, owner);
  await writeProxyConfig(rootfs, owner);
  return renewGeneration(rootfs, owner);
}

/**
 * A name already in use. An agent gets the same words whoever's workspace has
 * it, in its scope or not, and they name no workspace: one outside its scope
 * must not show itself through a refused name (auth/scope-guard.ts).
 */
function nameTaken(name: string, madeBy: Maker): GroveError {
  if (madeBy.role === 'agent') return new GroveError('E_CONFLICT', `the name '${name}' is not free: choose another`);
  return new GroveError('E_CONFLICT', `a workspace named '${name}' already exists`);
}
