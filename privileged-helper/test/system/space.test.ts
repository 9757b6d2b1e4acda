// A full pool, on a helper instance of its own (filling the shared one would
// fail every test running beside it): subscribers hear it (pool.space), a fork, a checkpoint and a new
// workspace are refused before they start (E_NO_SPACE, with what they need and
// what is free), nothing is made and the source runs on; space.get says what
// each branch and version holds; once space is freed they go through. A pool
// that fills while a checkpoint is saved leaves no half a version.
import { readdir, readFile, rm, statfs } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { HelperClient } from '../../../main/src/helper-client/client.js';
import type { PoolSpace, Workspace } from '../../src/protocol/entities.js';
import { purge, startHelper, testInstance } from './helper-process.js';
import { leftovers } from './leftovers.js';
import { createWorkspace, sh, track, waitFor } from './support.js';

const MiB = 2 ** 20;

describe('a full pool', () => {
  let c: HelperClient;
  let ws: Workspace;
  const heard: PoolSpace[] = [];
  const own = ownInstance();
  const pool = path.join(own.stateDir, 'pool');
  const fillers: string[] = [];
  const made: string[] = [];
  /**
   * Fills the pool until about `leave` is free, in steps of at most 1 GiB and
   * half of what is left to fill near the end: btrfs's free space is an
   * estimate, and one big fallocate overshoots it by hundreds of MiB.
   */
  const fillPool = async (leave: number) => {
    for (let i = 0; i < 64; i++) {
      await execa('btrfs', ['filesystem', 'sync', pool]); // statfs counts what was allocated only once it is synced
      const s = await statfs(pool);
      const over = s.bavail * s.bsize - leave;
      if (over <= 16 * MiB) return;
      const file = path.join(pool, `filler-${fillers.length}`);
      fillers.push(file);
      await execa('fallocate', ['-l', String(Math.min(over > 512 * MiB ? over - 256 * MiB : over / 2, 2 ** 30)), file], { reject: false });
    }
  };
  /**
   * Fills the pool to its last MiB at once, whatever statfs's estimate says
   * (it lags what btrfs has allocated): a fallocate bigger than what is left
   * fails whole, so each failure halves the next try.
   */
  const fillToLastMiB = async () => {
    const s = await statfs(pool);
    for (let size = s.bavail * s.bsize; size >= MiB;) {
      const file = path.join(pool, `filler-${fillers.length}`);
      fillers.push(file);
      if ((await execa('fallocate', ['-l', String(size), file], { reject: false })).exitCode === 0) continue;
      await rm(file, { force: true });
      fillers.pop();
      size = Math.floor(size / 2);
    }
  };
  const emptyPool = async () => {
    for (const file of fillers.splice(0)) await rm(file, { force: true });
  };

  beforeAll(async () => {
    await startHelper(own);
    c = await HelperClient.connect({ socketPath: own.socketPath, name: 'space', kind: 'test' });
    await c.request('image.build', { name: 'desktop' }); // received from the image cache the shared instance filled
    await c.subscribe(['pool.space']);
    c.on('pool.space', (space) => heard.push(space));
    ws = await createWorkspace(c, 'space');
    made.push(ws.id);
  });

  afterAll(async () => {
    await emptyPool();
    for (const id of made.reverse()) await c?.request('workspace.delete', { workspace: id, versions: 'delete' }).catch(() => undefined);
    c?.close();
    await purge(own);
    expect(await leftovers(own)).toEqual([]);
    for (const file of [own.logFile, own.pidFile, own.pidNsFile]) await rm(file, { force: true });
  });

  it('refuses a fork, a checkpoint and a new workspace before they start, saying what they need, and the source runs on', async () => {
    // Less than the smallest need of the three: a checkpoint's 64 MiB beside its branch's memory.
    await fillPool(30 * MiB);
    const names = async () => (await c.request('workspace.list', {})).map((w) => w.name).sort();
    const before = await names();

    await expect(c.request('branch.fork', { workspace: ws.id, copies: 2 })).rejects.toMatchObject({
      code: 'E_NO_SPACE',
      message: expect.stringMatching(
        /^a fork of 'space' into 2 needs about 512 MiB in the pool \(256 MiB for each child's first writes\) and the pool has \d+ MiB free: discard branches or delete versions/,
      ),
    });
    await expect(c.request('branch.checkpoint', { workspace: ws.id })).rejects.toMatchObject({
      code: 'E_NO_SPACE',
      message: expect.stringMatching(/^a checkpoint of 'space' needs about \d+ MiB in the pool \(its processes' memory, \d+ MiB, and 64 MiB for its files\)/),
    });
    await expect(c.request('workspace.create', { name: 'space-new' })).rejects.toMatchObject({
      code: 'E_NO_SPACE',
      message: expect.stringContaining("workspace 'space-new' needs about 256 MiB in the pool"),
    });

    expect(await names()).toEqual(before);
    expect(await c.request('version.list', { workspace: ws.id })).toEqual([]);
    expect(await sh(c, ws, 'echo still-running')).toBe('still-running\n');

    // The watch (every 10 s) told subscribers; perf.get and space.get say it too, with what each branch holds.
    // It speaks when the pool becomes low (under 1 GiB or 5 %), which may be while it is still being filled.
    await waitFor('pool.space to say the pool is low', async () => heard.at(-1)?.low === true, 25_000);
    const told = heard.at(-1)!;
    expect(told.freeBytes).toBeLessThan(Math.max(1024 * MiB, told.totalBytes * 0.05));
    expect((await c.request('perf.get', {})).pool.low).toBe(true);
    const space = await c.request('space.get', {});
    expect(space.pool.low).toBe(true);
    expect(space.pool.freeBytes).toBeLessThan(100 * MiB);
    const held = space.branches.find((b) => b.workspace === ws.id)!;
    expect(held).toMatchObject({ name: 'space', state: 'running' });
    expect(held.exclusiveBytes).toBeGreaterThan(0);
    expect(held.totalBytes).toBeGreaterThanOrEqual(held.exclusiveBytes);
  });

  it('forks and checkpoints once space is freed, and says the pool has room again', async () => {
    await emptyPool();
    await execa('btrfs', ['filesystem', 'sync', pool]);
    await waitFor('pool.space to say there is room again', async () => heard.at(-1)?.low === false, 25_000);
    const report = await c.request('branch.fork', { workspace: ws.id, copies: 1 });
    const [child] = await Promise.all(report.children.map(track));
    made.push(child!.id);
    expect(await sh(c, child!, 'echo child')).toBe('child\n');
    const version = await c.request('branch.checkpoint', { workspace: ws.id });
    expect(version).toMatchObject({ branch: ws.id });
    // A fork's files are a snapshot of its parent's: most of what it refers to is shared, so deleting it frees less.
    const space = await c.request('space.get', {});
    const held = space.branches.find((b) => b.workspace === child!.id)!;
    expect(held.exclusiveBytes).toBeLessThan(held.totalBytes);
    expect(space.versions.find((v) => v.version === version.id)).toMatchObject({ workspace: ws.id, orphanOf: null, exclusiveBytes: expect.any(Number) });
  });

  it('leaves no half a version when the pool fills while a checkpoint is being saved, and the branch runs on', async () => {
    const ids = async () => (await c.request('version.list', { workspace: ws.id })).map((v) => v.id);
    // The last test's checkpoint may still be on its way into the pool: it is saved before this one fills the pool.
    await waitFor('earlier checkpoints to be saved', async () => (await c.request('version.list', { workspace: ws.id })).every((v) => v.saved), 60_000);
    const versionsBefore = await ids();
    const removals: { id: string; reason?: string }[] = [];
    c.on('version.removed', (e) => removals.push(e));
    await c.subscribe(['version.removed']);
    // 512 MiB that does not compress: the dump and the save take long enough to be caught running.
    await sh(c, ws, `nohup python3 -c 'import os, time; b = os.urandom(512 << 20); open("/tmp/held", "w"); time.sleep(3600)' >/dev/null 2>&1 &`);
    await waitFor('the branch to hold it', async () => (await sh(c, ws, 'test -e /tmp/held && echo yes || true')) === 'yes\n', 60_000);
    // Room for the check before the dump to pass, and a little more: what is left fills in a few steps.
    const dumpable = (await c.request('perf.get', {})).branches.find((b) => b.workspace === ws.id)!.cgroup.dumpableBytes;
    await fillPool(dumpable + 512 * MiB);
    const checkpoint = c.request('branch.checkpoint', { workspace: ws.id, label: 'filled during' });
    // The check before the dump passed; CRIU's dump (into the scratch space) is held stopped while the pool it is saved into fills up.
    const held = await holdCheckpointDump();
    try {
      await fillToLastMiB();
    } finally {
      for (const pid of held) process.kill(pid, 'SIGCONT');
    }
    const version = await checkpoint; // its point in time was fixed: it returns, to be saved after
    expect(version.saved).toBe(false);
    const settled = async () =>
      removals.some((r) => r.id === version.id) || (await c.request('version.list', { workspace: ws.id })).some((v) => v.id === version.id && v.saved);
    await waitFor('the checkpoint to be dropped', settled, 60_000);
    const gone = removals.find((r) => r.id === version.id);
    expect(gone, 'the checkpoint was saved: the pool was not full before its save ended').toBeDefined();
    await emptyPool();
    process.stderr.write(`[space] checkpoint saved into a pool filled under it: ${gone!.reason}\n`);
    expect(gone).toEqual({
      id: version.id,
      reason: expect.stringMatching(new RegExp(`checkpoint ${version.id} could not be saved into the pool: .*No space left on device`)),
    });
    expect(await ids()).toEqual(versionsBefore);
    expect(await readdir(path.join(pool, 'versions'))).not.toContain(version.id);
    expect(await sh(c, ws, 'echo still-running')).toBe('still-running\n');
  });
});

/** Stops the processes of a checkpoint's CRIU dump as soon as it runs; the pids stopped. */
async function holdCheckpointDump(): Promise<number[]> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    const dump = (await criuRuns()).filter((r) => r.line.includes(' dump ') && r.line.includes('/scratch/checkpoint-'));
    const held = dump.flatMap((r) => (tryKill(r.pid, 'SIGSTOP') ? [r.pid] : []));
    if (held.length > 0) return held;
  }
  throw new Error("timed out waiting for the checkpoint's dump");
}

function tryKill(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false; // it ended first
  }
}

/** The CRIU processes running on the host: pid and command line. */
async function criuRuns(): Promise<{ pid: number; line: string }[]> {
  const runs: { pid: number; line: string }[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const line = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ');
    if (line.includes('/criu ')) runs.push({ pid: Number(pid), line });
  }
  return runs;
}

/** A helper instance for this file: its own tag, pool and subnet (beside the shared instance's). */
function ownInstance() {
  const own = testInstance(`s${randomBytes(2).toString('hex').slice(0, 3)}`);
  const [a, b] = own.env.GROVE_SUBNET!.split('.').map(Number);
  own.env.GROVE_SUBNET = `${a}.${(b! + 30) % 256}.0.0/16`; // not 10.255: this VM's name server is there
  return own;
}
