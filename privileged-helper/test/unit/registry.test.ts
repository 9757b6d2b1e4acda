import { rmSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS, openDb, type Db } from '../../src/registry/db.js';
import { closeTempRegistry, openTempRegistry, workspaceRecord, type TempRegistry } from './registry-fixture.js';
import { AUDIT_ROWS_KEPT, Registry, type ImageRecord } from '../../src/registry/registry.js';
import { DEFAULT_LIMITS } from '../../src/host/cgroups.js';
import type { Actor } from '../../src/protocol/identity.js';

let t: TempRegistry;
let dir: string;
let file: string;
let db: Db;
let reg: Registry;

beforeEach(() => {
  t = openTempRegistry('grove-registry-');
  ({ dir, file, db, reg } = t);
});

afterEach(() => closeTempRegistry(t));

/** A registry in `file` as it was before the migration that says `text`. */
function registryBefore(file: string, text: string): Db {
  const before = MIGRATIONS.findIndex((m) => m.includes(text));
  const old = new Database(file);
  for (const m of MIGRATIONS.slice(0, before)) old.exec(m);
  old.pragma(`user_version = ${before}`);
  return old;
}

function reopen(): void {
  db.close();
  db = openDb(file);
  reg = new Registry(db);
}

const workspace = workspaceRecord;

/** The desktop image's record as first built, with what `over` changes. */
const image = (over: Partial<ImageRecord> = {}): ImageRecord => ({
  name: 'desktop',
  state: 'absent',
  origin: 'recipe',
  source: null,
  reference: null,
  id: null,
  digest: null,
  layers: [],
  builtAt: null,
  sizeBytes: null,
  lower: null,
  missing: [],
  ...over,
});

const person: Actor = { role: 'person', uid: 0, user: 'root', pid: 100, process: 'node', client: 'cli:grove-cli' };
const agent: Actor = { role: 'agent', uid: 1001, user: 'alice', pid: 200, process: 'node', client: 'cli:grove-cli' };

describe('openDb', () => {
  it('applies the migrations and records them in user_version', () => {
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    expect(tables).toEqual(expect.arrayContaining(['audit', 'forks', 'grants', 'host_objects', 'images', 'ports', 'workspaces']));
  });

  it('runs in WAL mode with full sync and foreign keys on', () => {
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2); // FULL
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
  });

  it('does not re-run applied migrations when the file is reopened, and keeps the data', () => {
    reg.insertWorkspace(workspace());
    reg.setPort('0123abcd', 5900, 40001);
    reg.recordObject({ kind: 'netns', name: 'grove-t1-0123abcd', owner: '0123abcd' });
    reg.putImage(image({ state: 'ready', id: 'abc', builtAt: '2024-01-01', sizeBytes: 123 }));
    reg.audit({ actor: person, action: 'workspace.create', target: 'alpha', outcome: 'ok', detail: null });

    // Reopening would throw "table images already exists" if the migration ran again.
    reopen();
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(reg.findWorkspace('alpha')).toEqual(workspace());
    expect(reg.ports('0123abcd')).toEqual([{ containerPort: 5900, hostPort: 40001 }]);
    expect(reg.objects()).toEqual([{ kind: 'netns', name: 'grove-t1-0123abcd', owner: '0123abcd' }]);
    expect(reg.getImage('desktop')).toEqual(image({ state: 'ready', id: 'abc', builtAt: '2024-01-01', sizeBytes: 123 }));
    expect(db.prepare('SELECT COUNT(*) FROM audit').pluck().get()).toBe(1);
  });
});

describe('images', () => {
  it('returns null for an unknown image and upserts a known one', () => {
    expect(reg.getImage('desktop')).toBeNull();
    reg.putImage(image({ state: 'building' }));
    expect(reg.getImage('desktop')).toEqual(image({ state: 'building' }));
    reg.putImage(image({ state: 'ready', id: 'h1', builtAt: '2024-02-02T00:00:00Z', sizeBytes: 42 }));
    expect(reg.getImage('desktop')).toEqual(image({ state: 'ready', id: 'h1', builtAt: '2024-02-02T00:00:00Z', sizeBytes: 42 }));
    expect(db.prepare('SELECT COUNT(*) FROM images').pluck().get()).toBe(1);
  });

  it('keeps an OCI image with its layers, lower and what it lacks, lists and deletes it', () => {
    const built = image({
      name: 'tools',
      state: 'ready',
      origin: 'containerfile',
      source: '/home/p/Containerfile',
      reference: 'localhost/grove/tools:latest',
      id: 'c0ffee',
      digest: 'sha256:beef',
      layers: [
        { diffId: 'sha256:aa', size: 10 },
        { diffId: 'sha256:bb', size: 20 },
      ],
      lower: '/pool/images/tools-c0ffee',
      missing: ['Xvnc (tigervnc-standalone-server)'],
    });
    reg.putImage(image({ state: 'ready' }));
    reg.putImage(built);
    expect(reg.getImage('tools')).toEqual(built);
    expect(reg.listImages().map((i) => i.name)).toEqual(['desktop', 'tools']);
    reg.deleteImage('tools');
    expect(reg.getImage('tools')).toBeNull();
  });
});

describe('projects', () => {
  it("keeps a tree's project origin", () => {
    expect(reg.project('0123abcd')).toBeNull();
    const origin = { hostPath: '/home/p/app', path: '/root/work', commit: 'a'.repeat(40), gitBranch: 'main', copiedAt: '2026-12-06T00:00:00Z' };
    reg.setProject('0123abcd', origin);
    expect(reg.project('0123abcd')).toEqual(origin);
  });
});

describe('workspaces', () => {
  it('round-trips every field and finds a workspace by id or by name', () => {
    const ws = workspace({ state: 'running', pid: 4242, pidStart: 987654, netIndex: 7 });
    reg.insertWorkspace(ws);
    expect(reg.findWorkspace('0123abcd')).toEqual(ws);
    expect(reg.findWorkspace('alpha')).toEqual(ws);
    expect(reg.findWorkspace('beta')).toBeNull();
    expect(reg.findWorkspace('99999999')).toBeNull();
  });

  it('prefers an id match over a workspace whose name looks like that id', () => {
    reg.insertWorkspace(workspace({ id: 'aaaaaaaa', name: 'bbbbbbbb', netIndex: 0 }));
    reg.insertWorkspace(workspace({ id: 'bbbbbbbb', name: 'other', netIndex: 1 }));
    expect(reg.findWorkspace('bbbbbbbb')?.id).toBe('bbbbbbbb');
    expect(reg.findWorkspace('aaaaaaaa')?.id).toBe('aaaaaaaa');
  });

  it('refuses a second workspace with the same name, id or net index', () => {
    reg.insertWorkspace(workspace());
    expect(() => reg.insertWorkspace(workspace({ id: '11111111', netIndex: 1 }))).toThrow(/UNIQUE/);
    expect(() => reg.insertWorkspace(workspace({ name: 'beta', netIndex: 1 }))).toThrow(/UNIQUE/);
    expect(() => reg.insertWorkspace(workspace({ id: '11111111', name: 'beta' }))).toThrow(/UNIQUE/);
    expect(reg.listWorkspaces()).toHaveLength(1);
  });

  it('lists by creation time, then id', () => {
    reg.insertWorkspace(workspace({ id: 'cccccccc', name: 'c', netIndex: 2, createdAt: '2024-01-02T00:00:00Z' }));
    reg.insertWorkspace(workspace({ id: 'bbbbbbbb', name: 'b', netIndex: 1, createdAt: '2024-01-01T00:00:00Z' }));
    reg.insertWorkspace(workspace({ id: 'aaaaaaaa', name: 'a', netIndex: 0, createdAt: '2024-01-02T00:00:00Z' }));
    expect(reg.listWorkspaces().map((w) => w.id)).toEqual(['bbbbbbbb', 'aaaaaaaa', 'cccccccc']);
    expect(reg.usedNetIndexes()).toEqual(new Set([0, 1, 2]));
  });

  it('sets and clears the state and process of a workspace', () => {
    reg.insertWorkspace(workspace());
    reg.setWorkspaceState('0123abcd', 'running', { pid: 100, pidStart: 200 });
    expect(reg.findWorkspace('alpha')).toMatchObject({ state: 'running', pid: 100, pidStart: 200 });
    reg.setWorkspaceState('0123abcd', 'stopped', null);
    expect(reg.findWorkspace('alpha')).toMatchObject({ state: 'stopped', pid: null, pidStart: null });
  });

  it('moves the children of a deleted branch up to its parent: the middle of a chain of forks', () => {
    reg.insertWorkspace(workspace({ id: 'aaaaaaaa', name: 'main', netIndex: 1 }));
    reg.insertWorkspace(workspace({ id: 'bbbbbbbb', name: 'middle', netIndex: 2, parentId: 'aaaaaaaa', treeId: 'aaaaaaaa', isMain: false }));
    reg.insertWorkspace(workspace({ id: 'cccccccc', name: 'grandchild-1', netIndex: 3, parentId: 'bbbbbbbb', treeId: 'aaaaaaaa', isMain: false }));
    reg.insertWorkspace(workspace({ id: 'dddddddd', name: 'grandchild-2', netIndex: 4, parentId: 'bbbbbbbb', treeId: 'aaaaaaaa', isMain: false }));
    expect(reg.deleteWorkspace('bbbbbbbb').sort()).toEqual(['cccccccc', 'dddddddd']);
    expect(reg.findWorkspace('grandchild-1')?.parentId).toBe('aaaaaaaa');
    expect(reg.findWorkspace('grandchild-2')?.parentId).toBe('aaaaaaaa');
    expect(reg.deleteWorkspace('cccccccc')).toEqual([]);
  });

  it('deletes a workspace together with its ports, and frees its name and net index', () => {
    reg.insertWorkspace(workspace());
    reg.setPort('0123abcd', 5900, 40000);
    reg.deleteWorkspace('0123abcd');
    expect(reg.findWorkspace('alpha')).toBeNull();
    expect(reg.ports('0123abcd')).toEqual([]);
    expect(reg.usedNetIndexes().size).toBe(0);
    expect(() => reg.insertWorkspace(workspace({ id: '22222222' }))).not.toThrow();
  });

  it('rolls back everything in a failed transaction', () => {
    expect(() =>
      reg.transaction(() => {
        reg.insertWorkspace(workspace());
        reg.setPort('0123abcd', 5900, 40000);
        throw new Error('abort');
      }),
    ).toThrow('abort');
    expect(reg.listWorkspaces()).toEqual([]);
    expect(db.prepare('SELECT COUNT(*) FROM ports').pluck().get()).toBe(0);
  });
});

describe("a workspace's history", () => {
  const branch = (id: string, name: string, netIndex: number, parentId: string) =>
    workspace({ id, name, netIndex, parentId, treeId: 'aaaaaaaa', isMain: false });

  beforeEach(() => reg.insertWorkspace(workspace({ id: 'aaaaaaaa', name: 'app', netIndex: 0 })));

  it("never hands out a fork name a branch of the workspace had, even once it is gone; another workspace's names are its own", () => {
    reg.insertWorkspace(branch('bbbbbbbb', 'app-1', 1, 'aaaaaaaa'));
    reg.insertWorkspace(branch('cccccccc', 'app-2', 2, 'aaaaaaaa'));
    reg.deleteWorkspace('bbbbbbbb');
    reg.deleteWorkspace('cccccccc');
    expect(reg.freshBranchNames('aaaaaaaa', 'app', 2)).toEqual(['app-3', 'app-4']);
    expect(reg.nameUsedInTree('aaaaaaaa', 'app-1')).toBe(true);
    reg.insertWorkspace(workspace({ id: 'dddddddd', name: 'other', netIndex: 3 }));
    expect(reg.nameUsedInTree('dddddddd', 'app-1')).toBe(false);
    // A name that exists now, in any workspace, is skipped too.
    reg.insertWorkspace(workspace({ id: 'eeeeeeee', name: 'other-1', netIndex: 4 }));
    expect(reg.freshBranchNames('dddddddd', 'other', 1)).toEqual(['other-2']);
  });

  it("forgets a workspace's names with its last branch", () => {
    reg.insertWorkspace(branch('bbbbbbbb', 'app-1', 1, 'aaaaaaaa'));
    reg.deleteWorkspace('bbbbbbbb');
    reg.deleteWorkspace('aaaaaaaa');
    expect(reg.nameUsedInTree('aaaaaaaa', 'app-1')).toBe(false);
    expect(db.prepare('SELECT COUNT(*) FROM tree_names').pluck().get()).toBe(0);
  });

  it("keeps a branch's merges, newest last and bounded, and drops them with the branch", () => {
    reg.insertWorkspace(branch('bbbbbbbb', 'app-1', 1, 'aaaaaaaa'));
    for (let i = 0; i < 3; i++)
      reg.recordMerge({
        treeId: 'aaaaaaaa',
        targetId: 'aaaaaaaa',
        sources: [{ id: 'bbbbbbbb', name: 'app-1' }],
        versionId: `0000000${i}`,
        at: `2024-01-0${i + 1}T00:00:00Z`,
      });
    expect(reg.mergesInto('aaaaaaaa', 2)).toEqual([
      { sources: [{ id: 'bbbbbbbb', name: 'app-1' }], version: '00000001', at: '2024-01-02T00:00:00Z' },
      { sources: [{ id: 'bbbbbbbb', name: 'app-1' }], version: '00000002', at: '2024-01-03T00:00:00Z' },
    ]);
    expect(reg.mergesInto('bbbbbbbb', 20)).toEqual([]);
    // The source going changes nothing (its name is kept in the record); the target going drops them.
    reg.deleteWorkspace('bbbbbbbb');
    expect(reg.mergesInto('aaaaaaaa', 20)).toHaveLength(3);
    reg.insertWorkspace(branch('cccccccc', 'app-2', 2, 'aaaaaaaa'));
    reg.setMain('aaaaaaaa', 'cccccccc');
    reg.deleteWorkspace('aaaaaaaa');
    expect(db.prepare('SELECT COUNT(*) FROM merges').pluck().get()).toBe(0);
  });

  it('marks a retired main line, and clears the mark when it is the main line again', () => {
    reg.insertWorkspace(branch('bbbbbbbb', 'app-1', 1, 'aaaaaaaa'));
    reg.setMain('aaaaaaaa', 'bbbbbbbb');
    reg.setRetired('aaaaaaaa', '2024-02-01T00:00:00Z');
    expect(reg.findWorkspace('app')).toMatchObject({ isMain: false, retiredAt: '2024-02-01T00:00:00Z' });
    reg.setMain('aaaaaaaa', 'aaaaaaaa');
    expect(reg.findWorkspace('app')).toMatchObject({ isMain: true, retiredAt: null });
  });

  it('names the branches of workspaces made before it was kept', () => {
    db.close();
    for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    const old = registryBefore(file, 'CREATE TABLE tree_names');
    old
      .prepare(
        "INSERT INTO workspaces (id, name, image, state, hostname, machine_id, net_index, created_at, tree_id) VALUES ('aaaaaaaa', 'app', 'desktop', 'stopped', 'app', 'x', 0, 'now', 'aaaaaaaa')",
      )
      .run();
    old.close();
    db = openDb(file);
    reg = new Registry(db);
    expect(reg.nameUsedInTree('aaaaaaaa', 'app')).toBe(true);
    expect(reg.findWorkspace('app')?.retiredAt).toBeNull();
  });
});

describe('ports', () => {
  beforeEach(() => {
    reg.insertWorkspace(workspace());
    reg.insertWorkspace(workspace({ id: '11111111', name: 'beta', netIndex: 1 }));
  });

  it('upserts a lease per container port and lists them by container port', () => {
    reg.setPort('0123abcd', 5900, null);
    reg.setPort('0123abcd', 3000, 40000);
    reg.setPort('0123abcd', 5900, 40001);
    expect(reg.ports('0123abcd')).toEqual([
      { containerPort: 3000, hostPort: 40000 },
      { containerPort: 5900, hostPort: 40001 },
    ]);
    reg.setPort('0123abcd', 3000, null);
    expect(reg.ports('0123abcd')).toEqual([
      { containerPort: 3000, hostPort: null },
      { containerPort: 5900, hostPort: 40001 },
    ]);
  });

  it('keeps each workspace’s ports apart', () => {
    reg.setPort('0123abcd', 5900, 40000);
    reg.setPort('11111111', 5900, 40001);
    expect(reg.ports('11111111')).toEqual([{ containerPort: 5900, hostPort: 40001 }]);
  });

  it('never leases one host port twice, but allows many unleased ports', () => {
    reg.setPort('0123abcd', 5900, 40000);
    expect(() => reg.setPort('11111111', 5900, 40000)).toThrow(/UNIQUE/);
    reg.setPort('0123abcd', 3000, null);
    reg.setPort('11111111', 3000, null);
    expect(reg.ports('11111111')).toEqual([{ containerPort: 3000, hostPort: null }]);
  });

  it('refuses a port for a workspace that does not exist', () => {
    expect(() => reg.setPort('99999999', 5900, 40000)).toThrow(/FOREIGN KEY/);
  });

  it('loses the VNC leases of a registry from before desktop sockets, and keeps the rest', () => {
    const legacy = path.join(dir, 'legacy.db');
    const old = registryBefore(legacy, 'DELETE FROM ports WHERE container_port = 5900');
    // As the helper of then wrote it (today's insert names columns that came later).
    old
      .prepare(
        "INSERT INTO workspaces (id, name, image, state, hostname, machine_id, net_index, created_at, tree_id) VALUES ('0123abcd', 'alpha', 'desktop', 'creating', 'alpha', ?, 0, ?, '0123abcd')",
      )
      .run('f'.repeat(32), '2024-01-01T00:00:00.000Z');
    const oldReg = new Registry(old);
    oldReg.setPort('0123abcd', 5900, 40001);
    oldReg.setPort('0123abcd', 3000, 40000);
    old.close();
    const upgraded = openDb(legacy);
    try {
      expect(new Registry(upgraded).ports('0123abcd')).toEqual([{ containerPort: 3000, hostPort: 40000 }]);
    } finally {
      upgraded.close();
    }
  });
});

describe('host objects', () => {
  it('lists objects in the order they were recorded and filters by owner and kind', () => {
    reg.recordObject({ kind: 'subvolume', name: '/pool/ws/a', owner: 'aaaaaaaa' });
    reg.recordObject({ kind: 'netns', name: 'grove-t1-aaaaaaaa', owner: 'aaaaaaaa' });
    reg.recordObject({ kind: 'subvolume', name: '/pool/ws/b', owner: 'bbbbbbbb' });
    reg.recordObject({ kind: 'bundle', name: '/pool', owner: null });
    reg.recordObject({ kind: 'container', name: 'grove-t1-aaaaaaaa', owner: 'aaaaaaaa' });

    expect(reg.objects().map((o) => `${o.kind}:${o.name}`)).toEqual([
      'subvolume:/pool/ws/a',
      'netns:grove-t1-aaaaaaaa',
      'subvolume:/pool/ws/b',
      'bundle:/pool',
      'container:grove-t1-aaaaaaaa',
    ]);
    expect(reg.objects({ owner: 'aaaaaaaa' }).map((o) => o.kind)).toEqual(['subvolume', 'netns', 'container']);
    expect(reg.objects({ owner: null })).toEqual([{ kind: 'bundle', name: '/pool', owner: null }]);
    expect(reg.objects({ kind: 'subvolume' }).map((o) => o.owner)).toEqual(['aaaaaaaa', 'bbbbbbbb']);
    expect(reg.objects({ owner: 'bbbbbbbb', kind: 'netns' })).toEqual([]);
  });

  it('keys objects by kind and name: the same name may exist under two kinds, re-recording replaces', () => {
    reg.recordObject({ kind: 'netns', name: 'grove-t1-x', owner: 'aaaaaaaa' });
    reg.recordObject({ kind: 'container', name: 'grove-t1-x', owner: 'aaaaaaaa' });
    reg.recordObject({ kind: 'netns', name: 'grove-t1-x', owner: 'bbbbbbbb' });
    const all = reg.objects();
    expect(all).toHaveLength(2);
    expect(all).toContainEqual({ kind: 'netns', name: 'grove-t1-x', owner: 'bbbbbbbb' });
    expect(all).toContainEqual({ kind: 'container', name: 'grove-t1-x', owner: 'aaaaaaaa' });
  });

  it('forgets exactly the named object of that kind', () => {
    reg.recordObject({ kind: 'netns', name: 'n', owner: 'aaaaaaaa' });
    reg.recordObject({ kind: 'veth', name: 'n', owner: 'aaaaaaaa' });
    reg.forgetObject('netns', 'n');
    expect(reg.objects()).toEqual([{ kind: 'veth', name: 'n', owner: 'aaaaaaaa' }]);
    // Forgetting what is not there is not an error.
    expect(() => reg.forgetObject('netns', 'n')).not.toThrow();
  });

  it('finds orphans (owners the registry no longer knows) in creation order after a reopen', () => {
    reg.insertWorkspace(workspace({ id: 'aaaaaaaa', name: 'kept' }));
    reg.recordObject({ kind: 'subvolume', name: '/pool/ws/gone', owner: 'deadbeef' });
    reg.recordObject({ kind: 'subvolume', name: '/pool/ws/kept', owner: 'aaaaaaaa' });
    reg.recordObject({ kind: 'netns', name: 'grove-t1-deadbeef', owner: 'deadbeef' });
    reg.recordObject({ kind: 'bundle', name: '/pool', owner: null });
    reg.recordObject({ kind: 'container', name: 'grove-t1-deadbeef', owner: 'deadbeef' });
    reopen();

    // The same query HostLedger.orphans makes.
    const known = new Set(reg.listWorkspaces().map((w) => w.id));
    const orphans = reg.objects().filter((o) => o.owner !== null && !known.has(o.owner));
    expect(orphans.map((o) => `${o.kind}:${o.name}`)).toEqual(['subvolume:/pool/ws/gone', 'netns:grove-t1-deadbeef', 'container:grove-t1-deadbeef']);
    // HostLedger.removeOwned removes newest first.
    expect(
      reg
        .objects({ owner: 'deadbeef' })
        .reverse()
        .map((o) => o.kind),
    ).toEqual(['container', 'netns', 'subvolume']);
  });
});

describe('audit', () => {
  it('appends entries with increasing seq, a timestamp and the full identity, and reads them back by target', () => {
    const before = Date.now();
    const first = reg.audit({ actor: person, action: 'workspace.create', target: 'alpha', outcome: 'ok', detail: null });
    reg.audit({ actor: agent, action: 'workspace.delete', target: 'beta', outcome: 'error', detail: 'E_FORBIDDEN' });
    reg.audit({ actor: null, action: 'branch.promote', target: 'alpha', outcome: 'ok', detail: 'approved by person root' });
    const all = reg.auditLog(null, 10);
    expect(all.map((e) => e.action)).toEqual(['workspace.create', 'workspace.delete', 'branch.promote']);
    expect(all[1]!.seq).toBeGreaterThan(all[0]!.seq);
    expect(all[0]).toEqual(first);
    expect(all[1]).toMatchObject({ actor: agent, target: 'beta', outcome: 'error', detail: 'E_FORBIDDEN' });
    expect(all[2]!.actor).toBeNull();
    expect(reg.auditLog(['alpha'], 10).map((e) => e.action)).toEqual(['workspace.create', 'branch.promote']);
    expect(reg.auditLog(null, 1).map((e) => e.action)).toEqual(['branch.promote']);
    for (const e of all) {
      expect(Date.parse(e.at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(e.at)).toBeLessThanOrEqual(Date.now() + 1000);
    }
    // The summary column keeps role:user for people reading the table by hand.
    expect(db.prepare('SELECT actor FROM audit ORDER BY seq').pluck().all()).toEqual(['person:root', 'agent:alice', 'helper']);
  });

  it('keeps only the newest AUDIT_ROWS_KEPT entries when pruned', () => {
    const insert = db.prepare("INSERT INTO audit (at, actor, action, target, outcome) VALUES ('x', 'helper', 'a', NULL, 'ok')");
    db.transaction(() => {
      for (let i = 0; i < AUDIT_ROWS_KEPT + 5; i++) insert.run();
    })();
    reg.pruneAudit();
    expect(db.prepare('SELECT COUNT(*) FROM audit').pluck().get()).toBe(AUDIT_ROWS_KEPT);
    expect(db.prepare('SELECT MIN(seq) FROM audit').pluck().get()).toBe(6);
  });
});

describe('grants', () => {
  it('keeps one grant per workspace and kind, and forgets it when revoked', () => {
    const g = reg.putGrant({ id: 'g00000001', treeId: '0123abcd', kind: 'branch.discard', grantedBy: person, at: '2024-01-01T00:00:00.000Z' });
    const again = reg.putGrant({ id: 'g00000002', treeId: '0123abcd', kind: 'branch.discard', grantedBy: person, at: '2024-01-02T00:00:00.000Z' });
    expect(again).toEqual(g);
    reg.putGrant({ id: 'g00000003', treeId: '0123abcd', kind: 'branch.promote', grantedBy: person, at: '2024-01-03T00:00:00.000Z' });
    reg.putGrant({ id: 'g00000004', treeId: '99999999', kind: 'branch.discard', grantedBy: person, at: '2024-01-04T00:00:00.000Z' });
    expect(reg.grants('0123abcd').map((x) => x.kind)).toEqual(['branch.discard', 'branch.promote']);
    expect(reg.findGrant('0123abcd', 'branch.discard')?.grantedBy).toEqual(person);
    expect(reg.findGrant('0123abcd', 'workspace.stop')).toBeNull();
    reg.deleteGrant('g00000001');
    expect(reg.findGrant('0123abcd', 'branch.discard')).toBeNull();
    expect(reg.grants().map((x) => x.id)).toEqual(['g00000003', 'g00000004']);
  });
});

describe('limits', () => {
  it("are the defaults until set, and a fork starts with its source's", () => {
    reg.insertWorkspace(workspace());
    expect(reg.limits('0123abcd')).toBeNull();
    const limits = { memoryBytes: 3 * 2 ** 30, pids: 512, cpuWeight: 50, diskBytes: 64 * 2 ** 20 };
    reg.setLimits('0123abcd', limits);
    reg.insertWorkspace(workspace({ id: '0123abce', name: 'child', parentId: '0123abcd', treeId: '0123abcd', isMain: false, netIndex: 1 }));
    expect(reg.limits('0123abce')).toEqual(limits);
    reg.setLimits('0123abce', { ...limits, pids: 100, diskBytes: 2 ** 30 });
    expect(reg.limits('0123abcd')).toEqual(limits);
    expect(reg.limits('0123abce')).toEqual({ ...limits, pids: 100, diskBytes: 2 ** 30 });
  });

  it('give a branch limited before disk limits the default disk limit, and its forks too', () => {
    const legacy = path.join(dir, 'legacy-limits.db');
    const old = registryBefore(legacy, 'ADD COLUMN disk_bytes');
    old
      .prepare(
        "INSERT INTO workspaces (id, name, image, state, hostname, machine_id, net_index, created_at, tree_id) VALUES ('0123abcd', 'alpha', 'desktop', 'stopped', 'alpha', ?, 0, ?, '0123abcd')",
      )
      .run('f'.repeat(32), '2024-01-01T00:00:00.000Z');
    old.prepare("INSERT INTO limits (workspace_id, memory_bytes, pids, cpu_weight) VALUES ('0123abcd', ?, 512, 50)").run(3 * 2 ** 30);
    old.close();
    const upgradedDb = openDb(legacy);
    const upgraded = new Registry(upgradedDb);
    try {
      expect(upgraded.limits('0123abcd')).toEqual({ memoryBytes: 3 * 2 ** 30, pids: 512, cpuWeight: 50, diskBytes: DEFAULT_LIMITS.diskBytes });
      upgraded.insertWorkspace(workspace({ id: '0123abce', name: 'child', parentId: '0123abcd', treeId: '0123abcd', isMain: false, netIndex: 1 }));
      expect(upgraded.limits('0123abce')?.diskBytes).toBe(DEFAULT_LIMITS.diskBytes);
    } finally {
      upgradedDb.close();
    }
  });
});

describe('who made a branch', () => {
  it('is kept with the branch', () => {
    reg.insertWorkspace(workspace({ madeBy: { role: 'agent', uid: 1001, user: 'alice' } }));
    reopen();
    expect(reg.findWorkspace('alpha')?.madeBy).toEqual({ role: 'agent', uid: 1001, user: 'alice' });
  });
});

describe('fork history', () => {
  const timings = (total: number) => ({ prepare: 1, dump: 2, sourceFrozen: 1.5, thaw: 3, restore: 4, expose: 5, firstFrame: 4.5, total });

  it('keeps each fork with its source name, newest first, up to the limit, after the source is gone and across reopening', () => {
    reg.insertWorkspace(workspace());
    for (let i = 1; i <= 3; i++) reg.recordFork({ fork: `fork-0000000${i}`, source: { id: '0123abcd', name: 'alpha' }, copies: i, timings: timings(i * 100) });
    reg.deleteWorkspace('0123abcd');
    reopen();
    const forks = reg.recentForks(2);
    expect(forks.map((f) => f.fork)).toEqual(['fork-00000003', 'fork-00000002']);
    expect(forks[0]).toMatchObject({ source: { id: '0123abcd', name: 'alpha' }, copies: 3, timings: timings(300) });
    expect(Date.parse(forks[0]!.at)).toBeGreaterThan(Date.now() - 60_000);
  });
});
