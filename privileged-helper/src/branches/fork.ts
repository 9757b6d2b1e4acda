// fork(branch, N): one running branch becomes N new sibling branches at one
// point in time while the source keeps running. A fork is a transaction: every
// host object is recorded in the ledger as it is made (children under their
// own ids, scratch objects under the fork's id), and any failure — or an
// injected one — removes everything made so far in reverse order, and checks
// that the source is running on unharmed.
//
//   prepare  reserve the children (ids, names) and make the networks of those restored first
//            (the others' each at its turn, in restore) — the source is untouched
//   dump     CRIU --leave-running --tcp-established; its post-dump action snapshots the
//            source's files while the tree is still frozen (one instant for memory and files):
//            the fork point, read-only, kept as the children's merge base (fork-points.ts),
//            and with the kernel tier captures its anonymous memory (host/share-holder.ts)
//   thaw     the source runs on (verified), while CRIU still saves its private pages (criu-patches/0022)
//   restore  each child: a writable snapshot of the fork point (branch-storage.ts), its own identity,
//            the tree restored into its own netns (as many at once as there are cores, first child first);
//            they start at the thaw, and CRIU waits for the dump's pages before it reads any (0022);
//            with the kernel tier its anonymous memory is attached from the capture, not copied
//   expose   each child's desktop socket and host ports open; once its first VNC frame is out it is
//            'running' and announced, without waiting for its siblings
//   commit   the fork and its fork point are recorded; children are returned
//
// A fork from a version (`version`) leaves the source alone, running or not:
// its children are restored from the version's images, their files snapshots
// of the version's (prepare makes that fork point), so there is no dump and
// no thaw; the version is held (not deleted) until the fork is over.
import { mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { allSettled, forEachLimited } from '../concurrency.js';
import { netnsPath } from '../host/netns.js';
import { BRANCH_HEADROOM_BYTES, mib, requireSpace, type SpaceNeed } from '../host/space.js';
import { isSameProcess } from '../host/proc.js';
import { copiedBecause } from '../host/kernel-tier.js';
import { ShareHolder } from '../host/share-holder.js';
import { firstFrame } from '../desktop/rfb-probe.js';
import { restoreWorkDir, type DumpRun } from '../host/criu/criu.js';
import { snapshot } from '../host/btrfs.js';
import type { ForkFault, ForkReport, ForkStage, Workspace } from '../protocol/entities.js';
import type { Maker } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { BranchDeps } from './branch-deps.js';
import { injectFault, injectInFreeze, type Fault } from '../workspaces/faults.js';
import { forkPointPath } from './fork-points.js';
import type { WorkspaceRecord } from '../registry/registry.js';
import { writeIdentity } from '../workspaces/workspace-service.js';
import { announceGeneration, GENERATION_FILE, type Generation } from '../workspaces/generation.js';
import { undoAfter } from '../undo.js';
import type { HeldVersion, VersionService } from './versions.js';
import type { StandbyService, TakenStandby } from './standby.js';

export const MAX_COPIES = 16;

export interface ForkOptions {
  copies: number;
  names?: string[];
  /** Restore the children from this version of the source's workspace instead of the source as it runs now. */
  version?: string;
  /** Who forks: the children are theirs (an agent may discard what it forked without asking). */
  madeBy: Maker;
  /** Test switch: fail right after this stage, or stall (refused unless the helper allows fault injection). */
  fault?: Fault<ForkFault>;
}

export interface ForkDeps extends BranchDeps {
  scratchDir: string;
  /** The terminals attached in a running branch: each goes into the children (said in the report). */
  terminalsIn: (ws: WorkspaceRecord) => { holder: string; command: string }[];
  /** The runs (exec) under way in a running branch: each goes into the children, detached (said in the report). */
  runsIn: (ws: WorkspaceRecord) => { id: string; command: string }[];
  progress: (job: string, stage: string, message: string, done: boolean) => void;
  versions: Pick<VersionService, 'holdForFork'>;
  /** A version's standby, which a fork from it takes for its first child (standby.ts). */
  standbys: Pick<StandbyService, 'take' | 'wake' | 'discard' | 'offer'>;
}

/** The stages a fork from a version has (it has no dump, so no freeze or thaw either), where a test may make it fail. */
const VERSION_FORK_FAULTS: readonly ForkFault[] = ['prepare', 'restore', 'expose', 'commit', 'stall'];

export class ForkService {
  constructor(private readonly d: ForkDeps) {}

  async fork(ref: string, opts: ForkOptions): Promise<ForkReport> {
    if (opts.names && opts.names.length !== opts.copies) throw new GroveError('E_INVALID_PARAMS', `give ${opts.copies} names, or none`);
    if (opts.version !== undefined) return this.forkFromVersion(ref, opts.version, opts);
    const source = this.d.workspaces.running(ref);
    return this.d.workspaces.lock.run(source.id, () =>
      this.d.ksm.hold((releaseKsm) => new ForkTransaction(this.d, this.d.workspaces.running(source.id), opts, releaseKsm, null).run()),
    );
  }

  /**
   * The source is only read: its read turn keeps it from being deleted or
   * rolled back meanwhile (as a diff's does), beside other forks from its versions.
   */
  private async forkFromVersion(ref: string, versionId: string, opts: ForkOptions): Promise<ForkReport> {
    if (opts.fault && !VERSION_FORK_FAULTS.includes(opts.fault.at))
      throw new GroveError('E_INVALID_PARAMS', `a fork from a version has no '${opts.fault.at}' stage (it has ${VERSION_FORK_FAULTS.join(', ')})`);
    const { id } = this.d.workspaces.record(ref);
    return this.d.workspaces.lock.read(id, async () => {
      const source = this.d.workspaces.record(id);
      const version = await this.d.versions.holdForFork(versionId, source.treeId);
      try {
        return await this.d.ksm.hold((releaseKsm) => new ForkTransaction(this.d, source, opts, releaseKsm, version).run());
      } finally {
        version.release();
        this.d.standbys.offer(versionId); // in the background: the next fork from it finds one again
      }
    });
  }
}

class ForkTransaction {
  private readonly id: string;
  /** The fork point's id: its snapshot outlives the fork's own objects (run removes those). */
  private readonly pointId: string;
  private readonly children: WorkspaceRecord[] = [];
  /** Each child's turn in the workspaces' lock, taken when it is reserved and given back when the fork is over (run). */
  private readonly childTurns: (() => void)[] = [];
  private readonly started = performance.now();
  private readonly timings = { prepare: 0, dump: 0, sourceFrozen: 0, thaw: 0, restore: 0, expose: 0, firstFrame: 0, total: 0 };
  private readonly criuStats: ForkReport['criu'] = { dump: null, restores: [] };
  private readonly readyMs: number[] = [];
  /** What the report says a child did not get (leftBehind). */
  private readonly notes: string[] = [];
  /** What the report says each child got a copy of, as the dump found it (carried). */
  private carriedNotes: string[] = [];
  /** The kernel tier's holder of the source's capture, while the fork runs. */
  private holder: ShareHolder | null = null;
  /** How the children got their memory (the report's words). */
  private memory = '';
  /** The dump until every image is written, which is after the source runs again: CRIU's stats. */
  private dumped: Promise<ForkReport['criu']['dump']> = Promise.resolve(null);
  /** Whether the dump keeps the source's pages in its twins for the restores, and how to let them go (DumpRun). */
  private twins: Pick<DumpRun, 'pagesInTwins' | 'releaseTwins'> = { pagesInTwins: false, releaseTwins: async () => undefined };
  /** The version's standby, which the first child became instead of being restored (a fork from a version). */
  private standby: TakenStandby | null = null;
  /** How many children are restored at a time: as many as there are cores (bringUp). */
  private readonly atOnce = os.availableParallelism();

  constructor(
    private readonly d: ForkDeps,
    private readonly source: WorkspaceRecord,
    private readonly opts: ForkOptions,
    /** Lets ksmd scan fast again before the fork ends (host/ksm.ts). */
    private readonly releaseKsm: () => Promise<void>,
    /** The version the children are restored from; null: the source as it runs. */
    private readonly from: HeldVersion | null,
  ) {
    const serial = d.registry.freshId();
    this.id = `fork-${serial}`;
    this.pointId = `point-${serial}`;
  }

  /**
   * The children are the fork's until it has committed or been undone: a
   * child announced running (bringUp) is not yet one anybody else may act on.
   * Without its turn held, the exit watch saw a child the undo had just killed
   * as exited and tore it down at the same time as the undo did, and the two
   * removals of its host objects raced (one found a netns the other was
   * deleting): the undo failed and the child was left behind, stopped.
   */
  async run(): Promise<ForkReport> {
    try {
      const report = await this.make().catch(async (err: unknown) => {
        throw await this.undo(err);
      });
      await this.holder?.stop();
      await this.d.ledger.removeOwned(this.id);
      return report;
    } finally {
      for (const release of this.childTurns) release();
    }
  }

  private async make(): Promise<ForkReport> {
    const { imagesDir, forkPoint } = this.from ? await this.stage('prepare', () => this.prepareFrom(this.from!)) : await this.takeLive();
    await this.bringUp(imagesDir, forkPoint);
    if (this.opts.fault?.at === 'stall') await new Promise<never>(() => undefined); // only the helper's death ends it
    await this.twins.releaseTwins();
    await this.recordDump();
    const children = await this.stage('commit', async () => this.commit());
    this.timings.total = performance.now() - this.started;
    this.d.registry.recordFork({ fork: this.id, source: this.source, copies: children.length, timings: this.timings });
    this.recordForkPoint(forkPoint, children);
    this.d.progress(this.id, 'done', `forked ${this.source.name} into ${children.length} in ${Math.round(this.timings.total)} ms`, true);
    return {
      fork: this.id,
      source: this.source.id,
      children,
      timings: this.timings,
      readyMs: this.readyMs,
      memory: this.memory,
      criu: this.criuStats,
      leftBehind: this.notes,
      carried: this.carriedNotes,
      ...(this.from && { version: this.from.id }),
      ...(this.standby && { standby: this.standby.id }),
    };
  }

  /** The source's state now: dumped (its files snapshotted in the freeze), then running on. */
  private async takeLive(): Promise<{ imagesDir: string; forkPoint: string }> {
    const imagesDir = await this.stage('prepare', () => this.prepare());
    const forkPoint = await this.stage('dump', () => this.dump(imagesDir));
    await this.stage('thaw', () => this.verifySourceRunning());
    return { imagesDir, forkPoint };
  }

  /**
   * Undoes the fork: every child made so far, newest first, and the fork's
   * own objects. A child that cannot be discarded (left stopped, to be
   * discarded again) does not keep the others; the error to tell is the
   * fork's, with each undo that failed (undo.ts).
   */
  private async undo(err: unknown): Promise<unknown> {
    await this.twins.releaseTwins().catch(() => undefined); // the error to tell is the fork's
    // CRIU writes into the images until it exits; a dump that failed is what made the restores fail.
    const failure =
      (await this.dumped.then(
        () => null,
        (e: unknown) => e,
      )) ?? err;
    const told = await undoAfter(failure, [
      ...[...this.children].reverse().map((child) => () => this.d.workspaces.destroy(child)),
      () => this.holder?.stop(),
      () => this.d.ledger.removeOwned(this.id),
      () => this.d.ledger.removeOwned(this.pointId),
    ]);
    await this.sayUndone(told === failure);
    return told;
  }

  private async stage<T>(name: ForkStage, work: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    const result = await work();
    const ms = performance.now() - t0;
    if (name in this.timings) this.timings[name as keyof typeof this.timings] = ms;
    this.d.progress(this.id, name, `${name}: ${Math.round(ms)} ms`, false);
    this.faultAfter(name);
    return result;
  }

  private faultAfter(name: ForkStage): void {
    injectFault(this.opts.fault, name, `fault injected after stage '${name}'`);
  }

  /**
   * Restores and exposes the children, as many at a time as there are cores,
   * in name order (the first is the one a person looks at first): each is
   * ready — running, its desktop shown — the moment its first frame is out,
   * not when the last sibling's is. The fork stays one transaction: a
   * sibling that fails undoes them all (undo).
   *
   * Once the first ones are up and more are to come, ksmd may merge those
   * while the rest restore: the memory it frees is memory this VM gives
   * again at once, so the later restores find memory ready instead of
   * waiting for the host to hand out more (docs/bench-history.md has the
   * fan-out figures).
   */
  private async bringUp(imagesDir: string, forkPoint: string): Promise<void> {
    const t0 = performance.now();
    let restored = t0;
    let ready = 0;
    await forEachLimited(this.children, this.atOnce, async (child) => {
      if (this.children.indexOf(child) >= this.atOnce) await this.prepareAtItsTurn(child);
      const { proc, generation } =
        child.id === this.standby?.id ? await this.wakeStandby(child, this.standby) : await this.restoreChild(child, imagesDir, forkPoint);
      restored = Math.max(restored, performance.now());
      this.faultAfter('restore');
      await this.expose(child);
      this.faultAfter('expose');
      this.readyMs[this.children.indexOf(child)] = performance.now() - this.started;
      this.d.registry.setWorkspaceState(child.id, 'running', proc);
      this.d.workspaces.publish(child.id);
      await this.announce(child, generation);
      if (++ready === this.atOnce && this.children.length > this.atOnce) await this.releaseKsm();
    });
    this.timings.restore = restored - t0;
    this.timings.expose = performance.now() - restored;
    this.d.progress(this.id, 'restore', `restored and on screen: ${Math.round(performance.now() - t0)} ms`, false);
  }

  private async prepare(): Promise<string> {
    await this.requireSpace();
    await this.reserveChildren();
    const imagesDir = path.join(this.d.scratchDir, this.id);
    await this.d.ledger.make({ kind: 'directory', name: imagesDir, owner: this.id }, () => mkdir(imagesDir, { recursive: true, mode: 0o700 }));
    return imagesDir;
  }

  /**
   * A fork from a version: the children's images are the version's, and their
   * fork point a read-only snapshot of its files (the base their merges need),
   * the fork's until it commits.
   */
  private async prepareFrom(version: HeldVersion): Promise<{ imagesDir: string; forkPoint: string }> {
    await requireSpace(`a fork of '${this.source.name}' from version ${version.id} into ${this.opts.copies}`, [this.childrenRoom()]);
    await this.reserveChildren();
    const forkPoint = forkPointPath(this.d.storage.workspacesDir, this.pointId);
    await this.d.ledger.make({ kind: 'subvolume', name: forkPoint, owner: this.pointId }, () => snapshot(version.files, forkPoint, { readonly: true }));
    this.memory = `copied by CRIU from version ${version.id}'s images (KSM merges the copies later)`;
    return { imagesDir: version.images, forkPoint };
  }

  /** The children recorded (each its turn held), and the networks of those restored first made. */
  private async reserveChildren(): Promise<void> {
    const names = this.opts.names ?? this.childNames();
    const ports = this.d.registry.ports(this.source.id).map((p) => p.containerPort);
    for (const name of names) {
      const child = await this.reserveChild(name, ports);
      this.children.push(child);
      this.childTurns.push(await this.d.workspaces.lock.acquire(child.id));
    }
    // The networks of the children restored first, all at once (three ip
    // and nft runs and the cgroups' writes each, or a set from the pool);
    // the others each at its turn (bringUp), so that a fan-out's later ones
    // hold up neither the freeze nor the first children. allSettled: every
    // one has ended before a failure unwinds them.
    await allSettled(this.children.slice(0, this.atOnce).map((child) => this.d.runtime.prepareHost(child)));
  }

  /** A child recorded; in a fork from a version, the first one becomes the version's standby if it has one ready. */
  private async reserveChild(name: string, ports: number[]): Promise<WorkspaceRecord> {
    const standby = this.from && this.children.length === 0 ? this.d.standbys.take(this.from.id) : null;
    try {
      const child = this.d.workspaces.reserve({
        name,
        image: this.source.image,
        parent: this.source,
        ports,
        madeBy: this.opts.madeBy,
        ...(standby && { standby }),
      });
      this.standby = standby;
      return child;
    } catch (err) {
      throw standby ? await undoAfter(err, [() => this.d.standbys.discard(standby)]) : err;
    }
  }

  /**
   * The child that became the version's standby: its processes restored and
   * frozen ahead, its files the version's. It gets its own identity files
   * and hostname, and runs.
   */
  private async wakeStandby(child: WorkspaceRecord, standby: TakenStandby): Promise<{ proc: { pid: number; pidStart: number }; generation: Generation }> {
    const generation = await writeIdentity(this.d.storage.rootfsPath(child), child, this.d.storage.owner(child));
    await this.d.standbys.wake(child, standby);
    this.d.registry.setVersionOrigin(child.id, this.from!.id);
    this.d.registry.setWorkspaceState(child.id, 'creating', standby.proc);
    return { proc: standby.proc, generation };
  }

  /** The network and cgroups of a child restored after the first ones, made just before its restore. */
  private async prepareAtItsTurn(child: WorkspaceRecord): Promise<void> {
    const t0 = performance.now();
    await this.d.runtime.prepareHost(child);
    this.d.progress(this.id, 'prepare', `${child.name}'s network, made at its turn: ${Math.round(performance.now() - t0)} ms`, false);
  }

  /** Room for the dump (the source's memory) in the scratch space and for each child's first writes in the pool. */
  private async requireSpace(): Promise<void> {
    const dump = (await this.d.runtime.usage(this.source)).dumpableBytes;
    await requireSpace(`a fork of '${this.source.name}' into ${this.opts.copies}`, [
      this.childrenRoom(),
      { where: 'the scratch space', dir: this.d.scratchDir, bytes: dump, why: "the dump of the source's memory" },
    ]);
  }

  private childrenRoom(): SpaceNeed {
    return {
      where: 'the pool',
      dir: this.d.storage.workspacesDir,
      bytes: this.opts.copies * BRANCH_HEADROOM_BYTES,
      why: `${mib(BRANCH_HEADROOM_BYTES)} MiB for each child's first writes`,
    };
  }

  /**
   * Terminals attached in the source and runs under way: their holders and
   * process trees are the branch's (exec/terminal-holder.ts, run-holder.ts),
   * so each child has a copy.
   */
  private carried(): string[] {
    return [
      ...this.d
        .terminalsIn(this.source)
        .map((t) => `terminal ${t.holder} (${t.command}) goes into each child with all it runs, detached: grove exec -t CHILD --attach ${t.holder}`),
      ...this.d
        .runsIn(this.source)
        .map((r) => `exec ${r.id} (${r.command}) goes on in each child, detached from its caller: its output in grove exec --log CHILD ${r.id}`),
    ];
  }

  /** Names NAME-1, NAME-2… that no branch has, and no branch of the workspace ever had. */
  private childNames(): string[] {
    return this.d.registry.freshBranchNames(this.source.treeId, this.source.name.replace(/-\d+$/, '').slice(0, 26), this.opts.copies);
  }

  /**
   * Resolves once the source runs again; the dump goes on saving its pages,
   * or keeping them in its twins for the children's restores until bringUp is
   * done (this.dumped). Its snapshot of the source's files is the read-only
   * fork point that each child's files are a snapshot of, kept after the fork
   * as their merge base; until the fork commits it is the fork's to undo.
   */
  private async dump(imagesDir: string): Promise<string> {
    const forkPoint = forkPointPath(this.d.storage.workspacesDir, this.pointId);
    this.d.registry.recordObject({ kind: 'subvolume', name: forkPoint, owner: this.pointId });
    const share = await this.startSharing();
    this.carriedNotes = this.carried();
    const run = this.d.criu.dump({
      share,
      initPid: this.source.pid!,
      netnsPath: netnsPath(this.d.runtime.netPlan(this.source).netns),
      imagesDir,
      snapshot: { from: this.d.storage.filesPath(this.source), to: forkPoint },
      binds: this.d.storage.externalBinds(this.source).map((b) => b.containerPath),
      userns: this.d.runtime.idRange(this.source) !== null,
      pagesFollow: true,
    });
    this.dumped = run.done;
    this.dumped.catch(() => undefined); // awaited by run(), also when something else failed first
    this.twins = run;
    await injectInFreeze(this.opts.fault, 'freeze', forkPoint, run.done);
    await run.thawed;
    return forkPoint;
  }

  /** CRIU's stats of the dump, which it writes once the pages are saved: how long the source was frozen. */
  private async recordDump(): Promise<void> {
    this.criuStats.dump = await this.dumped;
    this.timings.sourceFrozen = this.criuStats.dump?.sourceFrozenMs ?? this.timings.dump;
  }

  /**
   * With the kernel tier, a holder for the source's capture (host/kernel-tier.ts
   * decides). A holder that does not start costs the fork its sharing, not the fork.
   */
  private async startSharing(): Promise<ShareHolder['session'] | undefined> {
    const tier = await this.d.kernelTier.current();
    this.memory = tier.memory;
    if (!tier.sharing) return undefined;
    try {
      this.holder = await ShareHolder.start(this.d.kernelTier.tool, path.join(this.d.scratchDir, `${this.id}.share`));
    } catch (err) {
      this.memory = copiedBecause((err as Error).message);
      return undefined;
    }
    return this.holder.session;
  }

  private async verifySourceRunning(): Promise<void> {
    if (!(await sourceAlive(this.source))) throw new GroveError('E_HOST', `the source '${this.source.name}' is not running after the dump`);
  }

  /**
   * Each step here is on the child's way to its first frame, and most of
   * them start programs, each a cost of its own: what does not depend on
   * another runs at once with it.
   */
  private async restoreChild(
    child: WorkspaceRecord,
    imagesDir: string,
    forkPoint: string,
  ): Promise<{ proc: { pid: number; pidStart: number }; generation: Generation }> {
    const netns = netnsPath(this.d.runtime.netPlan(child).netns);
    // In a version's images, CRIU's work dir of a restore that fails would stay: the fork's to remove.
    if (this.from) this.d.registry.recordObject({ kind: 'directory', name: restoreWorkDir(imagesDir, child.id), owner: this.id });
    const root = this.makeRoot(child, forkPoint);
    await allSettled([root, this.d.criu.lockForRestore(netns)]);
    const { rootfs, generation } = await root;
    const { pid, stats } = await this.d.criu.restore({
      share: this.holder?.session,
      imagesDir,
      rootfs,
      netnsPath: netns,
      netnsLocked: true,
      hostname: child.hostname,
      name: child.id,
      binds: this.d.storage.externalBinds(child),
      cgroups: this.d.runtime.cgroups(child),
      mergeable: !child.sensitive,
      userns: this.d.runtime.idRange(child) !== null,
      pagesFollow: this.from === null,
      pagesFromTwins: this.twins.pagesInTwins,
    });
    this.criuStats.restores[this.children.indexOf(child)] = stats;
    if (this.from) this.d.registry.setVersionOrigin(child.id, this.from.id);
    const adopting = this.d.runtime.adoptProcess(child, pid);
    await allSettled([adopting, this.d.storage.bindExternals(child)]);
    const proc = await adopting;
    this.d.registry.setWorkspaceState(child.id, 'creating', proc);
    return { proc, generation };
  }

  /** The child's root: its files a snapshot of the fork point, mounted, and its own name and generation in them. */
  private async makeRoot(child: WorkspaceRecord, forkPoint: string): Promise<{ rootfs: string; generation: Generation }> {
    const rootfs = await this.d.storage.createFrom(child, forkPoint);
    return { rootfs, generation: await writeIdentity(rootfs, child, this.d.storage.owner(child)) };
  }

  /**
   * Tells the child's watchers of its generation (generation.ts) once it
   * runs. A branch that cannot be told (it broke its own shell) is forked
   * all the same, and the report says so.
   */
  private async announce(child: WorkspaceRecord, generation: Generation): Promise<void> {
    await announceGeneration(this.d.exec, this.d.runtime.execTarget(this.d.workspaces.record(child.id)), generation).catch((err: Error) =>
      this.notes.push(`${child.name}'s watchers of ${GENERATION_FILE} were not told of its new generation: ${err.message}`),
    );
  }

  private async expose(child: WorkspaceRecord): Promise<void> {
    await this.d.runtime.openForwarders(child);
    // Through the desktop socket, as a person's viewer sees it.
    const t0 = performance.now();
    await firstFrame({ path: this.d.runtime.vncSocketPath(child) }, { timeoutMs: 30_000 });
    this.timings.firstFrame = Math.max(this.timings.firstFrame, performance.now() - t0);
  }

  /**
   * The fork point is the children's and their descendants' from now on: the
   * source's own line continues from its parent's. A version's fork point
   * is its branch's files as the version has them.
   */
  private recordForkPoint(forkPoint: string, children: Workspace[]): void {
    const point = {
      id: this.pointId,
      path: forkPoint,
      sourceId: this.from?.branchId ?? this.source.id,
      parentId: this.from ? this.from.forkPointId : this.d.registry.forkPointOf(this.source.id),
      treeId: this.source.treeId,
      madeAt: new Date().toISOString(),
    };
    this.d.registry.insertForkPoint(
      point,
      children.map((c) => c.id),
    );
  }

  /** The children, each announced running as it came up. */
  private commit(): Workspace[] {
    return this.children.map((c) => this.d.workspaces.get(c.id));
  }

  /** The fork's last progress event: how much of it was undone, and whether the source survived. */
  private async sayUndone(whole: boolean): Promise<void> {
    const outcome = whole ? 'fork undone' : 'fork undone, but not whole';
    if (this.from) return this.d.progress(this.id, 'failed', `${outcome}; the source was not touched`, true);
    const source = (await sourceAlive(this.source)) ? 'the source runs on unchanged' : `the source '${this.source.name}' is no longer running`;
    this.d.progress(this.id, 'failed', `${outcome}; ${source}`, true);
  }
}

/** Running and not left stopped (state T) by an interrupted dump. */
async function sourceAlive(ws: WorkspaceRecord): Promise<boolean> {
  if (ws.pid === null || ws.pidStart === null || !(await isSameProcess(ws.pid, ws.pidStart))) return false;
  const stat = await readFile(`/proc/${ws.pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return false; // exited since the look above
  const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  return state !== 'T' && state !== 't' && state !== 'Z';
}
