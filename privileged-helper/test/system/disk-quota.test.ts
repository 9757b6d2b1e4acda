// A branch's disk limit (host/disk-quota.ts): its own files' writes count
// against it and a write past it fails inside the branch (EDQUOT); a fork
// inherits the limit and is charged only for what it writes itself, not for
// the blocks it shares with its source; a rollback's new files get the limit
// again; a change applies at once; the helper says when a branch is full; and
// a branch cannot make a btrfs subvolume to write outside its limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { connect, createWorkspace, sh, track, waitFor } from './support.js';

const MiB = 2 ** 20;
const LIMIT = 64 * MiB;

/** Writes MiB of random data (incompressible: the pool compresses) to a new file in the branch's /root, synced; the exit code and what it printed. */
async function write(c: HelperClient, ws: Workspace, name: string, mib: number): Promise<{ code: number; out: string }> {
  const script = `head -c ${mib}M /dev/urandom > /root/${name}; code=$?; sync; exit $code`;
  const res = await c.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', script], timeoutMs: 60_000 });
  return { code: res.exitCode, out: `${res.stdout}${res.stderr}` };
}

async function disk(c: HelperClient, ws: Workspace) {
  const { disk: use, limits } = await c.request('workspace.get', { workspace: ws.id });
  if (!use) throw new Error(`${ws.name} has no disk use: the pool has no quotas`);
  return { ...use, limitBytes: limits.diskBytes };
}

describe("a branch's disk limit", () => {
  let c: HelperClient;
  let ws: Workspace;
  const made: string[] = [];
  const changed: Workspace[] = [];

  beforeAll(async () => {
    c = await connect('disk-quota-test');
    await c.subscribe(['workspace.changed']);
    c.on('workspace.changed', ({ workspace }) => changed.push(workspace));
    ws = await createWorkspace(c, 'quota');
    made.push(ws.id);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await c?.request('workspace.delete', { workspace: id, versions: 'delete' }).catch(() => undefined);
    c?.close();
  });

  it('is 10 GiB unless set, and takes a size between 64 MiB and 1 PiB', async () => {
    expect(ws.limits.diskBytes).toBe(10 * 2 ** 30);
    expect(ws.disk).toMatchObject({ full: false });
    for (const diskBytes of [MiB, 2 ** 51, 1.5]) {
      await expect(c.request('workspace.limits', { workspace: ws.id, diskBytes })).rejects.toMatchObject({ code: 'E_INVALID_PARAMS' });
    }
    ws = await c.request('workspace.limits', { workspace: ws.id, diskBytes: LIMIT });
    expect(ws.limits.diskBytes).toBe(LIMIT);
  });

  it('fails a write past it inside the branch, says the branch is full, and has room again once the file is gone', async () => {
    const past = await write(c, ws, 'past', 100);
    expect(past.code).not.toBe(0);
    expect(past.out).toMatch(/Disk quota exceeded/);
    const full = await disk(c, ws);
    expect(full.full).toBe(true);
    expect(full.usedBytes).toBeGreaterThan(LIMIT - 2 * MiB);
    expect(full.usedBytes).toBeLessThanOrEqual(LIMIT);
    // Its subscribers hear it (the app marks the branch), within the space watch's round.
    await waitFor('workspace.changed saying the branch is full', async () => changed.some((w) => w.id === ws.id && w.disk?.full === true), 30_000);
    await sh(c, ws, 'rm /root/past && sync');
    expect(await disk(c, ws)).toMatchObject({ full: false });
    expect((await write(c, ws, 'small', 8)).code).toBe(0);
  });

  it('is inherited by a fork, which is charged only for its own writes, not for the blocks it shares with its source', async () => {
    expect((await write(c, ws, 'shared', 40)).code).toBe(0);
    const child = await track((await c.request('branch.fork', { workspace: ws.id, copies: 1, names: ['quota-1'] })).children[0]!);
    made.push(child.id);
    expect(child.limits.diskBytes).toBe(LIMIT);
    expect(child.disk!.usedBytes).toBeLessThan(8 * MiB); // it sees 48 MiB of files, its source's
    expect(await sh(c, child, 'cat /root/shared | wc -c')).toBe(`${40 * MiB}\n`);
    // 40 MiB of its own beside 48 MiB shared: over the limit if the shared blocks counted.
    expect((await write(c, child, 'own', 40)).code).toBe(0);
    const past = await write(c, child, 'past', 40);
    expect(past.out).toMatch(/Disk quota exceeded/);
    // The source's own writes still count against its own limit.
    expect((await write(c, ws, 'more', 40)).out).toMatch(/Disk quota exceeded/);
  });

  it('holds in each child of a fork into several (snapshots of one fork point)', async () => {
    const { children } = await c.request('branch.fork', { workspace: ws.id, copies: 2, names: ['quota-2', 'quota-3'] });
    for (const child of children) made.push((await track(child)).id);
    for (const child of children) {
      expect(child.limits.diskBytes).toBe(LIMIT);
      expect(child.disk!.usedBytes).toBeLessThan(8 * MiB);
    }
    expect((await write(c, children[1]!, 'own', 40)).code).toBe(0);
    expect((await write(c, children[1]!, 'past', 40)).out).toMatch(/Disk quota exceeded/);
  });

  it('holds on the new files of a rollback, and a change applies at once', async () => {
    await sh(c, ws, 'rm -f /root/more /root/small && sync');
    const version = await c.request('branch.checkpoint', { workspace: ws.id, label: 'quota' });
    const rolled = await track(await c.request('branch.rollback', { workspace: ws.id, version: version.id }));
    expect(rolled.limits.diskBytes).toBe(LIMIT);
    // Its new files start from the version's, charged to the files that wrote them.
    expect(rolled.disk!.usedBytes).toBeLessThan(8 * MiB);
    expect((await write(c, rolled, 'after', 40)).code).toBe(0);
    expect((await write(c, rolled, 'past', 40)).out).toMatch(/Disk quota exceeded/);
    await c.request('workspace.limits', { workspace: rolled.id, diskBytes: 2 * LIMIT });
    await sh(c, rolled, 'rm -f /root/past && sync');
    expect((await write(c, rolled, 'raised', 40)).code).toBe(0);
  });

  it('cannot be escaped by a btrfs subvolume made in the branch', async () => {
    // BTRFS_IOC_SUBVOL_CREATE on /root, the branch's own btrfs directory: refused by the seccomp filter.
    const script = `
import fcntl, os, errno
fd = os.open('/root', os.O_RDONLY | os.O_DIRECTORY)
args = bytearray(4096); args[8:14] = b'escape'
try:
    fcntl.ioctl(fd, 0x5000940e, args)
    print('made')
except OSError as e:
    print(errno.errorcode[e.errno])
`;
    const res = await c.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', script] });
    expect(res.stdout, res.stderr).toBe('EPERM\n');
    expect(await sh(c, ws, 'test -e /root/escape && echo there || echo absent')).toBe('absent\n');
  });
});
