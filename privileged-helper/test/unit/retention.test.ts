// Retention against a real SQLite registry: the audit log kept to its rows and
// days (at start and on every entry), queried by actor, branch and time; a
// workspace's versions orphaned with its last branch; and the rules and
// settings around them.
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/audit/audit-log.js';
import { versionsFate } from '../../src/auth/authority.js';
import { auditRetention } from '../../src/config.js';
import type { AuditEntry } from '../../src/protocol/approvals.js';
import type { Actor } from '../../src/protocol/identity.js';
import { methods } from '../../src/protocol/methods.js';
import { MIGRATIONS, openDb, type Db } from '../../src/registry/db.js';
import { closeTempRegistry, openTempRegistry, workspaceRecord, type TempRegistry } from './registry-fixture.js';
import { AUDIT_DAYS_KEPT, AUDIT_ROWS_KEPT, Registry, type WorkspaceRecord } from '../../src/registry/registry.js';

let t: TempRegistry;
let db: Db;
let reg: Registry;

beforeEach(() => {
  t = openTempRegistry('grove-retention-');
  ({ db, reg } = t);
});

afterEach(() => closeTempRegistry(t));

const person: Actor = { role: 'person', uid: 0, user: 'root', pid: 100, process: 'node', client: 'cli:grove-cli' };
const alice: Actor = { role: 'agent', uid: 1001, user: 'alice', pid: 200, process: 'node', client: 'cli:grove-cli' };
const bob: Actor = { role: 'agent', uid: 1002, user: 'bob', pid: 300, process: 'node', client: 'mcp:grove' };

const DAY_MS = 86_400_000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY_MS).toISOString();

/** Writes an entry at a given time, as if it had been recorded then. */
function entryAt(at: string, actor: Actor | null, action = 'workspace.stop', target: string | null = 'alpha'): void {
  db.prepare('INSERT INTO audit (at, actor, action, target, outcome, detail, actor_json) VALUES (?, ?, ?, ?, ?, NULL, ?)').run(
    at,
    actor ? `${actor.role}:${actor.user}` : 'helper',
    action,
    target,
    'ok',
    actor ? JSON.stringify(actor) : null,
  );
}

const count = () => db.prepare('SELECT COUNT(*) FROM audit').pluck().get() as number;
const actions = (entries: AuditEntry[]) => entries.map((e) => e.action);

function auditLog(retention = { maxRows: 1000, maxDays: 30 }, published: AuditEntry[] = [], logged: string[] = []): AuditLog {
  return new AuditLog(
    reg,
    (e) => published.push(e),
    (m) => logged.push(m),
    retention,
  );
}

function workspace(id: string, name: string, over: Partial<WorkspaceRecord> = {}): WorkspaceRecord {
  return workspaceRecord({ id, name, state: 'running', netIndex: Number.parseInt(id, 16) % 1000, ...over });
}

describe('audit retention', () => {
  it('keeps the newest maxRows entries and none older than maxDays, and says how many went', () => {
    entryAt(daysAgo(40), person, 'old-1');
    entryAt(daysAgo(31), person, 'old-2');
    for (let i = 0; i < 6; i++) entryAt(daysAgo(2), person, `recent-${i}`);
    expect(reg.pruneAudit({ maxRows: 5, maxDays: 30 })).toBe(3);
    expect(actions(reg.auditLog(null, 100))).toEqual(['recent-1', 'recent-2', 'recent-3', 'recent-4', 'recent-5']);
    expect(reg.pruneAudit({ maxRows: 5, maxDays: 30 })).toBe(0);
  });

  it('brings the log within its bounds when opened (at the helper’s start), and logs what it dropped', () => {
    for (let i = 0; i < 4; i++) entryAt(daysAgo(10), person, `aged-${i}`);
    for (let i = 0; i < 12; i++) entryAt(daysAgo(1), person, `fresh-${i}`);
    const logged: string[] = [];
    auditLog({ maxRows: 10, maxDays: 7 }, [], logged);
    expect(count()).toBe(10);
    expect(actions(reg.auditLog(null, 100))[0]).toBe('fresh-2');
    expect(logged).toEqual(['audit: dropped 6 entries beyond 10 rows or 7 days']);
  });

  it('prunes with every entry it records, in the same transaction, and publishes what it stored', () => {
    const published: AuditEntry[] = [];
    const log = auditLog({ maxRows: 3, maxDays: 30 }, published);
    entryAt(daysAgo(45), alice, 'ancient');
    for (let i = 0; i < 5; i++) log.record(person, `call-${i}`, 'alpha', 'ok', null);
    expect(actions(reg.auditLog(null, 100))).toEqual(['call-2', 'call-3', 'call-4']);
    expect(actions(published)).toEqual(['call-0', 'call-1', 'call-2', 'call-3', 'call-4']);
    expect(published[4]).toEqual(reg.auditLog(null, 1)[0]);
  });

  it('reads its bounds from GROVE_AUDIT_MAX_ROWS and GROVE_AUDIT_MAX_DAYS, with defaults, and refuses nonsense', () => {
    expect(auditRetention({})).toEqual({ maxRows: AUDIT_ROWS_KEPT, maxDays: AUDIT_DAYS_KEPT });
    expect(auditRetention({ GROVE_AUDIT_MAX_ROWS: '5000', GROVE_AUDIT_MAX_DAYS: '30' })).toEqual({ maxRows: 5000, maxDays: 30 });
    for (const rows of ['', 'lots', '99', '1.5', '-1']) expect(() => auditRetention({ GROVE_AUDIT_MAX_ROWS: rows })).toThrow(/GROVE_AUDIT_MAX_ROWS/);
    for (const days of ['0', '7d', '36501']) expect(() => auditRetention({ GROVE_AUDIT_MAX_DAYS: days })).toThrow(/GROVE_AUDIT_MAX_DAYS/);
  });
});

describe('audit queries', () => {
  beforeEach(() => {
    entryAt('2026-01-01T08:00:00.000Z', person, 'workspace.create', 'alpha');
    entryAt('2026-01-01T09:00:00.000Z', alice, 'branch.fork', 'alpha');
    entryAt('2026-01-01T10:00:00.000Z', bob, 'exec.run', 'alpha-1');
    entryAt('2026-01-01T11:00:00.000Z', alice, 'desktop.click', 'alpha-1');
    entryAt('2026-01-01T12:00:00.000Z', null, 'branch.promote', 'alpha-1');
    entryAt('2026-01-01T13:00:00.000Z', person, 'grant.set', '0123abcd');
  });

  it('filters by role, user and uid as the kernel identified the caller', () => {
    expect(actions(reg.auditLog(null, 100, { role: 'agent' }))).toEqual(['branch.fork', 'exec.run', 'desktop.click']);
    expect(actions(reg.auditLog(null, 100, { role: 'person' }))).toEqual(['workspace.create', 'grant.set']);
    expect(actions(reg.auditLog(null, 100, { user: 'alice' }))).toEqual(['branch.fork', 'desktop.click']);
    expect(actions(reg.auditLog(null, 100, { uid: 1002 }))).toEqual(['exec.run']);
    expect(actions(reg.auditLog(null, 100, { user: 'alice', role: 'person' }))).toEqual([]);
  });

  it('filters by time (since inclusive, until exclusive) and by branch, all filters at once, newest limit last', () => {
    const range = { since: '2026-01-01T09:00:00.000Z', until: '2026-01-01T12:00:00.000Z' };
    expect(actions(reg.auditLog(null, 100, range))).toEqual(['branch.fork', 'exec.run', 'desktop.click']);
    expect(actions(reg.auditLog(['alpha-1'], 100, { ...range, role: 'agent', user: 'alice' }))).toEqual(['desktop.click']);
    expect(actions(reg.auditLog(null, 2, { since: range.since }))).toEqual(['branch.promote', 'grant.set']);
  });

  it('takes times with an offset, finds a removed branch by the id or name its calls used, and refuses a name nothing ever named', () => {
    const log = auditLog({ maxRows: 1000, maxDays: 36_500 });
    // 09:30Z to 12:00Z
    expect(actions(log.list(undefined, 100, { since: '2026-01-01T10:30:00+01:00', until: '2026-01-01T14:00:00+02:00' }))).toEqual([
      'exec.run',
      'desktop.click',
    ]);
    expect(actions(log.list('alpha-1', 100, { role: 'agent' }))).toEqual(['exec.run', 'desktop.click']);
    expect(() => log.list('nobody', 100)).toThrow(/no workspace 'nobody', and no audit entry names it/);
  });

  it('names a live branch by both its id and its name', () => {
    reg.insertWorkspace(workspace('0123abcd', 'alpha'));
    const log = auditLog({ maxRows: 1000, maxDays: 36_500 });
    expect(actions(log.list('alpha', 100))).toEqual(['workspace.create', 'branch.fork', 'grant.set']);
  });

  it('refuses bad filters at the contract: since after until, an unknown role, a negative uid, an unparsable time', () => {
    const params = methods['audit.list'].params;
    expect(params.safeParse({ since: '2026-01-02T00:00:00Z', until: '2026-01-01T00:00:00Z' }).error?.issues[0]?.message).toBe('since must be before until');
    for (const bad of [{ role: 'helper' }, { uid: -1 }, { since: 'yesterday' }, { limit: 10_001 }, { actor: 'alice' }]) {
      expect(params.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    expect(params.safeParse({ user: 'alice', role: 'agent', since: '2026-01-01T00:00:00+01:00', limit: 10 }).success).toBe(true);
  });
});

describe('versions of a deleted workspace', () => {
  function version(id: string, branchId: string, treeId: string): void {
    reg.insertVersion({ id, branchId, treeId, label: null, createdAt: '2026-01-01T00:00:00.000Z', saved: true });
  }

  it('stay with the workspace while it has branches and become orphans, named after its last branch, with it', () => {
    reg.insertWorkspace(workspace('aaaaaaa1', 'one'));
    reg.insertWorkspace(workspace('aaaaaaa2', 'one-1', { parentId: 'aaaaaaa1', treeId: 'aaaaaaa1', isMain: false }));
    reg.insertWorkspace(workspace('bbbbbbb1', 'two'));
    version('cccccc01', 'aaaaaaa1', 'aaaaaaa1');
    version('cccccc02', 'aaaaaaa2', 'aaaaaaa1');
    version('cccccc03', 'bbbbbbb1', 'bbbbbbb1');
    reg.deleteWorkspace('aaaaaaa1');
    expect(reg.listVersions().map((v) => v.orphanOf)).toEqual([null, null, null]);
    reg.deleteWorkspace('aaaaaaa2');
    expect(reg.listVersions('aaaaaaa1').map((v) => [v.id, v.orphanOf])).toEqual([
      ['cccccc01', 'one-1'],
      ['cccccc02', 'one-1'],
    ]);
    expect(reg.findVersion('cccccc03')?.orphanOf).toBeNull();
  });

  it('left behind before retention existed are marked orphans (by their tree id) when the registry is migrated', () => {
    db.close();
    const old = path.join(t.dir, 'old.db');
    const legacy = new Database(old);
    const retention = MIGRATIONS.findIndex((sql) => sql.includes('orphan_of'));
    MIGRATIONS.slice(0, retention).forEach((sql) => legacy.exec(sql));
    legacy.pragma(`user_version = ${retention}`);
    legacy.prepare("INSERT INTO versions (id, branch_id, tree_id, label, created_at) VALUES ('dddddd01', 'eeeeeee1', 'eeeeeee1', NULL, 't')").run();
    legacy.close();
    db = openDb(old);
    reg = new Registry(db);
    expect(reg.findVersion('dddddd01')?.orphanOf).toBe('eeeeeee1');
  });

  it('are deleted with the last branch by a person unless kept; an agent’s deletion keeps them, and it may not ask otherwise', () => {
    expect(versionsFate(person, undefined)).toBe('delete');
    expect(versionsFate(person, 'keep')).toBe('keep');
    expect(versionsFate(alice, undefined)).toBe('keep');
    expect(versionsFate(alice, 'keep')).toBe('keep');
    expect(() => versionsFate(alice, 'delete')).toThrow(/only a person may delete versions/);
    expect(methods['workspace.delete'].params.safeParse({ workspace: 'one', versions: 'archive' }).success).toBe(false);
  });
});
