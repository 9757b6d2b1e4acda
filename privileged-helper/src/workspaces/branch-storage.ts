// A branch's files, in TClone's shallow layout: every branch of an image reads
// unchanged files from one shared read-only lower (the image's subvolume), so
// siblings share those files' inodes and page cache; each branch writes to a
// private upper. A fork's child gets a btrfs snapshot of its parent's own
// files (O(1), a reflink copy of every block) and keeps the same lower, so a
// branch at any fork depth is one overlay over one lower: lookups never grow
// with history.
//
//   pool/workspaces/<id>/    the branch's own files (subvolume): what forks and versions snapshot
//     lower                  text: the path of its read-only lower (the image it was made from)
//     upper/                 overlay upper: the branch's writes outside /root
//     work/                  overlay workdir, emptied at every mount (host/overlay.ts)
//     home/                  /root, bind-mounted over the overlay
//   <run>-roots/<id>/        0700, owned by the tree's host root (config.rootsDir)
//     root                   the merged root (overlay + home at /root): what the
//                            container, CRIU's --root and diffs see
//     home                   its files' home/, bound (the source of /root)
//     lower                  (a tree in a user namespace) the image as the branch
//                            sees it: an idmapped mount of it (host/idmap.ts); the
//                            branch's upper and home are owned by the tree's host ids
//
// Why /root is not in the overlay: CRIU 4.2.1 cannot dump files a process
// maps from an overlay upper (Chromium's mmapped disk cache, …/GPUCache/data_1,
// was dumped under the path "root" and the restore failed with "Can't open
// file root on restore: Is a directory"). The home directory, where Chromium
// keeps its profile, is therefore a plain btrfs directory, bind-mounted; CRIU
// treats it as an external mount (EXTERNAL_BINDS), restored from the child's
// own copy.
//
// The files subvolume is what a branch's disk limit counts (host/disk-quota.ts):
// each one made gets its branch's limit before anything runs on it.
import { access, chown, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allSettled } from '../concurrency.js';
import { createSubvolume, deleteSubvolume, snapshot } from '../host/btrfs.js';
import { whenAbsent } from '../host/absent.js';
import type { DiskQuota } from '../host/disk-quota.js';
import { isMounted } from '../host/mounts.js';
import { rootOwner, shiftOwnership } from '../host/idmap.js';
import { bindMount, makeMounts, mountReadOnlyOverlay, type BranchMount } from '../host/overlay.js';
import type { FileOwner } from '../host/rootfs-files.js';
import type { IdRange } from '../host/idmap.js';
import type { PoolLayout } from '../host/pool.js';
import type { DiskUse } from '../protocol/entities.js';
import { run } from '../host/run.js';
import type { HostLedger } from './ledger.js';

/** Container paths bound from the branch's own files instead of living in the overlay (CRIU: external mounts). */
export const EXTERNAL_BINDS = [{ containerPath: '/root', dir: 'home' }] as const;

export interface ExternalBind {
  containerPath: string;
  source: string;
}

export class BranchStorage {
  constructor(
    private readonly pool: PoolLayout,
    /** Where each branch's directory of mounts goes (config.rootsDir). */
    readonly rootsDir: string,
    private readonly ledger: HostLedger,
    /** native/grove-mount.c: idmapped mounts. */
    private readonly groveMount: string,
    /** The host ids the branch's tree runs as (null: no user namespace). */
    private readonly idRange: (ws: { id: string }) => IdRange | null,
    private readonly quota: DiskQuota,
    /** The branch's disk limit in bytes (its limits). */
    private readonly diskLimit: (ws: { id: string }) => number,
  ) {}

  /** Whose files the helper writes into the branch (its root's host ids in a user namespace). */
  owner(ws: { id: string }): FileOwner {
    return rootOwner(this.idRange(ws));
  }

  /** The merged root: what containers and CRIU use as /. */
  rootfsPath(ws: { id: string }): string {
    return path.join(this.rootsDir, ws.id, 'root');
  }

  /** Where branches' files go in the pool (for its free space). */
  get workspacesDir(): string {
    return this.pool.workspaces;
  }

  /** The branch's own files (a subvolume): what forks and versions snapshot. */
  filesPath(ws: { id: string }): string {
    return path.join(this.pool.workspaces, ws.id);
  }

  /**
   * Where each external bind of the branch comes from on the host: its files'
   * directory, bound into the branch's directory of mounts (a restore in a
   * user namespace reaches it there, not in the pool).
   */
  externalBinds(ws: { id: string }): ExternalBind[] {
    return EXTERNAL_BINDS.map((b) => ({ containerPath: b.containerPath, source: path.join(this.rootsDir, ws.id, b.dir) }));
  }

  /** A new branch of an image: an empty upper over the image, and a copy of the image's home (owned by the tree's ids). */
  async createFromImage(ws: { id: string }, image: string): Promise<string> {
    const files = this.filesPath(ws);
    const range = this.idRange(ws);
    await this.ledger.make({ kind: 'subvolume', name: files, owner: ws.id }, async () => {
      await createSubvolume(files);
      await this.limitDisk(ws);
      await mkdir(path.join(files, 'upper'), { mode: 0o755 });
      for (const b of EXTERNAL_BINDS) {
        await run('cp', ['-a', '--reflink=always', '--', path.join(image, b.containerPath), path.join(files, b.dir)]);
        if (range) await shiftOwnership(path.join(files, b.dir), range);
      }
      if (range) await shiftOwnership(path.join(files, 'upper'), range);
      await writeFile(path.join(files, 'lower'), `${image}\n`, { mode: 0o600 });
    });
    return this.mount(ws, { binds: true });
  }

  /**
   * A branch whose own files start as a copy of `subvolume` (a fork point, a
   * version), mounted without its external binds: a restore has CRIU mount
   * them (bindExternals afterwards puts them on the host's view).
   */
  async createFrom(ws: { id: string }, subvolume: string): Promise<string> {
    const files = this.filesPath(ws);
    await this.ledger.make({ kind: 'subvolume', name: files, owner: ws.id }, () => snapshot(subvolume, files));
    return this.limitedAndMounted(ws);
  }

  /** Replaces the branch's files with a copy of `subvolume` (rollback), mounted like createFrom; its processes must be gone. */
  async replaceFiles(ws: { id: string }, subvolume: string): Promise<string> {
    await this.unmount(ws);
    const files = this.filesPath(ws);
    await deleteSubvolume(files);
    await snapshot(subvolume, files);
    return this.limitedAndMounted(ws);
  }

  /** Sets the branch's disk limit on its files (their own writes count, not what they share with the snapshot they came from). */
  async limitDisk(ws: { id: string }): Promise<void> {
    await this.quota.limit([{ subvolume: this.filesPath(ws), bytes: this.diskLimit(ws) }]);
  }

  /** Sets every branch's disk limit on its files, in one run (at start: a pool whose quotas were just enabled, a limit a crash left unset). */
  async limitDisks(branches: readonly { id: string }[]): Promise<void> {
    const made = await Promise.all(
      branches.map((ws) =>
        access(this.filesPath(ws)).then(
          () => ws,
          () => null,
        ),
      ),
    );
    await this.quota.limit(made.filter((ws) => ws !== null).map((ws) => ({ subvolume: this.filesPath(ws), bytes: this.diskLimit(ws) })));
  }

  /** What the branch's disk limit counts now; null without quotas. */
  diskUse(ws: { id: string }): DiskUse | null {
    return this.quota.use(this.filesPath(ws), this.diskLimit(ws));
  }

  /**
   * The external binds on the merged root, after a restore: CRIU binds them
   * itself inside the branch, and with them already on its root a restore in
   * a user namespace fails (a root with locked child mounts cannot be bound).
   */
  async bindExternals(ws: { id: string }): Promise<void> {
    const root = this.rootfsPath(ws);
    for (const b of this.externalBinds(ws)) {
      const target = path.join(root, b.containerPath);
      await this.ledger.make({ kind: 'mount', name: target, owner: ws.id }, () => bindMount(this.groveMount, b.source, target));
    }
  }

  /** The merged root, mounted again if it is not (after a reboot: /run is empty). */
  async ensureMounted(ws: { id: string }): Promise<string> {
    return (await isMounted(this.rootfsPath(ws))) ? this.rootfsPath(ws) : this.mount(ws, { binds: true });
  }

  /**
   * A snapshot of a branch's files (a fork point) mounted read-only at `at`
   * as the branch saw them: its upper over its image, its home at /root; the
   * mounts and `at` are `owner`'s, for its ledger to remove.
   */
  async mountSnapshot(subvolume: string, at: string, owner: string): Promise<string> {
    const image = (await readFile(path.join(subvolume, 'lower'), 'utf8')).trim();
    await this.ledger.make({ kind: 'directory', name: at, owner }, () => mkdir(at, { mode: 0o700 }));
    await this.ledger.make({ kind: 'mount', name: at, owner }, () => mountReadOnlyOverlay([path.join(subvolume, 'upper'), image], at));
    for (const b of EXTERNAL_BINDS) {
      const target = path.join(at, b.containerPath);
      await this.ledger.make({ kind: 'mount', name: target, owner }, () => bindMount(this.groveMount, path.join(subvolume, b.dir), target));
    }
    return at;
  }

  /** Lowers (image subvolumes) that a branch or a version still reads from. */
  async lowersInUse(): Promise<Set<string>> {
    const dirs = [
      ...(await readdir(this.pool.workspaces)).map((e) => path.join(this.pool.workspaces, e)),
      ...(await readdir(this.pool.versions)).map((e) => path.join(this.pool.versions, e, 'files')),
    ];
    // One being made has no 'lower' yet. Any other failure must not make its image look unused (it would be deleted).
    const lowers = await Promise.all(dirs.map((d) => readFile(path.join(d, 'lower'), 'utf8').catch(whenAbsent(''))));
    return new Set(lowers.map((l) => l.trim()).filter(Boolean));
  }

  /** Files made from a snapshot, limited and mounted (like createFrom) at once: both before anything runs on them. */
  private async limitedAndMounted(ws: { id: string }): Promise<string> {
    const mounted = this.mount(ws, { binds: false });
    await allSettled([mounted, this.limitDisk(ws)]);
    return mounted;
  }

  /**
   * The branch's root mounted: the image as it sees it (in a user namespace,
   * an idmapped mount of it), its files' binds and the overlay, from one
   * grove-mount run (host/overlay.ts makeMounts).
   */
  private async mount(ws: { id: string }, o: { binds: boolean }): Promise<string> {
    const files = this.filesPath(ws);
    const root = this.rootfsPath(ws);
    const image = (await readFile(path.join(files, 'lower'), 'utf8')).trim();
    await this.makeBranchDir(ws);
    const range = this.idRange(ws);
    const lower = range ? path.join(this.rootsDir, ws.id, 'lower') : image;
    const mounts: BranchMount[] = [
      ...(range ? [{ kind: 'idmap', range, source: image, target: lower } as const] : []),
      ...EXTERNAL_BINDS.map((b): BranchMount => ({ kind: 'bind', source: path.join(files, b.dir), target: path.join(this.rootsDir, ws.id, b.dir) })),
      { kind: 'overlay', target: root, layers: { lower, upper: path.join(files, 'upper'), work: path.join(files, 'work') } },
    ];
    await this.ledger.makeAll(
      mounts.map((m) => ({ kind: 'mount', name: m.target, owner: ws.id })),
      () => makeMounts(this.groveMount, mounts),
    );
    if (o.binds) await this.bindExternals(ws);
    return root;
  }

  /** The branch's directory of mounts: only root and the branch's own root may enter it. */
  private async makeBranchDir(ws: { id: string }): Promise<void> {
    const dir = path.join(this.rootsDir, ws.id);
    const owner = this.owner(ws);
    await this.ledger.make({ kind: 'directory', name: dir, owner: ws.id }, async () => {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await chown(dir, owner?.uid ?? 0, owner?.gid ?? 0);
    });
  }

  private async unmount(ws: { id: string }): Promise<void> {
    const root = this.rootfsPath(ws);
    const onRoot = this.externalBinds(ws).map((b) => path.join(root, b.containerPath));
    const sources = this.externalBinds(ws).map((b) => b.source);
    const lower = path.join(this.rootsDir, ws.id, 'lower');
    for (const name of [...onRoot, root, lower, ...sources]) await this.ledger.remove({ kind: 'mount', name, owner: ws.id });
  }
}
