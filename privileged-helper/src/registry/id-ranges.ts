// Which host uids and gids a tree's processes run as: each tree (a workspace
// and all its branches) gets a range of ID_RANGE_SIZE ids of its own, recorded
// here before its first branch starts; forks, versions and promotions stay in
// their tree's range, so CRIU restores them into the same mapping. Ranges of
// trees with no branch and no version left are given out again.
import type { IdRange } from '../host/idmap.js';
import type { Db } from './db.js';

export const ID_RANGE_SIZE = 65536;
/** Above the ids hosts hand out to people, system services and the usual subordinate ranges (/etc/subuid from 100000). */
export const FIRST_HOST_BASE = 1 << 24;
const LAST_SLOT = Math.floor((2 ** 32 - 1 - FIRST_HOST_BASE) / ID_RANGE_SIZE) - 1;

export class IdRanges {
  constructor(private readonly db: Db) {}

  /** The tree's range, or null for a tree made before user namespaces (it runs without one). */
  of(treeId: string): IdRange | null {
    const base = this.db.prepare('SELECT host_base FROM id_ranges WHERE tree_id = ?').pluck().get(treeId) as number | undefined;
    return base === undefined ? null : { hostBase: base, size: ID_RANGE_SIZE };
  }

  /** Gives a new tree the lowest free range (call inside the transaction that records its first branch). */
  allocate(treeId: string): IdRange {
    this.db
      .prepare('DELETE FROM id_ranges WHERE tree_id NOT IN (SELECT tree_id FROM workspaces UNION SELECT tree_id FROM versions) AND tree_id != ?')
      .run(treeId);
    const used = new Set(this.db.prepare('SELECT host_base FROM id_ranges').pluck().all() as number[]);
    for (let slot = 0; slot <= LAST_SLOT; slot++) {
      const hostBase = FIRST_HOST_BASE + slot * ID_RANGE_SIZE;
      if (used.has(hostBase)) continue;
      this.db.prepare('INSERT INTO id_ranges (tree_id, host_base) VALUES (?, ?)').run(treeId, hostBase);
      return { hostBase, size: ID_RANGE_SIZE };
    }
    throw new Error('no free uid range left for a new workspace');
  }
}
