// A rollback is a transaction: when it fails at any step (a fault injected
// after the branch's files were replaced, or instead of the restore), the
// branch is back as it was — running, with its files and the in-memory state
// of its processes — and the version it was rolled to is untouched; a version
// being rolled back to cannot be deleted under the rollback. A branch whose
// processes end on their own shows as exited, with why, and can be rolled
// back (files put back if that fails) or started again from its files.
// A promotion and a checkpoint that fail after any stage leave both branches
// as they were; a discard that fails leaves a consistent branch to discard again.
// A checkpoint returns once its point in time is fixed and is saved after; a
// rollback to it waits for that, and one whose saving fails leaves nothing.
// A rollback's own checkpoint of the branch is saved in the background, and
// kept as a version when asked.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { COUNTER_SERVER } from './fixtures/counter.js';
import { banner, connect, createWorkspace, hostPort, httpGet, instance, sh, track, vncSocket, waitFor } from './support.js';

describe('rollback as a transaction', () => {
  let c: HelperClient;
  let ws: Workspace;
  let versionId: string;

  const count = async (branch: Workspace) =>
    Number(await sh(c, branch, `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8500/", timeout=5).read().decode())'`));
  const marker = async (branch: Workspace) => (await sh(c, branch, 'cat /root/marker')).trim();
  const versionsOf = async () => (await c.request('version.list', { workspace: ws.id })).map((v) => v.id);
  const onlyVersion = (id: string) => waitFor(`${id} to be the only version`, async () => JSON.stringify(await versionsOf()) === JSON.stringify([id]), 30_000);
  const waitForState = async (id: string, state: Workspace['state']): Promise<Workspace> => {
    await waitFor(`the branch to be ${state}`, async () => (await c.request('workspace.get', { workspace: id })).state === state, 15_000);
    return c.request('workspace.get', { workspace: id });
  };

  beforeAll(async () => {
    c = await connect('lifecycle');
    ws = await createWorkspace(c, 'lifecycle');
    await c.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', 'cat > /tmp/counter.py'], stdin: COUNTER_SERVER });
    await sh(c, ws, 'echo v1 > /root/marker; setsid python3 /tmp/counter.py 8500 </dev/null >/dev/null 2>&1 &');
    await waitFor(
      'the counter to answer',
      () =>
        count(ws)
          .then((n) => n > 0)
          .catch(() => false),
      20_000,
    );
    versionId = (await c.request('branch.checkpoint', { workspace: ws.id, label: 'v1' })).id;
    await sh(c, ws, 'echo v2 > /root/marker');
  });

  afterAll(async () => {
    await c?.request('workspace.delete', { workspace: ws.id, versions: 'delete' }).catch(() => undefined);
    c?.close();
  });

  it.each(['files', 'restore'] as const)('leaves the branch as it was when the rollback fails at %s', async (faultAt) => {
    const before = await count(ws);
    await expect(c.request('branch.rollback', { workspace: ws.id, version: versionId, faultAt })).rejects.toMatchObject({ code: 'E_HOST' });
    const now = await track(await c.request('workspace.get', { workspace: ws.id }));
    expect(now.state).toBe('running');
    expect(await marker(now)).toBe('v2');
    expect(await count(now)).toBe(before + 1); // its processes' memory, as of the rollback's start
    expect(await versionsOf()).toEqual([versionId]); // the version is untouched, and no checkpoint of the attempt is left
    ws = now;
  });

  it('refuses to delete the version while a rollback restores it, then rolls back for real', async () => {
    const rolling = c.request('branch.rollback', { workspace: ws.id, version: versionId });
    await new Promise((r) => setTimeout(r, 300)); // the rollback is checkpointing the branch
    await expect(c.request('version.delete', { version: versionId })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringContaining('being rolled back to'),
    });
    ws = await track(await rolling);
    expect(await marker(ws)).toBe('v1');
    await onlyVersion(versionId); // its own checkpoint goes once saved, after the rollback returned
  });

  it('rolls back while its own checkpoint of the branch is saved in the background, and when that saving fails, all the same', async () => {
    const t = instance();
    const removed = new Promise<string>((resolve) => c.on('version.removed', (e) => resolve(e.id)));
    await c.subscribe(['version.removed']);
    await sh(c, ws, 'echo v2 > /root/marker');
    ws = await track(await c.request('branch.rollback', { workspace: ws.id, version: versionId, faultAt: 'save' }));
    expect(await marker(ws)).toBe('v1');
    expect(await count(ws)).toBeGreaterThan(0);
    const aside = await removed;
    await onlyVersion(versionId);
    expect(existsSync(path.join(t.stateDir, 'pool/versions', aside))).toBe(false);
    expect(existsSync(path.join(t.runDir, 'scratch', `checkpoint-${aside}`))).toBe(false);
  });

  it('keeps what the running branch was as a version when asked, and a rollback to it brings that back', async () => {
    await sh(c, ws, 'echo kept > /root/marker');
    const atRollback = await count(ws);
    ws = await track(await c.request('branch.rollback', { workspace: ws.id, version: versionId, keep: true }));
    expect(await marker(ws)).toBe('v1');
    const kept = (await c.request('version.list', { workspace: ws.id })).find((v) => v.label === `before rollback to ${versionId}`);
    expect(kept).toBeDefined();
    ws = await track(await c.request('branch.rollback', { workspace: ws.id, version: kept!.id }));
    expect(await marker(ws)).toBe('kept');
    expect(await count(ws)).toBe(atRollback + 1); // its processes' memory as the first rollback found it
    await c.request('version.delete', { version: kept!.id });
    await onlyVersion(versionId);
  });

  it('returns a checkpoint once its point in time is fixed, saves it after, and a rollback asked at once waits for it', async () => {
    const seen: string[] = [];
    const off = [
      c.on('version.changed', (e) => e.version.saved && seen.push(`saved ${e.version.id}`)),
      c.on('version.removed', (e) => seen.push(`removed ${e.id}`)),
    ];
    await c.subscribe(['version.changed', 'version.removed']);
    try {
      await sh(c, ws, 'echo in-the-background > /root/marker');
      const atCheckpoint = await count(ws);
      const v = await c.request('branch.checkpoint', { workspace: ws.id, label: 'background' });
      expect(v).toMatchObject({ saved: false, label: 'background' });
      await sh(c, ws, 'echo later > /root/marker');
      ws = await track(await c.request('branch.rollback', { workspace: ws.id, version: v.id }));
      seen.push('rolled back');
      // (The rollback's own checkpoint of the branch comes and goes meanwhile.)
      expect(seen.filter((e) => e.endsWith(v.id) || e === 'rolled back')).toEqual([`saved ${v.id}`, 'rolled back']);
      expect(await marker(ws)).toBe('in-the-background');
      expect(await count(ws)).toBe(atCheckpoint + 1);
      expect((await c.request('version.list', { workspace: ws.id })).find((x) => x.id === v.id)).toMatchObject({ saved: true });
      await c.request('version.delete', { version: v.id });
    } finally {
      for (const f of off) f();
    }
  });

  it('drops a checkpoint whose saving fails, leaves nothing of it, and the branch runs on', async () => {
    const t = instance();
    const removed = new Promise<string>((resolve) => c.on('version.removed', (e) => resolve(e.id)));
    await c.subscribe(['version.removed']);
    const before = await count(ws);
    const v = await c.request('branch.checkpoint', { workspace: ws.id, faultAt: 'save' });
    expect(v.saved).toBe(false);
    expect(await removed).toBe(v.id);
    expect(await versionsOf()).toEqual([versionId]);
    expect(existsSync(path.join(t.stateDir, 'pool/versions', v.id))).toBe(false);
    expect(existsSync(path.join(t.runDir, 'scratch', `checkpoint-${v.id}`))).toBe(false);
    await expect(c.request('branch.rollback', { workspace: ws.id, version: v.id })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
    expect(await count(ws)).toBe(before + 1);
  });

  it('shows a branch whose processes ended on their own as exited, with why, and refuses exec saying what to do', async () => {
    await sh(c, ws, 'echo v3 > /root/marker');
    process.kill(ws.pid!, 'SIGKILL'); // its init, as the kernel or a crash would end it
    const exited = await waitForState(ws.id, 'exited');
    expect(exited.exitReason).toMatch(/its init \(host pid \d+\) ended on its own/);
    expect(exited).toMatchObject({ pid: null, vncSocket: null, ports: [] });
    await expect(c.request('exec.run', { workspace: ws.id, argv: ['true'] })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringMatching(/has exited \(its init .*\): start it again from its files, or roll it back to a version/),
    });
  });

  it('refuses to keep a version of an exited branch, which has no processes, and changes nothing', async () => {
    await expect(c.request('branch.rollback', { workspace: ws.id, version: versionId, keep: true })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringContaining('no processes to keep'),
    });
    expect(await c.request('workspace.get', { workspace: ws.id })).toMatchObject({ state: 'exited' });
    expect(await versionsOf()).toEqual([versionId]);
  });

  it('keeps an exited branch as it was when rolling it back fails, then rolls it back', async () => {
    for (const faultAt of ['files', 'restore'] as const) {
      await expect(c.request('branch.rollback', { workspace: ws.id, version: versionId, faultAt })).rejects.toMatchObject({ code: 'E_HOST' });
      expect(await c.request('workspace.get', { workspace: ws.id })).toMatchObject({ state: 'exited', exitReason: expect.any(String) });
    }
    // Its own files were put back: started, it has what it had when it exited.
    ws = await track(await c.request('workspace.start', { workspace: ws.id }));
    expect(await marker(ws)).toBe('v3');
    process.kill(ws.pid!, 'SIGKILL');
    await waitForState(ws.id, 'exited');
    ws = await track(await c.request('branch.rollback', { workspace: ws.id, version: versionId }));
    expect(ws.exitReason).toBeNull();
    expect(await marker(ws)).toBe('v1');
    expect(await count(ws)).toBeGreaterThan(0); // the version's processes
  });

  it('starts an exited branch again from its own files', async () => {
    await sh(c, ws, 'echo v4 > /root/marker');
    process.kill(ws.pid!, 'SIGKILL');
    await waitForState(ws.id, 'exited');
    ws = await track(await c.request('workspace.start', { workspace: ws.id }));
    expect(await marker(ws)).toBe('v4');
  });
});

describe('promote and checkpoint as transactions', () => {
  let c: HelperClient;
  let main: Workspace;
  let child: Workspace;
  const made: string[] = [];
  const get = (ws: Workspace) => c.request('workspace.get', { workspace: ws.id });
  /** What the branch's stable dev port serves: the hostname of the branch behind it. */
  const servedAt = async (ws: Workspace) => (await httpGet(hostPort(ws, 3000))).trim();

  beforeAll(async () => {
    c = await connect('lifecycle-promote');
    main = await createWorkspace(c, 'promo');
    made.push(main.id);
    await sh(
      c,
      main,
      'mkdir -p /srv && setsid sh -c "hostname > /srv/index.html; exec python3 -m http.server 3000 --directory /srv" </dev/null >/dev/null 2>&1 &',
    );
    await waitFor(
      'the dev server',
      () =>
        servedAt(main)
          .then((t) => t === 'promo')
          .catch(() => false),
      20_000,
    );
    const report = await c.request('branch.fork', { workspace: main.id, copies: 1 });
    child = await track(report.children[0]!);
    made.push(child.id);
    // The child's server still serves the page written at the fork; it says which branch it is from now on.
    await sh(c, child, 'hostname > /srv/index.html');
  });

  afterAll(async () => {
    for (const id of made.reverse()) await c?.request('workspace.delete', { workspace: id, versions: 'delete' }).catch(() => undefined);
    c?.close();
  });

  it.each(['checkpoint', 'switch', 'open'] as const)('leaves both branches as they were when a promotion fails after its %s', async (faultAt) => {
    const [mainBefore, childBefore] = [await get(main), await get(child)];
    await expect(c.request('branch.promote', { workspace: child.id, oldMain: 'version', faultAt })).rejects.toMatchObject({ code: 'E_HOST' });
    const [mainAfter, childAfter] = [await get(main), await get(child)];
    expect(mainAfter).toMatchObject({ main: true, state: 'running', ports: mainBefore.ports, vncSocket: mainBefore.vncSocket });
    expect(childAfter).toMatchObject({ main: false, state: 'running', ports: childBefore.ports, vncSocket: childBefore.vncSocket });
    expect(await servedAt(mainAfter)).toBe('promo');
    expect(await servedAt(childAfter)).toBe(child.name);
    expect(await banner({ path: vncSocket(mainAfter) })).toMatch(/^RFB 003\.00\d\n/);
    expect(await c.request('version.list', { workspace: main.id })).toEqual([]); // the old main's version went with the attempt
  });

  it('leaves no version when a checkpoint fails after it was written, then checkpoints', async () => {
    await expect(c.request('branch.checkpoint', { workspace: main.id, faultAt: 'dump' })).rejects.toMatchObject({ code: 'E_HOST' });
    expect(await c.request('version.list', { workspace: main.id })).toEqual([]);
    expect((await get(main)).state).toBe('running');
    const version = await c.request('branch.checkpoint', { workspace: main.id, label: 'after a failed one' });
    await c.request('version.delete', { version: version.id });
  });

  it('promotes for real after those failures, and only then discards the old main', async () => {
    const stable = hostPort(await get(main), 3000);
    const promoted = await c.request('branch.promote', { workspace: child.id, oldMain: 'discard' });
    expect(promoted).toMatchObject({ main: true, state: 'running' });
    expect(hostPort(promoted, 3000)).toBe(stable);
    expect(await servedAt(promoted)).toBe(child.name);
    await expect(get(main)).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
  });
});

describe('discard as a transaction', () => {
  let c: HelperClient;
  let ws: Workspace;

  beforeAll(async () => {
    c = await connect('lifecycle-discard');
    ws = await createWorkspace(c, 'discardable');
    await sh(c, ws, 'echo mine > /root/mine.txt');
  });

  afterAll(async () => {
    await c?.request('workspace.delete', { workspace: ws.id }).catch(() => undefined);
    c?.close();
  });

  it('leaves a branch stopped with its files when discarding it fails once its processes are gone, and it starts again', async () => {
    await expect(c.request('workspace.delete', { workspace: ws.id, faultAt: 'teardown' })).rejects.toMatchObject({
      code: 'E_HOST',
      message: expect.stringContaining('it is stopped, with its files: discard it again'),
    });
    expect(await c.request('workspace.get', { workspace: ws.id })).toMatchObject({ state: 'stopped', pid: null, vncSocket: null });
    ws = await track(await c.request('workspace.start', { workspace: ws.id }));
    expect(await sh(c, ws, 'cat /root/mine.txt')).toBe('mine\n');
  });

  it('says so when it fails once its files are gone too, and discarding it again finishes', async () => {
    await expect(c.request('workspace.delete', { workspace: ws.id, faultAt: 'files' })).rejects.toMatchObject({
      code: 'E_HOST',
      message: expect.stringContaining('its files are gone too'),
    });
    expect((await c.request('workspace.get', { workspace: ws.id })).state).toBe('failed');
    await expect(c.request('workspace.start', { workspace: ws.id })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringContaining('discard it again'),
    });
    expect(await c.request('workspace.delete', { workspace: ws.id })).toEqual({ deleted: ws.id });
    await expect(c.request('workspace.get', { workspace: ws.id })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
  });
});
