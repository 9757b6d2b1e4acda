// The registry's storage: SQLite in WAL mode with synchronous=FULL, so a crash
// or power loss never leaves a half-written record. Schema changes are numbered
// migrations applied in one transaction each.
import Database from 'better-sqlite3';

export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE images (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    recipe_hash TEXT,
    built_at TEXT,
    size_bytes INTEGER
  );
  CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    image TEXT NOT NULL,
    state TEXT NOT NULL,
    hostname TEXT NOT NULL,
    machine_id TEXT NOT NULL,
    net_index INTEGER NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    pid INTEGER,
    pid_start INTEGER
  );
  CREATE TABLE ports (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    container_port INTEGER NOT NULL,
    host_port INTEGER UNIQUE,
    PRIMARY KEY (workspace_id, container_port)
  );
  -- Every host object the helper made, recorded before it is made, so that a
  -- crash at any point leaves enough to clean up on the next start.
  CREATE TABLE host_objects (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    owner TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (kind, name)
  );
  CREATE TABLE audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT,
    outcome TEXT NOT NULL,
    detail TEXT
  );
  `,
  // Branches: every workspace record is a branch of a tree (tree_id = the id of
  // the tree's first branch); one branch per tree is its main line.
  `
  ALTER TABLE workspaces ADD COLUMN parent_id TEXT;
  ALTER TABLE workspaces ADD COLUMN tree_id TEXT NOT NULL DEFAULT '';
  ALTER TABLE workspaces ADD COLUMN version_id TEXT;
  ALTER TABLE workspaces ADD COLUMN is_main INTEGER NOT NULL DEFAULT 1;
  UPDATE workspaces SET tree_id = id WHERE tree_id = '';
  CREATE TABLE versions (
    id TEXT PRIMARY KEY,
    branch_id TEXT NOT NULL,
    tree_id TEXT NOT NULL,
    label TEXT,
    created_at TEXT NOT NULL
  );
  `,
  // Egress: each branch's policy (a missing row means the default, deny) and a
  // log of every attempt and decision, kept after its branch is gone.
  `
  CREATE TABLE egress_policies (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    mode TEXT NOT NULL,
    hold_mutating INTEGER NOT NULL DEFAULT 0,
    allow_json TEXT NOT NULL DEFAULT '[]'
  );
  CREATE TABLE egress_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    workspace_name TEXT NOT NULL,
    request_id TEXT,
    host TEXT NOT NULL,
    port INTEGER NOT NULL,
    method TEXT NOT NULL,
    url TEXT,
    verdict TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    detail TEXT
  );
  CREATE INDEX egress_log_workspace ON egress_log (workspace_id, seq);
  -- A fork's child starts with a copy of its source's policy, in the same
  -- transaction that records the child; later changes to either stay their own.
  CREATE TRIGGER egress_inherit AFTER INSERT ON workspaces WHEN NEW.parent_id IS NOT NULL
  BEGIN
    INSERT OR IGNORE INTO egress_policies (workspace_id, mode, hold_mutating, allow_json)
      SELECT NEW.id, mode, hold_mutating, allow_json FROM egress_policies WHERE workspace_id = NEW.parent_id;
  END;
  `,
  // Fork history: each successful fork's stage timings, kept after its branches
  // are gone (the source's name with it) for the performance panel.
  `
  CREATE TABLE forks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    source_id TEXT NOT NULL,
    source_name TEXT NOT NULL,
    copies INTEGER NOT NULL,
    finished_at TEXT NOT NULL,
    timings_json TEXT NOT NULL
  );
  `,
  // Identities: who made each branch and who made each audited call, as the
  // kernel reported them (JSON of protocol/identity.ts's Maker and Actor), and
  // the standing approvals persons give agents per workspace (tree).
  `
  ALTER TABLE workspaces ADD COLUMN made_by_json TEXT;
  ALTER TABLE audit ADD COLUMN actor_json TEXT;
  CREATE INDEX audit_target ON audit (target, seq);
  CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    tree_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    granted_by_json TEXT NOT NULL,
    at TEXT NOT NULL,
    UNIQUE (tree_id, kind)
  );
  `,
  // Resource limits per branch (a missing row means the defaults, host/cgroups.ts);
  // a fork's child starts with its source's, in the transaction that records it.
  `
  CREATE TABLE limits (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    memory_bytes INTEGER NOT NULL,
    pids INTEGER NOT NULL,
    cpu_weight INTEGER NOT NULL
  );
  CREATE TRIGGER limits_inherit AFTER INSERT ON workspaces WHEN NEW.parent_id IS NOT NULL
  BEGIN
    INSERT OR IGNORE INTO limits (workspace_id, memory_bytes, pids, cpu_weight)
      SELECT NEW.id, memory_bytes, pids, cpu_weight FROM limits WHERE workspace_id = NEW.parent_id;
  END;
  `,
  // A branch's desktop is served on a Unix socket only persons may open, no
  // longer on a host port (which let in every local user): its VNC leases go.
  `
  DELETE FROM ports WHERE container_port = 5900;
  `,
  // Retention: a tree's versions go with its last branch unless a person keeps
  // them; kept ones are orphans that name the workspace they came from (older
  // orphans, whose workspace's name was never kept, its tree id). The audit log
  // is pruned by age as well as by size, and queried by time.
  `
  ALTER TABLE versions ADD COLUMN orphan_of TEXT;
  UPDATE versions SET orphan_of = tree_id WHERE tree_id NOT IN (SELECT tree_id FROM workspaces);
  CREATE TRIGGER versions_orphaned AFTER DELETE ON workspaces
    WHEN NOT EXISTS (SELECT 1 FROM workspaces WHERE tree_id = OLD.tree_id)
  BEGIN
    UPDATE versions SET orphan_of = OLD.name WHERE tree_id = OLD.tree_id;
  END;
  CREATE INDEX audit_at ON audit (at);
  `,
  // User namespaces: the processes of a tree's branches run as a host uid/gid
  // range of their own (host_base .. host_base+65535); trees made before have
  // no row and run without one.
  `
  CREATE TABLE id_ranges (
    tree_id TEXT PRIMARY KEY,
    host_base INTEGER NOT NULL UNIQUE
  );
  `,
  // A branch whose processes ended on their own is 'exited', with why.
  `
  ALTER TABLE workspaces ADD COLUMN exit_reason TEXT;
  `,
  // A checkpoint returns once its point in time is fixed and is saved into the
  // pool afterwards: until then it is not saved (those made before were).
  `
  ALTER TABLE versions ADD COLUMN saved INTEGER NOT NULL DEFAULT 1;
  `,
  // Images of one's own (a Containerfile, a registry, an archive) beside Grove's
  // desktop recipe, and the project a workspace was made from.
  `
  ALTER TABLE images ADD COLUMN origin TEXT NOT NULL DEFAULT 'recipe';
  ALTER TABLE images ADD COLUMN source TEXT;
  ALTER TABLE images ADD COLUMN reference TEXT;
  ALTER TABLE images ADD COLUMN digest TEXT;
  ALTER TABLE images ADD COLUMN layers_json TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE images ADD COLUMN lower TEXT;
  ALTER TABLE images ADD COLUMN missing_json TEXT NOT NULL DEFAULT '[]';
  CREATE TABLE projects (
    tree_id TEXT PRIMARY KEY,
    host_path TEXT NOT NULL,
    path TEXT NOT NULL,
    git_commit TEXT,
    git_branch TEXT,
    copied_at TEXT NOT NULL
  );
  `,
  // A loop of identical denials is one row a minute with a count; each branch
  // keeps its newest rows only (registry.ts logEgress).
  `
  ALTER TABLE egress_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
  `,
  // A workspace marked sensitive keeps its memory out of KSM (no page-content side channel with other workspaces).
  `
  ALTER TABLE workspaces ADD COLUMN sensitive INTEGER NOT NULL DEFAULT 0;
  `,
  // An operation that a helper killed mid-way leaves half done (a rollback, a
  // promotion, a discard): what it was doing, so the next start finishes or
  // undoes it (reconcile.ts). One at a time per branch, as its lock allows.
  `
  CREATE TABLE pending_ops (
    workspace_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    started_at TEXT NOT NULL
  );
  `,
  // Each branch's disk limit (host/disk-quota.ts), inherited by forks like the
  // rest; branches older than it get the default (host/cgroups.ts DEFAULT_LIMITS).
  `
  ALTER TABLE limits ADD COLUMN disk_bytes INTEGER NOT NULL DEFAULT 10737418240;
  DROP TRIGGER limits_inherit;
  CREATE TRIGGER limits_inherit AFTER INSERT ON workspaces WHEN NEW.parent_id IS NOT NULL
  BEGIN
    INSERT OR IGNORE INTO limits (workspace_id, memory_bytes, pids, cpu_weight, disk_bytes)
      SELECT NEW.id, memory_bytes, pids, cpu_weight, disk_bytes FROM limits WHERE workspace_id = NEW.parent_id;
  END;
  `,
  // Fork points: a read-only snapshot of a fork's source at the fork, kept as
  // the merge base of its children (branches/fork-points.ts). Each branch and
  // version names the one its files descend from; each fork point the one its
  // source descended from, so a line of descent outlives discarded branches.
  `
  CREATE TABLE fork_points (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    source_id TEXT NOT NULL,
    parent_id TEXT,
    tree_id TEXT NOT NULL,
    made_at TEXT NOT NULL
  );
  ALTER TABLE workspaces ADD COLUMN fork_point_id TEXT;
  ALTER TABLE versions ADD COLUMN fork_point_id TEXT;
  `,
  // Agents' scopes (protocol/scopes.ts), and the person who took a branch over
  // by acting on it (auth/authority.ts: ownership moves with authority).
  `
  CREATE TABLE agent_scopes (
    id TEXT PRIMARY KEY,
    subject_json TEXT NOT NULL,
    target_json TEXT NOT NULL,
    granted_by_json TEXT NOT NULL,
    at TEXT NOT NULL
  );
  ALTER TABLE workspaces ADD COLUMN claimed_by_json TEXT;
  `,
  // A workspace's history, for its tree to show: every name its branches ever
  // had (a new branch never takes a former one's), when a promotion retired
  // its old main line (stopped, with its version), and the merges into each
  // branch. Names and merges go with the workspace's last branch; a branch's
  // merges with it.
  `
  CREATE TABLE tree_names (
    tree_id TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (tree_id, name)
  );
  INSERT OR IGNORE INTO tree_names (tree_id, name) SELECT tree_id, name FROM workspaces;
  CREATE TRIGGER tree_names_kept AFTER INSERT ON workspaces
  BEGIN
    INSERT OR IGNORE INTO tree_names (tree_id, name) VALUES (NEW.tree_id, NEW.name);
  END;
  ALTER TABLE workspaces ADD COLUMN retired_at TEXT;
  CREATE TABLE merges (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tree_id TEXT NOT NULL,
    target_id TEXT NOT NULL,
    sources_json TEXT NOT NULL,
    version_id TEXT,
    at TEXT NOT NULL
  );
  CREATE INDEX merges_target ON merges (target_id, seq);
  CREATE TRIGGER history_gone AFTER DELETE ON workspaces
  BEGIN
    DELETE FROM merges WHERE target_id = OLD.id;
    DELETE FROM tree_names WHERE tree_id = OLD.tree_id AND NOT EXISTS (SELECT 1 FROM workspaces WHERE tree_id = OLD.tree_id);
  END;
  `,
];

export type Db = Database.Database;

export function openDb(file: string): Db {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  MIGRATIONS.slice(current).forEach((sql, i) => {
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${current + i + 1}`);
    })();
  });
}
