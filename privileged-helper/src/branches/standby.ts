// Warm standbys of versions (issue 49): once a checkpoint is saved (not a
// rollback's own), and a memory budget allows them (GROVE_STANDBY_BUDGET_MIB),
// the version is restored ahead and frozen, so that a fork from it can take
// that copy instead of restoring one.
//
// A standby is a branch without a record, so no listing shows it: its network
// and cgroups are a set prepared ahead (workspaces/prepared-pool.ts), its
// files a snapshot of the version's, and its processes are restored from
// the version's images into a freezer group of its own and frozen at once.
// Every host object it has is in the ledger under its id, which no record
// names: a helper that dies leaves them as orphans that the next start
// removes. A version's standby goes before the version does; over the
// budget, the oldest standbys go first.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createFreezer, freeze, groupPids, thaw } from '../host/cgroups.js';
import { run } from '../host/run.js';
import { restoreWorkDir, type Criu } from '../host/criu/criu.js';
import { readProcess } from '../host/memory-stats.js';
import { netnsPath } from '../host/netns.js';
import { mib } from '../host/space.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import type { BranchStorage } from '../workspaces/branch-storage.js';
import type { HostLedger } from '../workspaces/ledger.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import { writeIdentity } from '../workspaces/workspace-service.js';

export interface StandbyDeps {
  registry: Registry;
  ledger: HostLedger;
  runtime: BranchRuntime;
  storage: BranchStorage;
  criu: Pick<Criu, 'restore'>;
  versionsDir: string;
  /** What all standbys may hold together (their processes' PSS); 0: none are made. */
  budgetMib: number;
  /** Branches have cgroups (a standby needs its freezer group beside them). */
  caged: boolean;
  log: (msg: string) => void;
}

export interface StandbyView {
  /** The id its host objects are under. */
  id: string;
  version: string;
  pssBytes: number;
  ageSeconds: number;
}

/** A standby a fork's child becomes: its id and network slot, and its frozen init. */
export interface TakenStandby {
  id: string;
  netIndex: number;
  proc: { pid: number; pidStart: number };
}

interface Standby {
  id: string;
  netIndex: number;
  versionId: string;
  /** Its init, once restored. */
  proc: { pid: number; pidStart: number } | null;
  madeAt: number;
  /** Settles once it is restored and frozen, or gone after a failure (then `ready` stays false). */
  made: Promise<void>;
  ready: boolean;
  dropping: Promise<void> | null;
}

export class StandbyService {
  /** By version id: at most one each. */
  private readonly standbys = new Map<string, Standby>();

  constructor(private readonly d: StandbyDeps) {}

  /** A checkpoint just saved (not a rollback's own): a standby of it is made in the background, if standbys are wanted and its branch is still there. */
  offer(versionId: string): void {
    if (this.d.budgetMib === 0 || !this.d.caged || this.standbys.has(versionId)) return;
    const version = this.d.registry.findVersion(versionId);
    const branch = version?.saved ? this.d.registry.findWorkspace(version.branchId) : null;
    if (!branch) return;
    const slot = this.d.runtime.takePrepared();
    if (!slot) return this.d.log(`no standby of version ${versionId}: no network was prepared ahead`);
    const ws: WorkspaceRecord = {
      ...branch,
      id: slot.id,
      netIndex: slot.netIndex,
      state: 'creating',
      pid: null,
      pidStart: null,
      machineId: randomBytes(16).toString('hex'),
    };
    const standby: Standby = {
      id: slot.id,
      netIndex: slot.netIndex,
      versionId,
      proc: null,
      madeAt: Date.now(),
      made: Promise.resolve(),
      ready: false,
      dropping: null,
    };
    standby.made = this.make(ws, versionId).then(
      (proc) => {
        standby.proc = proc;
        standby.ready = true;
      },
      async (err: Error) => {
        this.d.log(`the standby of version ${versionId} could not be made: ${err.message}`);
        await this.remove(standby).catch((e: Error) => this.d.log(`removing the half-made standby ${standby.id} failed (start-up removes it): ${e.message}`));
      },
    );
    this.standbys.set(versionId, standby);
    void standby.made.then(() => this.keepWithinBudget()).catch((err: Error) => this.d.log(`keeping standbys within budget failed: ${err.message}`));
  }

  /**
   * The version's standby, if one is ready, for a fork's child to become (a
   * branch recorded under its id): from now on it is no standby, and its host
   * objects are that branch's.
   */
  take(versionId: string): TakenStandby | null {
    const standby = this.standbys.get(versionId);
    if (!standby?.ready || standby.dropping || !standby.proc) return null;
    this.standbys.delete(versionId);
    this.d.runtime.forgetTree(standby.id); // its record says its tree from now on
    return { id: standby.id, netIndex: standby.netIndex, proc: standby.proc };
  }

  /** A taken standby, now `branch`: its own hostname set in its namespace while it is still frozen, then thawed. */
  async wake(branch: WorkspaceRecord, taken: TakenStandby): Promise<void> {
    await run('nsenter', ['-t', String(taken.proc.pid), '-u', '--', 'hostname', branch.hostname]);
    await thaw(this.d.runtime.cgroupName(branch));
  }

  /** A taken standby that no branch became after all: removed. */
  discard(taken: TakenStandby): Promise<void> {
    return this.remove(taken);
  }

  /** Removes the version's standby, if it has one (one being made is waited for first). */
  drop(versionId: string): Promise<void> {
    const standby = this.standbys.get(versionId);
    if (!standby) return Promise.resolve();
    standby.dropping ??= (async () => {
      await standby.made;
      await this.remove(standby);
    })().finally(() => this.standbys.delete(versionId));
    return standby.dropping;
  }

  /** The helper stops: standbys go with it (a frozen copy nobody can take only holds memory). */
  async dropAll(): Promise<void> {
    for (const versionId of [...this.standbys.keys()]) await this.drop(versionId);
  }

  /** The standbys ready now, oldest first, with what their processes hold. */
  async list(): Promise<StandbyView[]> {
    const ready = [...this.standbys.values()].filter((s) => s.ready && !s.dropping);
    return Promise.all(
      ready.map(async (s) => ({ id: s.id, version: s.versionId, pssBytes: await this.pss(s), ageSeconds: Math.round((Date.now() - s.madeAt) / 1000) })),
    );
  }

  /**
   * The version's files snapshotted and its processes restored into the set
   * prepared ahead and a freezer group, then frozen: each object recorded
   * under the standby's id before it is made.
   */
  private async make(ws: WorkspaceRecord, versionId: string): Promise<{ pid: number; pidStart: number }> {
    const dir = path.join(this.d.versionsDir, versionId);
    const images = path.join(dir, 'images');
    // Its network and cgroups are the set's as made: the set stays taken (its id and network slot held) until it is torn down.
    this.d.runtime.runsAsTree(ws.id, ws.treeId);
    const group = this.d.runtime.cgroupName(ws);
    const freezer = createFreezer(group); // removed with the set's cgroups, which the ledger has under this id
    // CRIU's work dir in the version's images: gone after a restore that succeeds, the standby's to remove otherwise.
    this.d.registry.recordObject({ kind: 'directory', name: restoreWorkDir(images, ws.id), owner: ws.id });
    const rootfs = await this.d.storage.createFrom(ws, path.join(dir, 'files'));
    await writeIdentity(rootfs, ws, this.d.storage.owner(ws));
    const { pid } = await this.d.criu.restore({
      imagesDir: images,
      rootfs,
      netnsPath: netnsPath(this.d.runtime.netPlan(ws).netns),
      hostname: ws.hostname,
      name: ws.id,
      binds: this.d.storage.externalBinds(ws),
      cgroups: [...this.d.runtime.cgroups(ws), freezer],
      mergeable: !ws.sensitive,
      userns: this.d.runtime.idRange(ws) !== null,
    });
    const proc = await this.d.runtime.adoptProcess(ws, pid);
    await freeze(group);
    await this.d.storage.bindExternals(ws);
    return proc;
  }

  /** Everything the standby has, as a discarded branch's goes: its processes (thawed to die), network, cgroups, then files. */
  private async remove(standby: { id: string }): Promise<void> {
    await this.d.runtime.tearDown({ id: standby.id });
    await this.d.ledger.removeOwned(standby.id);
    this.d.runtime.forgetTree(standby.id);
  }

  /** Over the budget, the oldest standbys go until the rest fit. */
  private async keepWithinBudget(): Promise<void> {
    const standbys = await this.list();
    let total = standbys.reduce((sum, s) => sum + s.pssBytes, 0);
    const budget = this.d.budgetMib * 2 ** 20;
    for (const s of standbys) {
      if (total <= budget) return;
      this.d.log(`dropping the standby of version ${s.version}: standbys hold ${mib(total)} MiB, over their budget of ${this.d.budgetMib} MiB`);
      await this.drop(s.version);
      total -= s.pssBytes;
    }
  }

  /** The PSS of every process in the standby's memory group. */
  private async pss(standby: Standby): Promise<number> {
    let bytes = 0;
    for (const pid of await groupPids(this.d.runtime.cgroupName(standby))) bytes += (await readProcess(pid))?.pssBytes ?? 0; // one at a time, as perf.get reads them
    return bytes;
  }
}
