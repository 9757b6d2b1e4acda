import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDb, type Db } from '../../src/registry/db.js';
import { EGRESS_ROWS_PER_BRANCH, Registry, type WorkspaceRecord } from '../../src/registry/registry.js';

let dir: string;
let db: Db;
let reg: Registry;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'grove-egress-'));
  db = openDb(path.join(dir, 'registry.db'));
  reg = new Registry(db);
});

afterEach(() => {
  if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

function branch(id: string, parentId: string | null, netIndex: number): WorkspaceRecord {
  return {
    id,
    name: `b-${id}`,
    image: 'desktop',
    state: 'running',
    hostname: `b-${id}`,
    machineId: '0'.repeat(32),
    netIndex,
    createdAt: '2024-01-01T00:00:00.000Z',
    pid: null,
    pidStart: null,
    parentId,
    madeBy: null,
    claimedBy: null,
    treeId: 'aaaaaaaa',
    versionId: null,
    isMain: parentId === null,
    exitReason: null,
    sensitive: false,
    retiredAt: null,
  };
}

describe('egress policy in the registry', () => {
  it('defaults to deny with nothing allowed', () => {
    reg.insertWorkspace(branch('aaaaaaaa', null, 0));
    expect(reg.egressPolicy('aaaaaaaa')).toEqual({ mode: 'deny', allow: [], holdMutating: false });
  });

  it("gives a child a copy of its parent's policy when it is recorded; each changes alone afterwards", () => {
    reg.insertWorkspace(branch('aaaaaaaa', null, 0));
    const policy = { mode: 'gate' as const, allow: [{ host: 'outside.test', port: 8080 }], holdMutating: true };
    reg.setEgressPolicy('aaaaaaaa', policy);
    reg.insertWorkspace(branch('bbbbbbbb', 'aaaaaaaa', 1));
    expect(reg.egressPolicy('bbbbbbbb')).toEqual(policy);
    reg.setEgressPolicy('bbbbbbbb', { mode: 'deny', allow: [], holdMutating: false });
    expect(reg.egressPolicy('aaaaaaaa')).toEqual(policy);
    reg.setEgressPolicy('aaaaaaaa', { ...policy, mode: 'allow' });
    expect(reg.egressPolicy('bbbbbbbb').mode).toBe('deny');
    // A grandchild inherits from its own parent.
    reg.insertWorkspace(branch('cccccccc', 'bbbbbbbb', 2));
    expect(reg.egressPolicy('cccccccc').mode).toBe('deny');
    // Copying explicitly (inheritPolicy) is idempotent with the trigger.
    reg.copyEgressPolicy('aaaaaaaa', 'cccccccc');
    expect(reg.egressPolicy('cccccccc').mode).toBe('allow');
  });

  it('drops the policy with its branch but keeps the log', () => {
    reg.insertWorkspace(branch('aaaaaaaa', null, 0));
    reg.setEgressPolicy('aaaaaaaa', { mode: 'allow', allow: [{ host: 'x.test' }], holdMutating: false });
    const entry = {
      at: '2024-01-01T00:00:00.000Z',
      workspace: 'aaaaaaaa',
      workspaceName: 'b-aaaaaaaa',
      request: null,
      host: 'x.test',
      port: 80,
      method: 'GET',
      url: 'http://x.test/',
      verdict: 'allowed' as const,
      decidedBy: 'policy',
      detail: null,
    };
    reg.logEgress(entry);
    reg.logEgress({ ...entry, workspace: 'ffffffff', verdict: 'denied' });
    reg.deleteWorkspace('aaaaaaaa');
    expect(reg.egressPolicy('aaaaaaaa').mode).toBe('deny');
    expect(reg.egressLog('aaaaaaaa', 10)).toEqual([{ ...entry, seq: 1, count: 1 }]);
    expect(reg.egressLog(null, 10).map((e) => e.verdict)).toEqual(['allowed', 'denied']);
    expect(reg.egressLog(null, 1).map((e) => e.verdict)).toEqual(['denied']);
  });
});

describe('egress log bounds', () => {
  const denial = (at: string, over: Partial<{ host: string; detail: string | null; verdict: 'denied' | 'allowed' }> = {}) => ({
    at,
    workspace: 'bbbbbbbb',
    workspaceName: 'looper',
    request: null,
    host: over.host ?? 'blocked.test',
    port: 443,
    method: 'CONNECT',
    url: null,
    verdict: over.verdict ?? ('denied' as const),
    decidedBy: 'policy',
    detail: over.detail ?? "blocked.test:443 is not on looper's allow list",
  });

  it('counts identical denials within a minute on one row, and starts a new row after it', () => {
    for (let i = 0; i < 3000; i++) reg.logEgress(denial(new Date(Date.UTC(2026, 0, 1, 0, 0, i % 50)).toISOString()));
    reg.logEgress(denial('2026-01-01T00:00:30.000Z', { host: 'other.test' }));
    reg.logEgress(denial('2026-01-01T00:02:00.000Z'));
    reg.logEgress(denial('2026-01-01T00:02:01.000Z', { verdict: 'allowed' }));
    reg.logEgress(denial('2026-01-01T00:02:02.000Z', { verdict: 'allowed' }));
    const log = reg.egressLog('bbbbbbbb', 100);
    expect(log.map((e) => [e.host, e.verdict, e.count])).toEqual([
      ['blocked.test', 'denied', 3000],
      ['other.test', 'denied', 1],
      ['blocked.test', 'denied', 1],
      ['blocked.test', 'allowed', 1],
      ['blocked.test', 'allowed', 1],
    ]);
  });

  it('writes the log without waiting for the disk, and leaves every other write waiting for it', () => {
    const FULL = 2;
    expect(db.pragma('synchronous', { simple: true })).toBe(FULL);
    reg.logEgress(denial('2026-01-01T00:00:00.000Z'));
    expect(db.pragma('synchronous', { simple: true })).toBe(FULL);
  });

  it("keeps a branch's newest rows only (pruned every hundred rows)", () => {
    const small = new Registry(db, 50);
    for (let i = 0; i < 300; i++) small.logEgress(denial('2026-01-01T00:00:00.000Z', { verdict: 'allowed', host: `h${i}.test` }));
    const log = small.egressLog('bbbbbbbb', 1000);
    expect(log).toHaveLength(50); // pruned at the 300th
    expect(log[0]!.host).toBe('h250.test');
    expect(EGRESS_ROWS_PER_BRANCH).toBe(10_000);
  });
});
