import { randomBytes } from 'node:crypto';
// Typed access to the registry. Rows are mapped to plain records here so no SQL
// leaks out of this folder.
import type { ImageLayer } from '../host/oci-store.js';
import type { Db } from './db.js';
import type { Image, ImageOrigin, MergeMark, OldMainFate, ProjectOrigin } from '../protocol/entities.js';
import type { WorkspaceState } from '../protocol/entities.js';
import type { BranchLimits, EgressLogEntry, EgressPolicy, ForkRecord, ForkReport } from '../protocol/entities.js';
import type { AgentRequestKind, AuditEntry } from '../protocol/approvals.js';
import { Actor, Maker, type Role } from '../protocol/identity.js';

/** By default the audit log keeps this many newest entries… */
export const AUDIT_ROWS_KEPT = 100_000;
/** …none older than this many days. */
export const AUDIT_DAYS_KEPT = 365;

/** How much of the audit log is kept (GROVE_AUDIT_MAX_ROWS, GROVE_AUDIT_MAX_DAYS). */
export interface AuditRetention {
  maxRows: number;
  maxDays: number;
}

/** Which audit entries a query wants: by whom (as the kernel identified them) and when (since ≤ at < until, ISO times). */
export interface AuditFilter {
  role?: Role;
  user?: string;
  uid?: number;
  since?: string;
  until?: string;
}

const AUDIT_FILTER_SQL: Record<keyof AuditFilter, string> = {
  role: "json_extract(actor_json, '$.role') = ?",
  user: "json_extract(actor_json, '$.user') = ?",
  uid: "json_extract(actor_json, '$.uid') = ?",
  since: 'at >= ?',
  until: 'at < ?',
};

const DAY_MS = 86_400_000;

export interface ScopeRow {
  id: string;
  subject_json: string;
  target_json: string;
  granted_by_json: string;
  at: string;
}

export interface GrantRecord {
  id: string;
  treeId: string;
  kind: AgentRequestKind;
  grantedBy: Actor;
  at: string;
}

/**
 * A 'process' is named PID:STARTTIME, so it is never signalled after its pid was reused.
 * A 'bundle' is a directory that lives while a branch runs (crun's bundle); a
 * 'directory' one that lives as long as its owner (a version, a fork's scratch images).
 * An 'nft-table' (in the host's own netns) belongs to the instance itself: its owner is null.
 */
export type HostObjectKind = 'subvolume' | 'netns' | 'veth' | 'container' | 'bundle' | 'directory' | 'mount' | 'process' | 'cgroup' | 'nft-table';

export interface HostObject {
  kind: HostObjectKind;
  name: string;
  owner: string | null;
}

/**
 * An operation on a branch that a helper killed mid-way leaves half done,
 * recorded from the moment it starts changing things until it is done or
 * undone, so that the next start finishes or undoes it (reconcile.ts).
 */
export type PendingOp =
  /** Returning to version `to`; the branch's state before it is a checkpoint (a version after it if `keep`), or (a stopped branch's) a snapshot of its files. */
  | { kind: 'rollback'; workspaceId: string; to: string; before: { version: string } | { files: string }; keep?: boolean }
  /** The branch becomes its tree's main line in place of `mainId`, whose ports each had are `leases`. */
  | { kind: 'promote'; workspaceId: string; mainId: string; oldMain: OldMainFate; version: string | null; leases: { id: string; ports: PortLease[] }[] }
  | { kind: 'discard'; workspaceId: string }
  /** A merge into the branch, checkpointed as `version` before it; `writing`: its files may be partly written. */
  | { kind: 'merge'; workspaceId: string; version: string; writing: boolean };

/** Egress log rows each branch keeps (its newest, give or take PRUNE_EVERY); a branch's log stays bounded. */
export const EGRESS_ROWS_PER_BRANCH = 10_000;
const PRUNE_EVERY = 100;

/** An image as the registry keeps it: what clients see of it, and where its files are. */
export interface ImageRecord {
  name: string;
  state: Image['state'];
  origin: ImageOrigin;
  source: string | null;
  reference: string | null;
  /** The recipe's hash, or the OCI image's id. */
  id: string | null;
  digest: string | null;
  /** Its layers, lowest first: each one's diff id and size as stored. */
  layers: ImageLayer[];
  builtAt: string | null;
  sizeBytes: number | null;
  /** The read-only subvolume its branches read from (their overlay's lower); null until it is ready. */
  lower: string | null;
  missing: string[];
}

interface ImageRow {
  name: string;
  state: Image['state'];
  origin: ImageOrigin;
  source: string | null;
  reference: string | null;
  recipe_hash: string | null;
  digest: string | null;
  layers_json: string;
  built_at: string | null;
  size_bytes: number | null;
  lower: string | null;
  missing_json: string;
}

const toImage = (r: ImageRow): ImageRecord => ({
  name: r.name,
  state: r.state,
  origin: r.origin,
  source: r.source,
  reference: r.reference,
  id: r.recipe_hash,
  digest: r.digest,
  layers: JSON.parse(r.layers_json) as ImageLayer[],
  builtAt: r.built_at,
  sizeBytes: r.size_bytes,
  lower: r.lower,
  missing: JSON.parse(r.missing_json) as string[],
});

export interface WorkspaceRecord {
  id: string;
  name: string;
  image: Image['name'];
  state: WorkspaceState;
  hostname: string;
  machineId: string;
  netIndex: number;
  createdAt: string;
  pid: number | null;
  pidStart: number | null;
  /** The branch this one was forked from (null for a tree's first branch). */
  parentId: string | null;
  /** Id of the tree's first branch: all branches of one workspace share it. */
  treeId: string;
  /** The version this branch was last restored from, if any. */
  versionId: string | null;
  /** The tree's main line: it holds the workspace's stable host ports. */
  isMain: boolean;
  /** Who created or forked it (null for branches from before identities were kept). */
  madeBy: Maker | null;
  /** The person who first acted on it (promoted it, approved a request on it, …): it is theirs since (auth/authority.ts). */
  claimedBy: Maker | null;
  /** Why it exited (state 'exited' only). */
  exitReason: string | null;
  /** Its workspace keeps its memory out of KSM (every branch of the tree has the same mark). */
  sensitive: boolean;
  /** When a promotion retired it from the main line (stopped, with its version); null otherwise. */
  retiredAt: string | null;
}

export interface VersionRecord {
  id: string;
  branchId: string;
  treeId: string;
  label: string | null;
  createdAt: string;
  /** Null while its workspace (tree) has branches; once the last is gone, the name that branch had. */
  orphanOf: string | null;
  /** Its images are in the pool and synced (false: a checkpoint still being saved). */
  saved: boolean;
}

/** A read-only snapshot of a fork's source's files at the fork (branches/fork-points.ts). */
export interface ForkPointRecord {
  /** Its order of making: an older fork point of one branch is an ancestor of a newer one. */
  seq: number;
  id: string;
  path: string;
  /** The branch forked (it may be gone since). */
  sourceId: string;
  /** The fork point the source's files descended from then. */
  parentId: string | null;
  treeId: string;
  madeAt: string;
}

const FORK_POINT_COLUMNS = 'seq, id, path, source_id AS sourceId, parent_id AS parentId, tree_id AS treeId, made_at AS madeAt';

const VERSION_COLUMNS = 'id, branch_id AS branchId, tree_id AS treeId, label, created_at AS createdAt, orphan_of AS orphanOf, saved';

type VersionRow = Omit<VersionRecord, 'saved'> & { saved: number };

const versionRecord = (row: VersionRow): VersionRecord => ({ ...row, saved: row.saved === 1 });

export interface PortLease {
  containerPort: number;
  hostPort: number | null;
}

interface WorkspaceRow {
  id: string;
  name: string;
  image: Image['name'];
  state: WorkspaceState;
  hostname: string;
  machine_id: string;
  net_index: number;
  created_at: string;
  pid: number | null;
  pid_start: number | null;
  parent_id: string | null;
  tree_id: string;
  version_id: string | null;
  is_main: number;
  made_by_json: string | null;
  claimed_by_json: string | null;
  exit_reason: string | null;
  sensitive: number;
  retired_at: string | null;
}

const toWorkspace = (r: WorkspaceRow): WorkspaceRecord => ({
  id: r.id,
  name: r.name,
  image: r.image,
  state: r.state,
  hostname: r.hostname,
  machineId: r.machine_id,
  netIndex: r.net_index,
  createdAt: r.created_at,
  pid: r.pid,
  pidStart: r.pid_start,
  parentId: r.parent_id,
  treeId: r.tree_id,
  versionId: r.version_id,
  isMain: r.is_main === 1,
  madeBy: r.made_by_json === null ? null : Maker.parse(JSON.parse(r.made_by_json)),
  claimedBy: r.claimed_by_json === null ? null : Maker.parse(JSON.parse(r.claimed_by_json)),
  exitReason: r.exit_reason,
  sensitive: r.sensitive === 1,
  retiredAt: r.retired_at,
});

export class Registry {
  constructor(
    private readonly db: Db,
    /** Egress log rows each branch keeps (its newest). */
    private readonly egressRowsPerBranch = EGRESS_ROWS_PER_BRANCH,
  ) {}

  /** A new 8-hex-digit id, unused by any branch or version, nor by a gone tree whose versions are kept, nor HELD (for branches to come). */
  freshId(held: ReadonlySet<string> = new Set()): string {
    const used = this.db.prepare('SELECT 1 FROM workspaces WHERE id = @id UNION ALL SELECT 1 FROM versions WHERE id = @id OR tree_id = @id');
    for (;;) {
      const id = randomBytes(4).toString('hex');
      if (!held.has(id) && used.get({ id }) === undefined) return id;
    }
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  // images
  getImage(name: string): ImageRecord | null {
    const row = this.db.prepare('SELECT * FROM images WHERE name = ?').get(name) as ImageRow | undefined;
    return row ? toImage(row) : null;
  }

  listImages(): ImageRecord[] {
    return (this.db.prepare('SELECT * FROM images ORDER BY name').all() as ImageRow[]).map(toImage);
  }

  putImage(img: ImageRecord): void {
    this.db
      .prepare(
        `INSERT INTO images (name, state, origin, source, reference, recipe_hash, digest, layers_json, built_at, size_bytes, lower, missing_json)
         VALUES (@name, @state, @origin, @source, @reference, @id, @digest, @layersJson, @builtAt, @sizeBytes, @lower, @missingJson)
         ON CONFLICT(name) DO UPDATE SET state=@state, origin=@origin, source=@source, reference=@reference, recipe_hash=@id, digest=@digest,
           layers_json=@layersJson, built_at=@builtAt, size_bytes=@sizeBytes, lower=@lower, missing_json=@missingJson`,
      )
      .run({
        name: img.name,
        state: img.state,
        origin: img.origin,
        source: img.source,
        reference: img.reference,
        id: img.id,
        digest: img.digest,
        layersJson: JSON.stringify(img.layers),
        builtAt: img.builtAt,
        sizeBytes: img.sizeBytes,
        lower: img.lower,
        missingJson: JSON.stringify(img.missing),
      });
  }

  deleteImage(name: string): void {
    this.db.prepare('DELETE FROM images WHERE name = ?').run(name);
  }

  // projects
  setProject(treeId: string, p: ProjectOrigin): void {
    this.db
      .prepare('INSERT OR REPLACE INTO projects (tree_id, host_path, path, git_commit, git_branch, copied_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(treeId, p.hostPath, p.path, p.commit, p.gitBranch, p.copiedAt);
  }

  project(treeId: string): ProjectOrigin | null {
    const row = this.db.prepare('SELECT * FROM projects WHERE tree_id = ?').get(treeId) as
      { host_path: string; path: string; git_commit: string | null; git_branch: string | null; copied_at: string } | undefined;
    return row ? { hostPath: row.host_path, path: row.path, commit: row.git_commit, gitBranch: row.git_branch, copiedAt: row.copied_at } : null;
  }

  // workspaces
  listWorkspaces(): WorkspaceRecord[] {
    return (this.db.prepare('SELECT * FROM workspaces ORDER BY created_at, id').all() as WorkspaceRow[]).map(toWorkspace);
  }

  findWorkspace(ref: string): WorkspaceRecord | null {
    const row = this.db.prepare('SELECT * FROM workspaces WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1').get(ref, ref, ref) as
      WorkspaceRow | undefined;
    return row ? toWorkspace(row) : null;
  }

  insertWorkspace(ws: WorkspaceRecord): void {
    this.db
      .prepare(
        `INSERT INTO workspaces (id, name, image, state, hostname, machine_id, net_index, created_at, pid, pid_start, parent_id, tree_id, version_id, is_main, made_by_json, sensitive)
         VALUES (@id, @name, @image, @state, @hostname, @machineId, @netIndex, @createdAt, @pid, @pidStart, @parentId, @treeId, @versionId, @isMain, @madeBy, @sensitive)`,
      )
      .run({ ...ws, isMain: ws.isMain ? 1 : 0, madeBy: ws.madeBy === null ? null : JSON.stringify(ws.madeBy), sensitive: ws.sensitive ? 1 : 0 });
  }

  /** `count` names BASE-1, BASE-2… that no branch has now and no branch of the tree ever had. */
  freshBranchNames(treeId: string, base: string, count: number): string[] {
    const names: string[] = [];
    for (let k = 1; names.length < count; k++) {
      const name = `${base}-${k}`;
      if (!this.findWorkspace(name) && !this.nameUsedInTree(treeId, name)) names.push(name);
    }
    return names;
  }

  /** Whether a branch of the tree, living or gone, ever had this name. */
  nameUsedInTree(treeId: string, name: string): boolean {
    return this.db.prepare('SELECT 1 FROM tree_names WHERE tree_id = ? AND name = ?').get(treeId, name) !== undefined;
  }

  setWorkspaceState(id: string, state: WorkspaceState, proc: { pid: number; pidStart: number } | null): void {
    this.db
      .prepare('UPDATE workspaces SET state = ?, pid = ?, pid_start = ?, exit_reason = NULL WHERE id = ?')
      .run(state, proc?.pid ?? null, proc?.pidStart ?? null, id);
  }

  setExited(id: string, reason: string): void {
    this.db.prepare("UPDATE workspaces SET state = 'exited', pid = NULL, pid_start = NULL, exit_reason = ? WHERE id = ?").run(reason, id);
  }

  /** The branch was restored from `versionId`: its files descend from the fork point the version's did. */
  setVersionOrigin(id: string, versionId: string | null): void {
    this.db
      .prepare(
        'UPDATE workspaces SET version_id = @versionId, fork_point_id = COALESCE((SELECT fork_point_id FROM versions WHERE id = @versionId), fork_point_id) WHERE id = @id',
      )
      .run({ id, versionId });
  }

  /** Makes `id` the only main branch of its tree (no longer retired, if it was). */
  setMain(treeId: string, id: string): void {
    this.db
      .prepare('UPDATE workspaces SET is_main = (id = @id), retired_at = CASE WHEN id = @id THEN NULL ELSE retired_at END WHERE tree_id = @treeId')
      .run({ id, treeId });
  }

  /** A promotion retired the branch from the main line. */
  setRetired(id: string, at: string): void {
    this.db.prepare('UPDATE workspaces SET retired_at = ? WHERE id = ?').run(at, id);
  }

  // merges
  /** A merge written into `targetId` (checkpointed as `versionId` before it). */
  recordMerge(m: { treeId: string; targetId: string; sources: MergeMark['sources']; versionId: string | null; at: string }): void {
    this.db
      .prepare('INSERT INTO merges (tree_id, target_id, sources_json, version_id, at) VALUES (?, ?, ?, ?, ?)')
      .run(m.treeId, m.targetId, JSON.stringify(m.sources), m.versionId, m.at);
  }

  /** The newest `limit` merges into a branch, oldest first. */
  mergesInto(targetId: string, limit: number): MergeMark[] {
    const rows = this.db
      .prepare('SELECT sources_json, version_id, at FROM (SELECT * FROM merges WHERE target_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq')
      .all(targetId, limit) as { sources_json: string; version_id: string | null; at: string }[];
    return rows.map((r) => ({ sources: JSON.parse(r.sources_json) as MergeMark['sources'], version: r.version_id, at: r.at }));
  }

  /**
   * Removes a branch's record; its children move up to its own parent (their
   * nearest living ancestor), so the tree never shows them detached. Returns
   * the ids of the children that moved.
   */
  deleteWorkspace(id: string): string[] {
    return this.db.transaction(() => {
      const parent = this.db.prepare('SELECT parent_id FROM workspaces WHERE id = ?').pluck().get(id) as string | null | undefined;
      const children = this.db.prepare('SELECT id FROM workspaces WHERE parent_id = ?').pluck().all(id) as string[];
      this.db.prepare('UPDATE workspaces SET parent_id = ? WHERE parent_id = ?').run(parent ?? null, id);
      this.db.prepare('DELETE FROM workspaces WHERE id = ?').run(id);
      this.db.prepare('DELETE FROM pending_ops WHERE workspace_id = ?').run(id);
      return children;
    })();
  }

  // pending operations
  /** Records an operation on a branch as under way (one per branch: its lock lets one run at a time). */
  beginPendingOp(op: PendingOp): void {
    const { workspaceId, ...detail } = op;
    this.db
      .prepare('INSERT OR REPLACE INTO pending_ops (workspace_id, kind, detail_json, started_at) VALUES (?, ?, ?, ?)')
      .run(workspaceId, op.kind, JSON.stringify(detail), new Date().toISOString());
  }

  endPendingOp(workspaceId: string): void {
    this.db.prepare('DELETE FROM pending_ops WHERE workspace_id = ?').run(workspaceId);
  }

  /** Operations a helper left under way, oldest first. */
  pendingOps(): PendingOp[] {
    const rows = this.db.prepare('SELECT workspace_id, detail_json FROM pending_ops ORDER BY started_at').all() as {
      workspace_id: string;
      detail_json: string;
    }[];
    return rows.map((r) => ({ ...(JSON.parse(r.detail_json) as Omit<PendingOp, 'workspaceId'>), workspaceId: r.workspace_id }) as PendingOp);
  }

  usedNetIndexes(): Set<number> {
    return new Set(this.db.prepare('SELECT net_index FROM workspaces').pluck().all() as number[]);
  }

  // ports
  ports(workspaceId: string): PortLease[] {
    return this.db
      .prepare('SELECT container_port AS containerPort, host_port AS hostPort FROM ports WHERE workspace_id = ? ORDER BY container_port')
      .all(workspaceId) as PortLease[];
  }

  setPort(workspaceId: string, containerPort: number, hostPort: number | null): void {
    this.db
      .prepare(
        `INSERT INTO ports (workspace_id, container_port, host_port) VALUES (?, ?, ?)
         ON CONFLICT(workspace_id, container_port) DO UPDATE SET host_port = excluded.host_port`,
      )
      .run(workspaceId, containerPort, hostPort);
  }

  // versions
  /** Records a new version of a live tree (so never an orphan). */
  insertVersion(v: Omit<VersionRecord, 'orphanOf'>): void {
    this.db
      .prepare(
        `INSERT INTO versions (id, branch_id, tree_id, label, created_at, saved, fork_point_id)
         VALUES (@id, @branchId, @treeId, @label, @createdAt, @saved, (SELECT fork_point_id FROM workspaces WHERE id = @branchId))`,
      )
      .run({ ...v, saved: v.saved ? 1 : 0 });
  }

  setVersionLabel(id: string, label: string | null): void {
    this.db.prepare('UPDATE versions SET label = ? WHERE id = ?').run(label, id);
  }

  setVersionSaved(id: string): void {
    this.db.prepare('UPDATE versions SET saved = 1 WHERE id = ?').run(id);
  }

  findVersion(id: string): VersionRecord | null {
    const row = this.db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE id = ?`).get(id) as VersionRow | undefined;
    return row ? versionRecord(row) : null;
  }

  /** Every version (orphans included), or those of one tree, oldest first. */
  listVersions(treeId?: string): VersionRecord[] {
    const sql = `SELECT ${VERSION_COLUMNS} FROM versions`;
    const rows =
      treeId === undefined ? this.db.prepare(`${sql} ORDER BY created_at`).all() : this.db.prepare(`${sql} WHERE tree_id = ? ORDER BY created_at`).all(treeId);
    return (rows as VersionRow[]).map(versionRecord);
  }

  deleteVersion(id: string): void {
    this.db.prepare('DELETE FROM versions WHERE id = ?').run(id);
  }

  // fork points
  /** Records a fork's fork point, and that `children` descend from it (the fork commits). */
  insertForkPoint(fp: Omit<ForkPointRecord, 'seq'>, children: readonly string[]): void {
    this.db.transaction(() => {
      this.db
        .prepare('INSERT INTO fork_points (id, path, source_id, parent_id, tree_id, made_at) VALUES (@id, @path, @sourceId, @parentId, @treeId, @madeAt)')
        .run(fp);
      const setPoint = this.db.prepare('UPDATE workspaces SET fork_point_id = ? WHERE id = ?');
      for (const child of children) setPoint.run(fp.id, child);
    })();
  }

  /** The fork point a branch's files descend from (null: its tree's first files, or from before fork points were kept). */
  forkPointOf(workspaceId: string): string | null {
    return (this.db.prepare('SELECT fork_point_id FROM workspaces WHERE id = ?').pluck().get(workspaceId) as string | null | undefined) ?? null;
  }

  findForkPoint(id: string): ForkPointRecord | null {
    return (this.db.prepare(`SELECT ${FORK_POINT_COLUMNS} FROM fork_points WHERE id = ?`).get(id) as ForkPointRecord | undefined) ?? null;
  }

  /** The fork point a version's files descend from (null: its tree's first files, or from before fork points were kept). */
  versionForkPointOf(versionId: string): string | null {
    return (this.db.prepare('SELECT fork_point_id FROM versions WHERE id = ?').pluck().get(versionId) as string | null | undefined) ?? null;
  }

  /** Every fork point, oldest first. */
  listForkPoints(): ForkPointRecord[] {
    return this.db.prepare(`SELECT ${FORK_POINT_COLUMNS} FROM fork_points ORDER BY seq`).all() as ForkPointRecord[];
  }

  /** Fork points no branch or version descends from, through any number of forks: no merge can need them as a base. */
  unneededForkPoints(): ForkPointRecord[] {
    return this.db
      .prepare(
        `WITH RECURSIVE needed(id) AS (
           SELECT fork_point_id FROM workspaces WHERE fork_point_id IS NOT NULL
           UNION SELECT fork_point_id FROM versions WHERE fork_point_id IS NOT NULL
           UNION SELECT f.parent_id FROM fork_points f JOIN needed n ON f.id = n.id WHERE f.parent_id IS NOT NULL
         )
         SELECT ${FORK_POINT_COLUMNS} FROM fork_points WHERE id NOT IN (SELECT id FROM needed) ORDER BY seq DESC`,
      )
      .all() as ForkPointRecord[];
  }

  deleteForkPoint(id: string): void {
    this.db.prepare('DELETE FROM fork_points WHERE id = ?').run(id);
  }

  // host objects
  recordObject(obj: HostObject): void {
    this.db
      .prepare('INSERT OR REPLACE INTO host_objects (kind, name, owner, created_at) VALUES (?, ?, ?, ?)')
      .run(obj.kind, obj.name, obj.owner, new Date().toISOString());
  }

  forgetObject(kind: HostObjectKind, name: string): void {
    this.db.prepare('DELETE FROM host_objects WHERE kind = ? AND name = ?').run(kind, name);
  }

  objects(filter: { owner?: string | null; kind?: HostObjectKind } = {}): HostObject[] {
    const rows = this.db.prepare('SELECT kind, name, owner FROM host_objects ORDER BY seq').all() as HostObject[];
    return rows.filter((o) => (filter.kind === undefined || o.kind === filter.kind) && (filter.owner === undefined || o.owner === filter.owner));
  }

  // egress
  /** The branch's egress policy; the default (deny, nothing allowed) when none was set. */
  egressPolicy(workspaceId: string): EgressPolicy {
    const row = this.db.prepare('SELECT mode, hold_mutating, allow_json FROM egress_policies WHERE workspace_id = ?').get(workspaceId) as
      { mode: EgressPolicy['mode']; hold_mutating: number; allow_json: string } | undefined;
    if (!row) return { mode: 'deny', allow: [], holdMutating: false };
    return { mode: row.mode, holdMutating: row.hold_mutating === 1, allow: JSON.parse(row.allow_json) as EgressPolicy['allow'] };
  }

  setEgressPolicy(workspaceId: string, policy: EgressPolicy): void {
    this.db
      .prepare(
        `INSERT INTO egress_policies (workspace_id, mode, hold_mutating, allow_json) VALUES (?, ?, ?, ?)
         ON CONFLICT(workspace_id) DO UPDATE SET mode = excluded.mode, hold_mutating = excluded.hold_mutating, allow_json = excluded.allow_json`,
      )
      .run(workspaceId, policy.mode, policy.holdMutating ? 1 : 0, JSON.stringify(policy.allow));
  }

  /** A copy of `fromId`'s policy becomes `toId`'s (a fork's child starts with its source's). */
  copyEgressPolicy(fromId: string, toId: string): void {
    this.setEgressPolicy(toId, this.egressPolicy(fromId));
  }

  /**
   * Records an egress attempt. A denial like one recorded for the same branch,
   * destination and reason in the last minute adds to that row's count
   * instead: a branch that loops on a denied address makes one row a minute,
   * not thousands. Each branch keeps its newest egressRowsPerBranch rows.
   *
   * Written without waiting for the disk (synchronous=NORMAL for this
   * transaction): a branch decides how often the gate records, and the helper
   * must not wait on an fsync per connection it makes. The row is durable at
   * the registry's next commit of its own records (WAL is written in order)
   * or next checkpoint; a power loss may drop the last rows, never half a row.
   */
  logEgress(entry: Omit<EgressLogEntry, 'seq' | 'count'>): number {
    return withoutWaitingForDisk(this.db, () => {
      if (entry.verdict === 'denied') {
        const since = new Date(Date.parse(entry.at) - 60_000).toISOString();
        const same = this.db
          .prepare(
            `SELECT seq FROM egress_log WHERE workspace_id = ? AND host = ? AND port = ? AND method = ? AND verdict = 'denied'
             AND IFNULL(detail, '') = IFNULL(?, '') AND at >= ? ORDER BY seq DESC LIMIT 1`,
          )
          .pluck()
          .get(entry.workspace, entry.host, entry.port, entry.method, entry.detail, since) as number | undefined;
        if (same !== undefined) {
          this.db.prepare('UPDATE egress_log SET count = count + 1 WHERE seq = ?').run(same);
          return same;
        }
      }
      const res = this.db
        .prepare(
          `INSERT INTO egress_log (at, workspace_id, workspace_name, request_id, host, port, method, url, verdict, decided_by, detail)
           VALUES (@at, @workspace, @workspaceName, @request, @host, @port, @method, @url, @verdict, @decidedBy, @detail)`,
        )
        .run(entry);
      const seq = Number(res.lastInsertRowid);
      // Pruned every PRUNE_EVERY rows, not at each: the look for the cut walks the branch's rows.
      if (seq % PRUNE_EVERY === 0) {
        this.db
          .prepare(
            'DELETE FROM egress_log WHERE workspace_id = ? AND seq <= (SELECT seq FROM egress_log WHERE workspace_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)',
          )
          .run(entry.workspace, entry.workspace, this.egressRowsPerBranch);
      }
      return seq;
    });
  }

  /** The newest `limit` entries (of one branch, or all), oldest first. */
  egressLog(workspaceId: string | null, limit: number): EgressLogEntry[] {
    const cols = `seq, at, workspace_id AS workspace, workspace_name AS workspaceName, request_id AS request, host, port, method, url,
                  verdict, decided_by AS decidedBy, detail, count`;
    const rows =
      workspaceId === null
        ? this.db.prepare(`SELECT ${cols} FROM egress_log ORDER BY seq DESC LIMIT ?`).all(limit)
        : this.db.prepare(`SELECT ${cols} FROM egress_log WHERE workspace_id = ? ORDER BY seq DESC LIMIT ?`).all(workspaceId, limit);
    return (rows as EgressLogEntry[]).reverse();
  }

  // fork history
  /** Records a fork that succeeded, finished now. */
  recordFork(fork: { fork: string; source: Pick<WorkspaceRecord, 'id' | 'name'>; copies: number; timings: ForkReport['timings'] }): void {
    this.db
      .prepare('INSERT INTO forks (id, source_id, source_name, copies, finished_at, timings_json) VALUES (?, ?, ?, ?, ?, ?)')
      .run(fork.fork, fork.source.id, fork.source.name, fork.copies, new Date().toISOString(), JSON.stringify(fork.timings));
  }

  /** The newest `limit` forks, newest first. */
  recentForks(limit: number): ForkRecord[] {
    const rows = this.db.prepare('SELECT id, source_id, source_name, copies, finished_at, timings_json FROM forks ORDER BY seq DESC LIMIT ?').all(limit) as {
      id: string;
      source_id: string;
      source_name: string;
      copies: number;
      finished_at: string;
      timings_json: string;
    }[];
    return rows.map((r) => ({
      fork: r.id,
      source: { id: r.source_id, name: r.source_name },
      copies: r.copies,
      at: r.finished_at,
      timings: JSON.parse(r.timings_json) as ForkReport['timings'],
    }));
  }

  // limits
  /** The branch's limits, or null when it has the defaults. */
  limits(workspaceId: string): BranchLimits | null {
    const row = this.db.prepare('SELECT memory_bytes, pids, cpu_weight, disk_bytes FROM limits WHERE workspace_id = ?').get(workspaceId) as
      { memory_bytes: number; pids: number; cpu_weight: number; disk_bytes: number } | undefined;
    return row ? { memoryBytes: row.memory_bytes, pids: row.pids, cpuWeight: row.cpu_weight, diskBytes: row.disk_bytes } : null;
  }

  setLimits(workspaceId: string, l: BranchLimits): void {
    this.db
      .prepare(
        `INSERT INTO limits (workspace_id, memory_bytes, pids, cpu_weight, disk_bytes) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(workspace_id) DO UPDATE SET memory_bytes = excluded.memory_bytes, pids = excluded.pids, cpu_weight = excluded.cpu_weight,
           disk_bytes = excluded.disk_bytes`,
      )
      .run(workspaceId, l.memoryBytes, l.pids, l.cpuWeight, l.diskBytes);
  }

  // grants
  grants(treeId?: string): GrantRecord[] {
    const rows = (
      treeId === undefined
        ? this.db.prepare('SELECT * FROM grants ORDER BY at, id').all()
        : this.db.prepare('SELECT * FROM grants WHERE tree_id = ? ORDER BY at, id').all(treeId)
    ) as { id: string; tree_id: string; kind: AgentRequestKind; granted_by_json: string; at: string }[];
    return rows.map((r) => ({ id: r.id, treeId: r.tree_id, kind: r.kind, grantedBy: Actor.parse(JSON.parse(r.granted_by_json)), at: r.at }));
  }

  findGrant(treeId: string, kind: AgentRequestKind): GrantRecord | null {
    return this.grants(treeId).find((g) => g.kind === kind) ?? null;
  }

  /** Records a grant; the existing one when the tree already has that kind. */
  putGrant(g: GrantRecord): GrantRecord {
    this.db
      .prepare('INSERT OR IGNORE INTO grants (id, tree_id, kind, granted_by_json, at) VALUES (?, ?, ?, ?, ?)')
      .run(g.id, g.treeId, g.kind, JSON.stringify(g.grantedBy), g.at);
    return this.findGrant(g.treeId, g.kind)!;
  }

  deleteGrant(id: string): void {
    this.db.prepare('DELETE FROM grants WHERE id = ?').run(id);
  }

  /** A person acted on the branch: it is theirs from now on (the first such person is kept). */
  claimWorkspace(id: string, by: Maker): void {
    const maker: Maker = { role: by.role, uid: by.uid, user: by.user };
    this.db.prepare('UPDATE workspaces SET claimed_by_json = COALESCE(claimed_by_json, ?) WHERE id = ?').run(JSON.stringify(maker), id);
  }

  // agents' scopes: stored as JSON, validated by their reader (auth/scopes.ts)
  scopeRows(): ScopeRow[] {
    return this.db.prepare('SELECT * FROM agent_scopes ORDER BY at, id').all() as ScopeRow[];
  }

  putScope(row: ScopeRow): void {
    this.db
      .prepare('INSERT INTO agent_scopes (id, subject_json, target_json, granted_by_json, at) VALUES (@id, @subject_json, @target_json, @granted_by_json, @at)')
      .run(row);
  }

  deleteScope(id: string): void {
    this.db.prepare('DELETE FROM agent_scopes WHERE id = ?').run(id);
  }

  /** A tree's grants end with its last branch. */
  deleteGrantsOfTree(treeId: string): void {
    this.db.prepare('DELETE FROM grants WHERE tree_id = ?').run(treeId);
  }

  // audit
  /** Appends one entry and returns it as stored. */
  audit(entry: { actor: Actor | null; action: string; target: string | null; outcome: 'ok' | 'error'; detail: string | null }): AuditEntry {
    const at = new Date().toISOString();
    const summary = entry.actor ? `${entry.actor.role}:${entry.actor.user}` : 'helper';
    const res = this.db
      .prepare('INSERT INTO audit (at, actor, action, target, outcome, detail, actor_json) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(at, summary, entry.action, entry.target, entry.outcome, entry.detail, entry.actor ? JSON.stringify(entry.actor) : null);
    return { seq: Number(res.lastInsertRowid), at, ...entry };
  }

  /** The newest `limit` entries (about `targets`, when given, and matching `filter`), oldest first. */
  auditLog(targets: readonly string[] | null, limit: number, filter: AuditFilter = {}): AuditEntry[] {
    const used = (Object.keys(AUDIT_FILTER_SQL) as (keyof AuditFilter)[]).filter((key) => filter[key] !== undefined);
    const clauses = [...(targets === null ? [] : [`target IN (${targets.map(() => '?').join(',')})`]), ...used.map((key) => AUDIT_FILTER_SQL[key])];
    const where = clauses.length === 0 ? '' : `WHERE ${clauses.join(' AND ')}`;
    const rows = this.db
      .prepare(`SELECT seq, at, actor_json, action, target, outcome, detail FROM audit ${where} ORDER BY seq DESC LIMIT ?`)
      .all(...(targets ?? []), ...used.map((key) => filter[key]), limit) as {
      seq: number;
      at: string;
      actor_json: string | null;
      action: string;
      target: string | null;
      outcome: 'ok' | 'error';
      detail: string | null;
    }[];
    return rows.reverse().map((r) => ({
      seq: r.seq,
      at: r.at,
      actor: r.actor_json === null ? null : Actor.parse(JSON.parse(r.actor_json)),
      action: r.action,
      target: r.target,
      outcome: r.outcome,
      detail: r.detail,
    }));
  }

  /** Whether any entry names `target` (a removed branch is still found in the log by its id or name). */
  auditNames(target: string): boolean {
    return this.db.prepare('SELECT 1 FROM audit WHERE target = ? LIMIT 1').get(target) !== undefined;
  }

  /**
   * Drops the entries beyond the newest `keep.maxRows` and those older than
   * `keep.maxDays`; returns how many went. Both are index range deletes (seq
   * is the rowid, `at` has an index), so this is cheap enough after every insert.
   */
  pruneAudit(keep: AuditRetention = { maxRows: AUDIT_ROWS_KEPT, maxDays: AUDIT_DAYS_KEPT }, now = Date.now()): number {
    const cutoff = new Date(now - keep.maxDays * DAY_MS).toISOString();
    return this.transaction(
      () =>
        this.db.prepare('DELETE FROM audit WHERE seq <= (SELECT MAX(seq) FROM audit) - ?').run(keep.maxRows).changes +
        this.db.prepare('DELETE FROM audit WHERE at < ?').run(cutoff).changes,
    );
  }
}

/** Runs fn as one transaction that does not wait for the disk; the registry's other writes still do. */
function withoutWaitingForDisk<T>(db: Db, fn: () => T): T {
  db.pragma('synchronous = NORMAL');
  try {
    return db.transaction(fn)();
  } finally {
    db.pragma('synchronous = FULL');
  }
}
