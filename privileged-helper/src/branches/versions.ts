// Versions: durable checkpoints of a running branch (CRIU images + a read-only
// snapshot of its root taken while the tree was frozen), and rollback of a
// branch to one of its tree's versions — processes and files both.
//
//   pool/versions/<vid>/images   CRIU images (on btrfs: they survive reboots)
//   pool/versions/<vid>/files    read-only snapshot of the branch's own files (branch-storage.ts)
import { mkdir, rename } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { snapshot } from '../host/btrfs.js';
import { mib, requireSpace, VERSION_HEADROOM_BYTES } from '../host/space.js';
import { netnsPath } from '../host/netns.js';
import { run } from '../host/run.js';
import type { CheckpointStage, RollbackStage, Version, Workspace } from '../protocol/entities.js';
import type { VersionsFate } from '../protocol/methods.js';
import type { ShareSession } from '../host/share-holder.js';
import { GroveError } from '../protocol/wire.js';
import type { BranchDeps } from './branch-deps.js';
import { injectFault, injectInFreeze, type Fault } from '../workspaces/faults.js';
import type { PendingOp, VersionRecord, WorkspaceRecord } from '../registry/registry.js';
import { writeIdentity } from '../workspaces/workspace-service.js';
import { announceGeneration } from '../workspaces/generation.js';
import type { VersionCaptures } from './version-captures.js';
import type { StandbyService } from './standby.js';
import { undoAfter } from '../undo.js';

export interface VersionDeps extends BranchDeps {
  versionsDir: string;
  /** Where checkpoints are dumped before they are saved into the pool (the helper's run dir). */
  scratchDir: string;
  /** With the kernel tier: the versions whose memory rollbacks attach instead of copying (version-captures.ts). */
  captures: VersionCaptures;
  /** Standbys of versions (standby.ts): offered a checkpoint once saved (not a rollback's own), dropped before their version. */
  standbys: Pick<StandbyService, 'offer' | 'drop'>;
  events: { changed: (v: Version) => void; removed: (id: string, reason?: string) => void };
  log: (msg: string) => void;
}

/** How long a listing with sizes waits for a version still being saved (one is saved within seconds). */
const SAVING_SIZE_WAIT_MS = 10_000;

/** A version a fork restores its children from (holdForFork), until it is released. */
export interface HeldVersion {
  id: string;
  /** The branch it is a version of (it may be gone since). */
  branchId: string;
  images: string;
  files: string;
  /** The fork point its files descend from. */
  forkPointId: string | null;
  release: () => void;
}

/** What a rollback set aside of the branch's state before it, to undo it with. */
type RolledBackFrom = Extract<PendingOp, { kind: 'rollback' }>['before'];

/** A checkpoint whose instant is fixed: its version (saving), and its dump, which settles once CRIU has written everything. */
interface Capture {
  version: VersionRecord;
  dumped: Promise<unknown>;
}

export class VersionService {
  /** Versions a rollback is restoring, or an export reading: not to be deleted under them. */
  private readonly inUse = new Map<string, number>();
  /** Versions being saved into the pool, until they are (checkpoint). */
  private readonly persisting = new Map<string, Promise<void>>();
  /** Versions being removed, until they are (remove). */
  private readonly removing = new Map<string, Promise<void>>();

  constructor(private readonly d: VersionDeps) {}

  /** Every version, or one workspace's (a deleted one's orphans by its former name or tree id); with their sizes when asked. */
  async list(ref: string | undefined, sizes: boolean): Promise<Version[]> {
    const records = ref === undefined ? this.d.registry.listVersions() : this.ofWorkspace(ref);
    if (!sizes) return records.map(toVersion);
    const measured: Version[] = [];
    // One du at a time: sizes are for a person's listing, not worth a burst of processes.
    for (const v of records) measured.push({ ...toVersion(v), sizeBytes: await this.sizeOnDisk(v.id) });
    return measured;
  }

  /**
   * Fixes the branch's state at this instant and returns as soon as the
   * branch runs again: its process state is dumped to the scratch space (as
   * a fork's is) and its files snapshotted while it is frozen, and CRIU goes
   * on saving its memory from there (criu-patches/0022). The version is
   * "saving" until that is done and its images are copied into the pool and
   * synced (in the background); only then can it be rolled back to, and a
   * helper that dies meanwhile drops it at start (reconcile.ts).
   */
  async checkpoint(ref: string, label?: string, fault?: Fault<CheckpointStage>): Promise<Version> {
    const { id } = this.d.workspaces.running(ref);
    let fixed!: (c: Capture) => void;
    const captured = new Promise<Capture>((resolve) => (fixed = resolve));
    // The branch stays locked and ksmd held until CRIU is done: the copies it saves the memory from are in the branch.
    const held = this.d.workspaces.lock.run(id, () =>
      this.d.ksm.hold(async () => {
        const capture = await this.capture(id, { label, fault, forRollbacks: true });
        fixed(capture);
        await capture.dumped.catch(() => undefined); // persist() reports a failed dump: here it only ends the hold
      }),
    );
    const { version, dumped } = await Promise.race([captured, held.then(() => captured)]);
    const saving = this.persist(version, dumped, fault);
    this.persisting.set(version.id, saving);
    // persist reports its own failure; a version being deleted meanwhile gets none.
    void saving.then(() => this.removing.has(version.id) || this.d.standbys.offer(version.id));
    return toVersion(version);
  }

  /** Checkpoints a branch whose lock the caller already holds, and waits until the version is saved. */
  async checkpointLocked(branchId: string, label?: string): Promise<Version> {
    const { version, dumped } = await this.capture(branchId, { label });
    await this.persist(version, dumped);
    await this.saved(version.id);
    return toVersion(this.d.registry.findVersion(version.id)!);
  }

  /** Resolves once the version is saved (at once if it is); throws if it never will be. */
  async saved(versionId: string): Promise<void> {
    await this.persisting.get(versionId);
    if (!this.d.registry.findVersion(versionId)?.saved) throw new GroveError('E_NOT_FOUND', `version ${versionId} could not be saved; it is gone`);
  }

  /**
   * Dumps and snapshots the branch (its lock held) and records the version as
   * saving once the branch runs again; `dumped` settles when CRIU has saved
   * the rest. Nothing is left of one that fails before it is recorded. A
   * person's checkpoint (`forRollbacks`) also has the kernel tier capture
   * the branch's memory, where it can, for rollbacks to share; the one a
   * rollback takes of the state it leaves does not, or it would replace the
   * capture of the version it returns to.
   */
  private async capture(branchId: string, o: { label?: string; fault?: Fault<CheckpointStage>; forRollbacks?: boolean }): Promise<Capture> {
    const { label, fault } = o;
    const ws = this.d.workspaces.running(branchId);
    const dump = (await this.d.runtime.usage(ws)).dumpableBytes;
    await requireSpace(`a checkpoint of '${ws.name}'`, [
      { where: 'the scratch space', dir: this.d.scratchDir, bytes: dump, why: `its processes' memory, ${mib(dump)} MiB` },
      {
        where: 'the pool',
        dir: this.d.versionsDir,
        bytes: dump + VERSION_HEADROOM_BYTES,
        why: `its processes' memory, ${mib(dump)} MiB, and ${mib(VERSION_HEADROOM_BYTES)} MiB for its files`,
      },
    ]);
    const vid = this.d.registry.freshId();
    const dir = path.join(this.d.versionsDir, vid);
    const scratch = this.scratchImages(vid);
    let dumped: Promise<unknown> = Promise.resolve();
    try {
      const alsoCapture = o.forRollbacks ? await this.d.captures.open(vid, ws.id) : undefined;
      await this.d.ledger.make({ kind: 'directory', name: dir, owner: vid }, () => mkdir(dir, { recursive: true, mode: 0o700 }));
      await this.d.ledger.make({ kind: 'directory', name: scratch, owner: vid }, () => mkdir(scratch, { recursive: true, mode: 0o700 }));
      this.d.registry.recordObject({ kind: 'subvolume', name: path.join(dir, 'files'), owner: vid });
      const run = this.d.criu.dump({
        initPid: ws.pid!,
        netnsPath: netnsPath(this.d.runtime.netPlan(ws).netns),
        imagesDir: scratch,
        snapshot: { from: this.d.storage.filesPath(ws), to: path.join(dir, 'files') },
        binds: this.d.storage.externalBinds(ws).map((b) => b.containerPath),
        userns: this.d.runtime.idRange(ws) !== null,
        alsoCapture,
      });
      dumped = run.done;
      await injectInFreeze(fault, 'freeze', path.join(dir, 'files'), run.done);
      await run.thawed;
      injectFault(fault, 'dump', "fault injected once the checkpoint's instant was fixed");
      await this.d.captures.settle(vid);
    } catch (err) {
      await dumped.catch(() => undefined); // CRIU writes into the scratch space until it exits
      throw await undoAfter(err, [() => this.d.captures.drop(vid), () => this.d.ledger.removeOwned(vid)]);
    }
    const record: VersionRecord = {
      id: vid,
      branchId: ws.id,
      treeId: ws.treeId,
      label: label ?? null,
      createdAt: new Date().toISOString(),
      orphanOf: null,
      saved: false,
    };
    this.d.registry.insertVersion(record);
    this.d.events.changed(toVersion(record));
    return { version: record, dumped };
  }

  /**
   * Waits for CRIU to finish the images, copies them into the pool under a
   * name restores never read, syncs the pool, renames them into place and
   * marks the version saved. A failure (or an injected one) removes the
   * version: a half-saved one is never offered.
   */
  private async persist(version: VersionRecord, dumped: Promise<unknown>, fault?: Fault<CheckpointStage>): Promise<void> {
    const scratch = this.scratchImages(version.id);
    const images = path.join(this.d.versionsDir, version.id, 'images');
    try {
      await dumped;
      await run('cp', ['-a', '--', scratch, `${images}.partial`]);
      injectFault(fault, 'save', 'fault injected while the checkpoint was being saved');
      if (fault?.at === 'stall') await new Promise<never>(() => undefined); // as if the helper died here: only a restart ends it
      await rename(`${images}.partial`, images);
      await run('sync', ['-f', '--', images]);
      this.d.registry.setVersionSaved(version.id);
      this.d.events.changed(toVersion({ ...version, saved: true }));
      await this.d.ledger.remove({ kind: 'directory', name: scratch, owner: version.id });
    } catch (err) {
      const reason = `checkpoint ${version.id} could not be saved into the pool: ${(err as Error).message}`;
      this.d.log(`${reason} (branch ${version.branchId})`);
      await this.drop(version.id, reason);
    } finally {
      this.persisting.delete(version.id);
    }
  }

  private scratchImages(versionId: string): string {
    return path.join(this.d.scratchDir, `checkpoint-${versionId}`);
  }

  /**
   * Returns the branch to a version's processes and files (its identity,
   * network and host ports stay) as a transaction: its state at the start is
   * set aside first (a checkpoint, a version of its own; a stopped branch's
   * files), and if anything after that fails — the version's files, its
   * restore, a fault a test injects — the branch is brought back to it; what
   * was set aside goes once the rollback is done, unless `keep` asks for it
   * as a version (a running branch's only: a stopped one has no processes).
   * The version may not be deleted meanwhile.
   */
  rollback(ref: string, versionId: string, o: { keep?: boolean; fault?: Fault<RollbackStage> } = {}): Promise<Workspace> {
    const { keep = false, fault } = o;
    const { id } = this.d.workspaces.record(ref);
    if (!this.d.registry.findVersion(versionId)) throw new GroveError('E_NOT_FOUND', `no version '${versionId}'`);
    // In use from the request on, also while it waits for the branch's lock behind another operation.
    const release = this.use(versionId);
    return this.d.workspaces.lock
      .run(id, () =>
        this.d.ksm.hold(async () => {
          const ws = this.d.workspaces.record(id);
          const version = this.d.registry.findVersion(versionId);
          if (!version) throw new GroveError('E_NOT_FOUND', `no version '${versionId}'`);
          if (version.treeId !== ws.treeId) throw new GroveError('E_CONFLICT', `version ${versionId} belongs to another workspace`);
          if (keep && ws.state !== 'running')
            throw new GroveError('E_CONFLICT', `'${ws.name}' is ${ws.state}: it has no processes to keep as a version (roll back without keep)`);
          await this.saved(version.id);
          return this.completeRollback(ws, version.id, await this.setAside(ws, version.id, fault), { fault, keep, dropAsideLater: true });
        }),
      )
      .finally(release);
  }

  /**
   * `read` of the version's files, mounted read-only as its branch saw them
   * (its upper over its image, its home at /root); the version may not be
   * deleted meanwhile. `owner`'s ledger holds the mounts; they go at the end.
   */
  async readFiles<T>(versionId: string, owner: string, read: (root: string) => Promise<T>): Promise<T> {
    const release = this.use(versionId);
    try {
      await this.saved(versionId);
      const root = await this.d.storage.mountSnapshot(path.join(this.d.versionsDir, versionId, 'files'), path.join(this.d.storage.rootsDir, owner), owner);
      return await read(root);
    } finally {
      await this.d.ledger.removeOwned(owner);
      release();
    }
  }

  /**
   * A saved version of the workspace `treeId`, held for a fork from it: it is
   * not deleted until `release` is called. A version being removed is refused,
   * not waited for; one being saved is waited for.
   */
  async holdForFork(versionId: string, treeId: string): Promise<HeldVersion> {
    const version = this.d.registry.findVersion(versionId);
    if (!version) throw new GroveError('E_NOT_FOUND', `no version '${versionId}'`);
    if (version.treeId !== treeId) throw new GroveError('E_CONFLICT', `version ${versionId} belongs to another workspace`);
    if (this.removing.has(versionId)) throw new GroveError('E_CONFLICT', `version ${versionId} is being deleted; fork from another version`);
    const release = this.use(versionId);
    try {
      await this.saved(versionId);
    } catch (err) {
      release();
      throw err;
    }
    const dir = path.join(this.d.versionsDir, versionId);
    return {
      id: versionId,
      branchId: version.branchId,
      images: path.join(dir, 'images'),
      files: path.join(dir, 'files'),
      forkPointId: this.d.registry.versionForkPointOf(versionId),
      release,
    };
  }

  /** Marks the version in use (not to be deleted) until the function returned is called. */
  private use(versionId: string): () => void {
    this.inUse.set(versionId, (this.inUse.get(versionId) ?? 0) + 1);
    return () => {
      const n = this.inUse.get(versionId)! - 1;
      if (n === 0) this.inUse.delete(versionId);
      else this.inUse.set(versionId, n);
    };
  }

  /**
   * The branch's state before a rollback: a running branch's is a checkpoint
   * (captureBeforeRollback); a stopped or exited one has no processes, so its
   * files are snapshotted (read-only), the branch's own host object until the
   * rollback is over, so a helper killed meanwhile leaves it with the branch
   * (start-up never removes it as an orphan).
   */
  private async setAside(ws: WorkspaceRecord, to: string, fault?: Fault<RollbackStage>): Promise<RolledBackFrom> {
    if (ws.state === 'running') {
      const saveFault = fault?.at === 'save' ? { at: 'save' as const, crash: fault.crash } : undefined;
      return { version: await this.captureBeforeRollback(ws.id, `before rollback to ${to}`, saveFault) };
    }
    if (ws.state !== 'stopped' && ws.state !== 'exited') throw new GroveError('E_CONFLICT', `workspace '${ws.name}' is ${ws.state}: it cannot be rolled back`);
    const files = path.join(this.d.versionsDir, `${ws.id}-before-${this.d.registry.freshId()}`);
    await this.d.ledger.make({ kind: 'subvolume', name: files, owner: ws.id }, () => snapshot(this.d.storage.filesPath(ws), files, { readonly: true }));
    return { files };
  }

  /**
   * A running branch's state before a rollback, a checkpoint of it: the
   * rollback waits only until CRIU has written its pages out of the twins,
   * which die with the branch's processes; the images are saved into the
   * pool in the background, while the version is restored (persist), so a
   * rollback costs about one restore. Until they are saved it is a version
   * being saved, as a checkpoint's is: a rollback to it (this rollback's
   * undo among them) waits for them; a helper killed before leaves no half
   * version (reconcile.ts), and one killed after can still undo the
   * rollback at its next start.
   */
  private async captureBeforeRollback(branchId: string, label: string, fault?: Fault<CheckpointStage>): Promise<string> {
    const { version, dumped } = await this.capture(branchId, { label });
    const saving = this.persist(version, dumped, fault);
    this.persisting.set(version.id, saving);
    // A dump that failed is dropped by persist: the rollback fails once it is gone, the branch running on.
    await dumped.catch(async (err: unknown) => {
      await saving;
      throw err;
    });
    return version.id;
  }

  /**
   * The rollback once the branch's state before it is set aside: pending in
   * the registry until it is done or undone, so that a helper killed on the
   * way leaves it to the next start (resumeRollback). A request's rollback
   * returns without waiting for the checkpoint it set aside to be saved and
   * dropped (dropAsideLater); a resumed one waits, so that start-up ends clean.
   * With `keep` that checkpoint stays, a version once saved.
   */
  private async completeRollback(
    ws: WorkspaceRecord,
    to: string,
    before: RolledBackFrom,
    o: { fault?: Fault<RollbackStage>; keep?: boolean; dropAsideLater?: boolean } = {},
  ): Promise<Workspace> {
    const { fault } = o;
    this.d.registry.beginPendingOp({ kind: 'rollback', workspaceId: ws.id, to, before, ...(o.keep && { keep: true }) });
    try {
      injectFault(fault, 'aside', 'fault injected once the state before the rollback was set aside');
      if (this.d.workspaces.record(ws.id).state !== 'running') await this.d.runtime.prepareHost(ws);
      const back = await this.restoreInto(ws, to, to, fault);
      if (o.keep && 'version' in before) return back;
      const dropped = this.dropSetAside(ws, before);
      if (o.dropAsideLater) dropped.catch((err: Error) => this.d.log(`rollback of ${ws.id}: what it set aside could not be removed: ${err.message}`));
      else await dropped;
      return back;
    } catch (err) {
      await this.undoRollback(ws, before, err as Error);
      throw err;
    } finally {
      this.d.registry.endPendingOp(ws.id);
    }
  }

  /**
   * A rollback the last helper was killed in (reconcile.ts), with the branch
   * as start-up left it (its processes gone, or not yet killed): it is done
   * again from its start, and undone if that fails, as it would have been.
   */
  async resumeRollback(op: { workspaceId: string; to: string; before: RolledBackFrom; keep?: boolean }): Promise<void> {
    await this.d.workspaces.lock.run(op.workspaceId, () =>
      this.d.ksm.hold(async () => {
        const ws = this.d.registry.findWorkspace(op.workspaceId);
        if (!ws) return;
        this.d.log(`finishing the rollback of '${ws.name}' to ${op.to} that the last helper was killed in`);
        await this.completeRollback(ws, op.to, op.before, { keep: op.keep }).catch((err: Error) =>
          this.d.log(`the rollback of '${ws.name}' could not be finished: ${err.message}`),
        );
      }),
    );
  }

  /**
   * Kills the branch's processes, swaps its files for the version's and
   * restores the version's processes in its own network; the branch then says
   * it comes from `origin`.
   */
  private async restoreInto(ws: WorkspaceRecord, versionId: string, origin: string | null, fault?: Fault<RollbackStage>): Promise<Workspace> {
    const dir = path.join(this.d.versionsDir, versionId);
    await this.d.runtime.killProcesses(ws);
    const rootfs = await this.d.storage.replaceFiles(ws, path.join(dir, 'files'));
    injectFault(fault, 'files', 'fault injected after the files were replaced');
    const generation = await writeIdentity(rootfs, ws, this.d.storage.owner(ws));
    injectFault(fault, 'restore', 'fault injected instead of the restore');
    // Adopted at once: whatever fails after, the restored tree is the branch's to kill.
    const proc = await this.d.runtime.adoptProcess(ws, (await this.restoreProcesses(ws, versionId, rootfs)).pid);
    injectFault(fault, 'adopt', 'fault injected after the restore, before the branch ran it');
    await this.d.storage.bindExternals(ws);
    this.d.registry.setVersionOrigin(ws.id, origin);
    const running = await this.d.workspaces.markRunning(this.d.workspaces.record(ws.id), proc);
    // A branch that broke its own shell is rolled back all the same; its watchers are not told.
    await announceGeneration(this.d.exec, this.d.runtime.execTarget(this.d.workspaces.record(ws.id)), generation).catch((err: Error) =>
      this.d.log(`rollback of ${ws.id}: ${err.message}`),
    );
    return running;
  }

  /**
   * Restores the version's processes: their anonymous memory attached from
   * the version's capture where the kernel tier kept one, else (or if that
   * fails: the images hold all of it) copied from the images.
   */
  private async restoreProcesses(ws: WorkspaceRecord, versionId: string, rootfs: string): Promise<{ pid: number }> {
    const restore = (share: ShareSession | undefined) =>
      this.d.criu.restore({
        imagesDir: path.join(this.d.versionsDir, versionId, 'images'),
        rootfs,
        netnsPath: netnsPath(this.d.runtime.netPlan(ws).netns),
        share,
        hostname: ws.hostname,
        name: `${ws.id}-${Date.now()}`,
        binds: this.d.storage.externalBinds(ws),
        cgroups: this.d.runtime.cgroups(ws),
        mergeable: !ws.sensitive,
        userns: this.d.runtime.idRange(ws) !== null,
      });
    const share = this.d.captures.session(versionId);
    if (!share) return restore(undefined);
    try {
      return await restore(share);
    } catch (err) {
      this.d.log(`rollback of ${ws.id} to ${versionId}: attaching its captured memory failed (${(err as Error).message}); copying it from the images`);
      await this.d.captures.drop(versionId);
      return restore(undefined);
    }
  }

  /**
   * A rollback failed: the branch goes back to the state set aside at its
   * start. Should even that fail, the branch is left exited, saying so, and
   * that state is kept (nothing is lost: a checkpoint can be rolled back to).
   */
  private async undoRollback(ws: WorkspaceRecord, before: RolledBackFrom, cause: Error): Promise<void> {
    try {
      if ('version' in before) {
        await this.saved(before.version);
        await this.restoreInto(ws, before.version, ws.versionId);
      } else {
        await this.d.runtime.tearDown(ws);
        await this.d.storage.replaceFiles(ws, before.files);
        await this.d.storage.bindExternals(ws);
      }
      await this.dropSetAside(ws, before);
    } catch (err) {
      await this.d.runtime.tearDown(ws);
      const kept = !('version' in before)
        ? `its files before the rollback are kept in ${before.files}`
        : this.d.registry.findVersion(before.version)?.saved
          ? `its state before the rollback is version ${before.version}`
          : 'its state before the rollback could not be saved';
      const told = `rollback failed (${cause.message}) and so did going back (${(err as Error).message}); ${kept}`;
      this.d.registry.setExited(ws.id, told);
      this.d.workspaces.publish(ws.id);
      throw new GroveError('E_HOST', `${told}; '${ws.name}' is stopped`);
    }
  }

  private async dropSetAside(ws: WorkspaceRecord, before: RolledBackFrom): Promise<void> {
    if ('version' in before) await this.remove(before.version);
    else await this.d.ledger.remove({ kind: 'subvolume', name: before.files, owner: ws.id });
  }

  /** The helper stops: the kernel tier's captures of versions go with it (rollbacks after the restart copy). */
  async close(): Promise<void> {
    await this.d.captures.dropAll();
  }

  /** Names a version (or takes its name away: an empty label); it keeps everything else. */
  relabel(versionId: string, label: string): Version {
    if (!this.d.registry.findVersion(versionId)) throw new GroveError('E_NOT_FOUND', `no version '${versionId}'`);
    this.d.registry.setVersionLabel(versionId, label.trim() || null);
    const version = toVersion(this.d.registry.findVersion(versionId)!);
    this.d.events.changed(version);
    return version;
  }

  async delete(versionId: string): Promise<void> {
    if (!this.d.registry.findVersion(versionId)) throw new GroveError('E_NOT_FOUND', `no version '${versionId}'`);
    if (this.inUse.has(versionId))
      throw new GroveError('E_CONFLICT', `version ${versionId} is being rolled back to or forked from; delete it once that is done`);
    await this.remove(versionId);
  }

  /**
   * After a branch of `treeId` was deleted: if it was the tree's last, its
   * versions became orphans (the registry marks them as the branch goes);
   * they are deleted now unless `fate` keeps them. Null while the tree still
   * has branches, or had no versions: nothing became of any.
   */
  async settleOrphans(treeId: string, fate: VersionsFate): Promise<{ deleted: string[]; kept: string[] } | null> {
    const orphans = this.d.registry
      .listVersions(treeId)
      .filter((v) => v.orphanOf !== null)
      .map((v) => v.id);
    if (orphans.length === 0) return null;
    if (fate === 'keep') return { deleted: [], kept: orphans };
    for (const id of orphans) await this.remove(id);
    return { deleted: orphans, kept: [] };
  }

  private ofWorkspace(ref: string): VersionRecord[] {
    const ws = this.d.registry.findWorkspace(ref);
    if (ws) return this.d.registry.listVersions(ws.treeId);
    const orphans = this.d.registry.listVersions().filter((v) => v.orphanOf === ref || (v.orphanOf !== null && v.treeId === ref));
    if (orphans.length === 0) throw new GroveError('E_NOT_FOUND', `no workspace '${ref}', and no versions kept of a deleted one by that name`);
    return orphans;
  }

  /**
   * Removes a version once it is no longer being saved; a version another
   * call removed meanwhile is simply gone, and one being removed is waited
   * for, not removed twice at once (a rollback drops its own checkpoint in
   * the background, while its workspace may be deleted with its versions).
   */
  private remove(versionId: string): Promise<void> {
    const under = this.removing.get(versionId);
    if (under) return under;
    const removal = (async () => {
      await this.persisting.get(versionId);
      await this.drop(versionId);
    })().finally(() => this.removing.delete(versionId));
    this.removing.set(versionId, removal);
    return removal;
  }

  /** Removes a version's files and record (`reason`: why, when no one asked for it). */
  private async drop(versionId: string, reason?: string): Promise<void> {
    await this.d.standbys.drop(versionId); // restored from the version's images and files
    await this.d.captures.drop(versionId);
    await this.d.ledger.removeOwned(versionId);
    if (!this.d.registry.findVersion(versionId)) return;
    this.d.registry.deleteVersion(versionId);
    this.d.events.removed(versionId, reason);
  }

  /**
   * Bytes the version's directory occupies, as `du` counts them: fast (its
   * files are its branch's own upper, not the image) and needs no btrfs quota
   * groups, which the pool does not enable. Left out when it cannot be measured.
   */
  private async sizeOnDisk(versionId: string): Promise<number | undefined> {
    // A version being saved has its images renamed into place meanwhile, and a
    // rename under du's walk fails it: measured once saved, if that is soon.
    const saving = this.persisting.get(versionId);
    if (saving) await Promise.race([saving, sleep(SAVING_SIZE_WAIT_MS, undefined, { ref: false })]);
    const res = await run('du', ['-s', '-B1', '--', path.join(this.d.versionsDir, versionId)], { allowFailure: true, timeoutMs: 30_000 });
    const bytes = Number(res.stdout.split('\t')[0]);
    return res.exitCode === 0 && Number.isInteger(bytes) ? bytes : undefined;
  }
}

function toVersion(v: VersionRecord): Version {
  return {
    id: v.id,
    branch: v.branchId,
    tree: v.treeId,
    label: v.label,
    createdAt: v.createdAt,
    saved: v.saved,
    ...(v.orphanOf !== null && { orphanOf: v.orphanOf }),
  };
}
