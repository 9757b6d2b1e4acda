// A helper killed at any stage of an operation: the next start ends what the
// dead helper's CRIU runs were doing, adopts what runs, and finishes or undoes
// the operation, and the branch works as before: a fork and a checkpoint of it
// succeed. Each case kills the helper at a named stage (the request's faultAt
// with crash: the helper SIGKILLs itself there), not after a guessed delay.
import { readdir, readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { helperAlive, startHelper } from './helper-process.js';
import { commandsOf, processesInTree } from './host-processes.js';
import { connect, createWorkspace, instance, sh, track, waitFor } from './support.js';

let c: HelperClient;

beforeAll(async () => {
  c = await connect('crash');
});

afterAll(() => c?.close());

/**
 * Sends a request that kills the helper at its faultAt stage, waits for it to
 * die, and starts a new one. (A checkpoint answers once its instant is fixed
 * and is saved after: killed in the save, it has answered already.)
 */
async function crashDuring(
  method: 'branch.fork' | 'branch.checkpoint' | 'branch.rollback' | 'branch.promote' | 'workspace.delete',
  params: Record<string, unknown>,
): Promise<void> {
  const t = instance();
  const pid = Number(await readFile(t.pidFile, 'utf8'));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one call for five methods' params
  await c.request(method, { ...params, crash: true } as any).catch(() => undefined);
  await waitFor('the helper to die', async () => !helperAlive(pid), 60_000);
  c.close();
  await startHelper(t);
  c = await connect('crash');
}

/** What a dead helper must not leave: a CRIU run of this instance, or a stopped task in the branch's tree (a dump's twins). */
async function nothingLeftHolding(ws: Workspace): Promise<void> {
  const t = instance();
  expect((await commandsOf(t.runDir)).filter((p) => p.argv[1] === 'dump' || p.argv[1] === 'restore')).toEqual([]);
  const now = await c.request('workspace.get', { workspace: ws.id });
  expect(now.state).toBe('running');
  expect((await processesInTree(now.pid!)).filter((p) => p.state === 't' || p.state === 'T')).toEqual([]);
}

/** The branch works as before: it runs commands, and forks and checkpoints (both then removed). */
async function worksAsBefore(ws: Workspace): Promise<void> {
  await nothingLeftHolding(ws);
  expect(await sh(c, ws, 'echo alive')).toBe('alive\n');
  const fork = await c.request('branch.fork', { workspace: ws.id, copies: 1 });
  const child = await track(fork.children[0]!);
  expect(await sh(c, child, 'echo child')).toBe('child\n');
  await c.request('workspace.delete', { workspace: child.id });
  const v = await c.request('branch.checkpoint', { workspace: ws.id, label: 'after the crash' });
  await waitFor(
    'the checkpoint to be saved',
    async () => (await c.request('version.list', { workspace: ws.id })).some((x) => x.id === v.id && x.saved),
    60_000,
  );
  await c.request('version.delete', { version: v.id });
}

/** Branches of the tree, by state: none is left half made ('creating') or broken ('failed'). */
async function treeStates(treeId: string): Promise<string[]> {
  return (await c.request('workspace.list', {})).filter((w) => w.tree === treeId).map((w) => w.state);
}

describe('a helper killed in a fork or a checkpoint', () => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await createWorkspace(c, 'crash-source');
  });

  afterAll(async () => {
    for (const w of (await c.request('workspace.list', {})).filter((x) => x.tree === ws.tree))
      await c.request('workspace.delete', { workspace: w.id, versions: 'delete' }).catch(() => undefined);
  });

  it.each(['prepare', 'freeze', 'dump', 'thaw', 'restore', 'expose', 'commit'] as const)(
    'leaves the source as it was when killed in a fork at %s',
    async (stage) => {
      await crashDuring('branch.fork', { workspace: ws.id, copies: 2, faultAt: stage });
      expect((await c.request('workspace.get', { workspace: ws.id })).pid).toBe(ws.pid); // the same processes, never restarted
      expect((await treeStates(ws.tree)).filter((s) => s !== 'running')).toEqual([]);
      await worksAsBefore(ws);
      // Children that were up when it died are adopted, each a branch of its own.
      for (const w of (await c.request('workspace.list', {})).filter((x) => x.tree === ws.tree && x.id !== ws.id)) {
        await track(w);
        expect(await sh(c, w, 'echo adopted')).toBe('adopted\n');
        await c.request('workspace.delete', { workspace: w.id });
      }
    },
  );

  it.each(['freeze', 'dump', 'save'] as const)('drops the checkpoint and leaves the branch as it was when killed in it at %s', async (stage) => {
    await crashDuring('branch.checkpoint', { workspace: ws.id, label: 'killed', faultAt: stage });
    expect((await c.request('workspace.get', { workspace: ws.id })).pid).toBe(ws.pid);
    expect((await c.request('version.list', { workspace: ws.id })).filter((v) => v.label === 'killed')).toEqual([]);
    await worksAsBefore(ws);
  });
});

describe('a helper killed in a fork from a version', () => {
  let ws: Workspace;
  let versionId: string;

  beforeAll(async () => {
    ws = await createWorkspace(c, 'crash-version-source');
    versionId = (await c.request('branch.checkpoint', { workspace: ws.id, label: 'forked from' })).id;
    await waitFor(
      'the version to be saved',
      async () => (await c.request('version.list', { workspace: ws.id })).some((v) => v.id === versionId && v.saved),
      60_000,
    );
  });

  afterAll(async () => {
    for (const w of (await c.request('workspace.list', {})).filter((x) => x.tree === ws.tree))
      await c.request('workspace.delete', { workspace: w.id, versions: 'delete' }).catch(() => undefined);
  });

  it.each(['prepare', 'restore', 'expose', 'commit'] as const)('leaves the source and the version as they were when killed at %s', async (stage) => {
    const t = instance();
    const images = `${t.stateDir}/pool/versions/${versionId}/images`;
    const imagesBefore = (await readdir(images)).sort();
    const points = async () => (await readdir(`${t.stateDir}/pool/workspaces`)).filter((f) => f.startsWith('.fork-point-')).sort();
    const pointsBefore = await points();
    await crashDuring('branch.fork', { workspace: ws.id, copies: 2, version: versionId, faultAt: stage });
    expect((await c.request('workspace.get', { workspace: ws.id })).pid).toBe(ws.pid);
    expect((await treeStates(ws.tree)).filter((s) => s !== 'running')).toEqual([]);
    // Neither CRIU's work directories in the version's images nor the fork's uncommitted fork point are left.
    expect((await readdir(images)).sort()).toEqual(imagesBefore);
    expect(await points()).toEqual(pointsBefore);
    expect((await c.request('version.list', { workspace: ws.id })).find((v) => v.id === versionId)).toMatchObject({ saved: true });
    for (const w of (await c.request('workspace.list', {})).filter((x) => x.tree === ws.tree && x.id !== ws.id)) {
      await track(w);
      expect(await sh(c, w, 'echo adopted')).toBe('adopted\n');
      await c.request('workspace.delete', { workspace: w.id });
    }
    await worksAsBefore(ws);
  });
});

describe('a helper killed in a rollback', () => {
  let ws: Workspace;
  let versionId: string;
  const marker = async () => (await sh(c, ws, 'cat /root/marker')).trim();

  beforeAll(async () => {
    ws = await createWorkspace(c, 'crash-rollback');
    await sh(c, ws, 'echo v1 > /root/marker');
    versionId = (await c.request('branch.checkpoint', { workspace: ws.id, label: 'v1' })).id;
    await waitFor('v1 to be saved', async () => (await c.request('version.list', { workspace: ws.id }))[0]?.saved === true, 60_000);
  });

  afterAll(async () => {
    await c.request('workspace.delete', { workspace: ws.id, versions: 'delete' }).catch(() => undefined);
  });

  // At 'save' the helper dies while the checkpoint the rollback took of the branch is saved into the pool, as the rollback goes on.
  it.each(['aside', 'files', 'restore', 'adopt', 'save'] as const)("finishes a running branch's rollback killed at %s", async (stage) => {
    await sh(c, ws, 'echo v2 > /root/marker');
    await crashDuring('branch.rollback', { workspace: ws.id, version: versionId, faultAt: stage });
    ws = await track(await c.request('workspace.get', { workspace: ws.id }));
    expect(ws).toMatchObject({ state: 'running', exitReason: null, version: versionId });
    expect(await marker()).toBe('v1');
    // The checkpoint it took of the state it left is gone with it.
    expect((await c.request('version.list', { workspace: ws.id })).map((v) => v.id)).toEqual([versionId]);
    await worksAsBefore(ws);
  });

  it.each(['aside', 'restore'] as const)("finishes a stopped branch's rollback killed at %s", async (stage) => {
    await sh(c, ws, 'echo v2 > /root/marker');
    await c.request('workspace.stop', { workspace: ws.id });
    await crashDuring('branch.rollback', { workspace: ws.id, version: versionId, faultAt: stage });
    ws = await track(await c.request('workspace.get', { workspace: ws.id }));
    expect(ws).toMatchObject({ state: 'running', version: versionId });
    expect(await marker()).toBe('v1');
    expect((await readdir(`${instance().stateDir}/pool/versions`)).filter((e) => e.startsWith(ws.id))).toEqual([]); // its files set aside are gone
    await worksAsBefore(ws);
  });
});

describe('a helper killed in a promotion or a discard', () => {
  let main: Workspace;

  beforeAll(async () => {
    main = await createWorkspace(c, 'crash-main');
  });

  afterAll(async () => {
    for (const w of (await c.request('workspace.list', {})).filter((x) => x.tree === main.tree))
      await c.request('workspace.delete', { workspace: w.id, versions: 'delete' }).catch(() => undefined);
  });

  const branchOf = async (ws: Workspace) => track((await c.request('branch.fork', { workspace: ws.id, copies: 1 })).children[0]!);
  const get = (ws: Workspace) => c.request('workspace.get', { workspace: ws.id });

  it('undoes a promotion killed before its switch: the main line and its ports stay, its version goes', async () => {
    const branch = await branchOf(main);
    await crashDuring('branch.promote', { workspace: branch.id, oldMain: 'version', faultAt: 'checkpoint' });
    expect(await get(main)).toMatchObject({ state: 'running', main: true, ports: main.ports });
    expect(await get(branch)).toMatchObject({ state: 'running', main: false, ports: branch.ports });
    expect(await c.request('version.list', { workspace: main.id })).toEqual([]);
    await worksAsBefore(main);
    await c.request('workspace.delete', { workspace: branch.id });
  });

  it('finishes a promotion killed after its switch: the branch is the main line on its ports, the old main discarded', async () => {
    const branch = await branchOf(main);
    await crashDuring('branch.promote', { workspace: branch.id, oldMain: 'discard', faultAt: 'switch' });
    expect(await get(branch)).toMatchObject({ state: 'running', main: true, ports: main.ports });
    await expect(get(main)).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
    main = await get(branch);
    await worksAsBefore(main);
  });

  it('finishes a promotion killed once its forwarders opened, keeping the old main as a branch', async () => {
    const branch = await branchOf(main);
    await crashDuring('branch.promote', { workspace: branch.id, oldMain: 'keep', faultAt: 'open' });
    expect(await get(branch)).toMatchObject({ state: 'running', main: true, ports: main.ports });
    expect(await get(main)).toMatchObject({ state: 'running', main: false, ports: branch.ports });
    const old = main;
    main = await get(branch);
    await worksAsBefore(main);
    await c.request('workspace.delete', { workspace: old.id });
  });

  it.each(['teardown', 'files'] as const)('finishes a discard killed at %s', async (stage) => {
    const branch = await branchOf(main);
    await crashDuring('workspace.delete', { workspace: branch.id, faultAt: stage });
    await expect(get(branch)).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
    await worksAsBefore(main);
  });
});
