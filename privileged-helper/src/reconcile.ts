// Start-up reconciliation: make the host match the registry. CRIU runs the
// last helper left are ended first; running workspaces are adopted; objects
// recorded for owners that no longer exist, and objects that carry this
// instance's names but are in no record, are removed; and operations it was
// killed in the middle of are finished or undone.
import { readdir, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import type { HelperConfig } from './config.js';
import { deleteSubvolume, isSubvolume } from './host/btrfs.js';
import { endLeftoverRuns } from './host/criu/leftover-runs.js';
import { cgroupName, cgroupsOfInstance, removeCgroups } from './host/cgroups.js';
import type { Crun } from './host/crun.js';
import { hasMountAtOrBelow, mountPoints, unmount } from './host/mounts.js';
import { deleteNetns, listNetns } from './host/netns.js';
import type { PoolLayout } from './host/pool.js';
import { removePartialStreams } from './images/recipe-builder.js';
import type { PendingOp, Registry } from './registry/registry.js';
import type { PromoteService } from './branches/promote.js';
import type { VersionService } from './branches/versions.js';
import type { BranchStorage } from './workspaces/branch-storage.js';
import type { HostLedger } from './workspaces/ledger.js';
import type { WorkspaceService } from './workspaces/workspace-service.js';

export interface ReconcileDeps {
  config: HelperConfig;
  pool: PoolLayout;
  registry: Registry;
  ledger: HostLedger;
  crun: Crun;
  workspaces: WorkspaceService;
  versions: VersionService;
  promotions: PromoteService;
  storage: BranchStorage;
  /** Where CRIU's images go (a tmpfs of the helper's): nothing in it outlives the helper that made it. */
  scratchDir: string;
  log: (msg: string) => void;
}

export async function reconcile(d: ReconcileDeps): Promise<void> {
  await endLeftoverRuns(await realpath(d.config.criu), [d.scratchDir, d.pool.versions], d.log);
  await d.workspaces.reconcile();
  // A checkpoint the last helper had not finished saving is no version: its objects go as orphans below.
  for (const v of d.registry.listVersions().filter((x) => !x.saved)) {
    d.log(`dropping checkpoint ${v.id} of ${v.branchId}: the helper stopped before it was saved`);
    d.registry.deleteVersion(v.id);
  }
  const known = new Set([
    ...d.registry.listWorkspaces().map((w) => w.id),
    ...d.registry.listVersions().map((v) => v.id),
    ...d.registry.listForkPoints().map((f) => f.id),
  ]);
  for (const obj of d.ledger.orphans(known)) {
    d.log(`removing orphaned ${obj.kind} ${obj.name}`);
    await d.ledger.remove(obj);
  }
  await removeUnrecorded(d);
  await removePartialStreams(d.config.cacheDir);
  for (const op of d.registry.pendingOps()) await resume(d, op);
}

/** Finishes or undoes an operation the last helper was killed in, once the host matches the registry again. */
async function resume(d: ReconcileDeps, op: PendingOp): Promise<void> {
  switch (op.kind) {
    case 'rollback':
      return d.versions.resumeRollback(op);
    case 'promote':
      return d.promotions.resumePromotion(op);
    case 'discard':
      d.log(`finishing the discard of ${op.workspaceId} that the last helper was killed in`);
      return d.workspaces.finishDiscard(op.workspaceId);
    case 'merge':
      return undoMerge(d, op);
  }
}

/**
 * A merge the last helper was killed in is undone: once it may have written
 * files, the target goes back to the version taken before it (files and
 * processes, as at that instant: which files it wrote is not known); the
 * version goes either way. A rollback killed in turn is its own pending
 * operation, finished at the start after.
 */
async function undoMerge(d: ReconcileDeps, op: Extract<PendingOp, { kind: 'merge' }>): Promise<void> {
  d.log(`undoing the merge into ${op.workspaceId} that the last helper was killed in`);
  try {
    if (op.writing && d.registry.findWorkspace(op.workspaceId)?.state === 'running') await d.versions.rollback(op.workspaceId, op.version);
    if (d.registry.findVersion(op.version)) await d.versions.delete(op.version);
  } catch (err) {
    d.log(`the merge into ${op.workspaceId} could not be undone (${(err as Error).message}): its version ${op.version} from before it is kept`);
  }
  // A rollback that failed left its own pending operation in the merge's place: that one stays.
  if (d.registry.pendingOps().find((p) => p.workspaceId === op.workspaceId)?.kind === 'merge') d.registry.endPendingOp(op.workspaceId);
}

/** Branch mounts (merged roots, idmapped lowers) and their directories in no record: deepest mounts first. */
async function removeUnrecordedRoots(d: ReconcileDeps, recorded: Set<string>): Promise<void> {
  const dir = d.storage.rootsDir;
  const stale = [...(await mountPoints())].filter((m) => m.startsWith(`${dir}/`) && !recorded.has(`mount:${m}`));
  for (const m of stale.sort((a, b) => b.length - a.length)) {
    d.log(`removing unrecorded mount ${m}`);
    await unmount(m);
  }
  await removeUnrecordedEntries(d, dir, recorded);
}

/** Each entry of `dir` that is no recorded directory, unless something is mounted at or below it. */
async function removeUnrecordedEntries(d: ReconcileDeps, dir: string, recorded: Set<string>): Promise<void> {
  for (const entry of await readdir(dir).catch(() => [])) {
    // none made yet: nothing to remove
    const sub = path.join(dir, entry);
    if (recorded.has(`directory:${sub}`) || (await hasMountAtOrBelow(sub))) continue;
    d.log(`removing unrecorded ${sub}`);
    await rm(sub, { recursive: true, force: true });
  }
}

/** Objects named like ours that the registry has no record of (a crash between making and recording). */
async function removeUnrecorded(d: ReconcileDeps): Promise<void> {
  const recorded = new Set(d.registry.objects().map((o) => `${o.kind}:${o.name}`));
  const prefix = `grove-${d.config.instance}-`;
  for (const ns of await listNetns()) {
    if (ns.startsWith(prefix) && !recorded.has(`netns:${ns}`)) {
      d.log(`removing unrecorded netns ${ns}`);
      await deleteNetns(ns);
    }
  }
  for (const id of await d.crun.list()) {
    if (id.startsWith(prefix) && !recorded.has(`container:${id}`)) {
      d.log(`removing unrecorded container ${id}`);
      await d.crun.delete(id);
    }
  }
  for (const id of await cgroupsOfInstance(d.config.instance)) {
    const name = cgroupName(d.config.instance, id);
    if (!recorded.has(`cgroup:${name}`)) {
      d.log(`removing unrecorded cgroup ${name}`);
      await removeCgroups(name);
    }
  }
  await removeUnrecordedRoots(d, recorded);
  // What a dump or a capture left in the scratch space: a dump's thaw signal directory (host/criu/criu.ts), a capture's
  // socket. The runs that used them died with the last helper.
  await removeUnrecordedEntries(d, d.scratchDir, recorded);
  for (const entry of await readdir(d.pool.workspaces)) {
    const sub = path.join(d.pool.workspaces, entry);
    if (!recorded.has(`subvolume:${sub}`)) {
      d.log(`removing unrecorded subvolume ${sub}`);
      await deleteSubvolume(sub);
    }
  }
  for (const entry of await readdir(d.pool.versions)) {
    const dir = path.join(d.pool.versions, entry);
    // A version is a directory; a stopped branch's files set aside by its rollback, a subvolume of its own.
    if (recorded.has(`directory:${dir}`) || recorded.has(`subvolume:${dir}`)) continue;
    d.log(`removing unrecorded version ${dir}`);
    if (await isSubvolume(dir)) {
      await deleteSubvolume(dir);
      continue;
    }
    await deleteSubvolume(path.join(dir, 'files'));
    await rm(dir, { recursive: true, force: true });
  }
  for (const entry of await readdir(d.pool.images)) {
    if (entry.startsWith('.build-')) await deleteSubvolume(path.join(d.pool.images, entry));
  }
}
