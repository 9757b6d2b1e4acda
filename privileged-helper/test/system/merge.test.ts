// Fork points and merges, for real: every fork keeps a read-only snapshot of
// its source's files (the merge base), removed with the last branch or
// version descending from it.
import { readdir } from 'node:fs/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import type { GroveError } from '../../src/protocol/wire.js';
import { connect, createWorkspace, instance, sh, track, waitFor } from './support.js';

const branchFiles = () => `${instance().stateDir}/pool/workspaces`;
const forkPointsOnDisk = async () => (await readdir(branchFiles())).filter((f) => f.startsWith('.fork-point-')).sort();

/** Forks `source` into `names`; the children, tracked. */
async function fork(client: HelperClient, source: Workspace, names: string[]): Promise<{ fork: string; children: Workspace[] }> {
  const report = await client.request('branch.fork', { workspace: source.id, copies: names.length, names });
  return { fork: report.fork, children: await Promise.all(report.children.map(track)) };
}

describe('fork points', () => {
  let client: HelperClient;
  let source: Workspace;

  beforeAll(async () => {
    client = await connect();
    source = await createWorkspace(client, 'fp-src');
    await sh(client, source, 'echo at-the-fork > /root/state.txt; echo system > /srv/state.txt');
  });

  afterAll(async () => {
    for (const w of await client.request('workspace.list', {})) {
      if (w.tree === source.tree && w.id !== source.id) await client.request('workspace.delete', { workspace: w.id }).catch(() => undefined);
    }
    await client.request('workspace.delete', { workspace: source.id }).catch(() => undefined);
    client.close();
  });

  it('keeps a read-only snapshot of the source at the fork, counted by space.get, until the last branch or version of it goes', async () => {
    const before = await forkPointsOnDisk();
    const { fork: forkId, children } = await fork(client, source, ['fp-a', 'fp-b']);
    await sh(client, source, 'echo after-the-fork > /root/state.txt');
    const kept = (await forkPointsOnDisk()).filter((f) => !before.includes(f));
    expect(kept).toEqual([`.fork-point-${forkId.replace(/^fork-/, 'point-')}`]);
    const snapshot = `${branchFiles()}/${kept[0]}`;
    expect((await execa('btrfs', ['property', 'get', '-ts', snapshot, 'ro'])).stdout.trim()).toBe('ro=true');
    // The source's files as they were at the fork: its home, and its writes outside it in the upper.
    expect((await execa('cat', [`${snapshot}/home/state.txt`])).stdout).toBe('at-the-fork');
    expect((await execa('cat', [`${snapshot}/upper/srv/state.txt`])).stdout).toBe('system');

    const space = await client.request('space.get', {});
    const counted = space.forkPoints.find((f) => `.fork-point-${f.forkPoint}` === kept[0]);
    expect(counted).toMatchObject({ source: source.id });
    expect(counted!.totalBytes).toBeGreaterThan(0);

    // A version of a child descends from it: discarding both children keeps it.
    const version = await client.request('branch.checkpoint', { workspace: children[0]!.id, label: 'keeps the base' });
    for (const c of children) await client.request('workspace.delete', { workspace: c.id });
    await new Promise((r) => setTimeout(r, 1000));
    expect(await forkPointsOnDisk()).toContain(kept[0]);
    await client.request('version.delete', { version: version.id });
    await waitFor('the fork point to go', async () => !(await forkPointsOnDisk()).includes(kept[0]!), 30_000);
    expect((await client.request('space.get', {})).forkPoints.map((f) => f.forkPoint)).not.toContain(kept[0]!.replace('.fork-point-', ''));
  });

  it('a failed fork leaves no fork point behind', async () => {
    const before = await forkPointsOnDisk();
    const failure = await client.request('branch.fork', { workspace: source.id, copies: 1, faultAt: 'commit' }).then(
      () => null,
      (err: unknown) => err as GroveError,
    );
    expect(failure?.message).toContain("fault injected after stage 'commit'");
    expect(await forkPointsOnDisk()).toEqual(before);
    expect((await client.request('space.get', {})).forkPoints.filter((f) => f.source === source.id)).toEqual([]);
  });
});
