// A branch's files: one writable btrfs subvolume that is its whole root —
// a snapshot of its image for a new workspace, a snapshot of the fork point
// for a fork's child, a snapshot of a version for a rollback. Snapshots are
// O(1) and share every unchanged block, and a branch at any fork depth reads
// its files from one filesystem layer, so lookups never grow with history.
//
//   pool/workspaces/<id>   the branch's root (subvolume; lives as long as the branch)
//
// Not yet TClone's shallow layout (one shared read-only lower + a private
// overlay upper per branch, which would also share page cache): with the
// overlay as the container root, CRIU 4.2.1 dumped Chromium's mmapped disk
// cache files (…/GPUCache/data_1) under the path "root" and the restore failed
// ("Can't open file root on restore: Is a directory"); see the fork issue's note.
import path from 'node:path';
import { deleteSubvolume, snapshot } from '../host/btrfs.js';
import type { PoolLayout } from '../host/pool.js';
import type { HostLedger } from './ledger.js';

export class BranchStorage {
  constructor(
    private readonly pool: PoolLayout,
    private readonly ledger: HostLedger,
  ) {}

  /** The branch's root subvolume: what containers and CRIU use as / and what forks and versions snapshot. */
  rootfsPath(ws: { id: string }): string {
    return path.join(this.pool.workspaces, ws.id);
  }

  /** A branch whose files start as a copy of `subvolume` (an image, a fork point, a version). */
  async createFrom(ws: { id: string }, subvolume: string): Promise<string> {
    const root = this.rootfsPath(ws);
    await this.ledger.make({ kind: 'subvolume', name: root, owner: ws.id }, () => snapshot(subvolume, root));
    return root;
  }

  /** Replaces the branch's files with a copy of `subvolume` (rollback). */
  async replaceFiles(ws: { id: string }, subvolume: string): Promise<string> {
    const root = this.rootfsPath(ws);
    await deleteSubvolume(root);
    await snapshot(subvolume, root);
    return root;
  }
}
