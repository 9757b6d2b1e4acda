// A real registry in a temporary file for unit tests, and a branch record to put in it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openDb, type Db } from '../../src/registry/db.js';
import { Registry, type WorkspaceRecord } from '../../src/registry/registry.js';

export interface TempRegistry {
  dir: string;
  file: string;
  db: Db;
  reg: Registry;
}

export function openTempRegistry(prefix: string): TempRegistry {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const file = path.join(dir, 'registry.db');
  const db = openDb(file);
  return { dir, file, db, reg: new Registry(db) };
}

export function closeTempRegistry(t: TempRegistry): void {
  if (t.db.open) t.db.close();
  rmSync(t.dir, { recursive: true, force: true });
}

/** A main-line branch record (its own tree), with what `over` changes. */
export function workspaceRecord(over: Partial<WorkspaceRecord> = {}): WorkspaceRecord {
  const id = over.id ?? '0123abcd';
  const name = over.name ?? 'alpha';
  return {
    id,
    name,
    image: 'desktop',
    state: 'creating',
    hostname: name,
    machineId: 'f'.repeat(32),
    netIndex: 0,
    createdAt: '2024-01-01T00:00:00.000Z',
    pid: null,
    pidStart: null,
    parentId: null,
    treeId: id,
    versionId: null,
    isMain: true,
    exitReason: null,
    sensitive: false,
    madeBy: { role: 'person', uid: 0, user: 'root' },
    claimedBy: null,
    retiredAt: null,
    ...over,
  };
}
