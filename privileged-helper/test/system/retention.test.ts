// Versions belong to their workspace, for real: they stay while it has
// branches, go with its last branch by default, or are kept as orphans named
// after it and removed later with version.delete — files, CRIU images and the
// snapshot subvolume in the pool, every one.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Version, Workspace } from '../../src/protocol/entities.js';
import { agentUserNames, CALL, GROVE_CLI, runAs, withScope } from './agent-users.js';
import { REPO } from './helper-process.js';
import { connect, createWorkspace, instance, track, waitFor } from './support.js';

const PREFIX = 'retention-';
const pool = () => path.join(instance().stateDir, 'pool');
const versionDir = (id: string) => path.join(pool(), 'versions', id);
const ids = (list: Version[]) => list.map((v) => v.id);

/** The pool's subvolumes (paths relative to the pool), as btrfs lists them. */
async function subvolumes(): Promise<string[]> {
  const { stdout } = await execa('btrfs', ['subvolume', 'list', pool()]);
  return stdout.split('\n').map((line) => line.split(' path ')[1] ?? '');
}

/** One call as the run's first agent user, on the agent socket: its result or its error. */
async function asAgent(method: string, params: object): Promise<{ result?: unknown; error?: { code: string; message: string } }> {
  const res = await runAs(agentUserNames(instance().instance)[0]!, CALL, [instance().agentSocketPath, method, JSON.stringify(params)]);
  expect(res.stderr, res.stdout).toBe('');
  return JSON.parse(res.stdout) as { result?: unknown; error?: { code: string; message: string } };
}

/** The grove CLI as root, on the person socket. */
function grove(...args: string[]) {
  return execa(path.join(REPO, 'node_modules/.bin/tsx'), [GROVE_CLI, '--socket', instance().socketPath, ...args], { reject: false });
}

/**
 * A new workspace whose desktop has come up: checkpointing a desktop still
 * starting can meet a socket in flight between its processes, which CRIU refuses.
 */
async function desktopWorkspace(client: HelperClient, name: string): Promise<Workspace> {
  const ws = await createWorkspace(client, name);
  await client.request('desktop.wait', { workspace: ws.id, until: 'still', timeoutMs: 60_000, quietMs: 1000 });
  return ws;
}

async function expectGoneFromDisk(versionIds: string[]): Promise<void> {
  const left = await subvolumes();
  for (const id of versionIds) {
    await expect(access(versionDir(id))).rejects.toThrow(/ENOENT/);
    expect(left.filter((p) => p.includes(`versions/${id}`))).toEqual([]);
  }
}

describe('versions belong to their workspace', () => {
  let client: HelperClient;
  const trees = new Set<string>();

  beforeAll(async () => {
    client = await connect('retention-test');
  });

  afterAll(async () => {
    const mine = (await client.request('workspace.list', {})).filter((w) => w.name.startsWith(PREFIX));
    for (const w of [...mine.filter((x) => !x.main), ...mine.filter((x) => x.main)]) await client.request('workspace.delete', { workspace: w.id });
    for (const v of await client.request('version.list', {})) if (trees.has(v.tree)) await client.request('version.delete', { version: v.id });
    client.close();
  });

  it('keeps them as orphans named after the workspace when asked; version.delete then removes them for good', async () => {
    const started = new Date().toISOString();
    const ws = await desktopWorkspace(client, `${PREFIX}keep`);
    trees.add(ws.tree);
    const first = await client.request('branch.checkpoint', { workspace: ws.id, label: 'first' });
    const second = await client.request('branch.checkpoint', { workspace: ws.id, label: 'second' });

    const live = await client.request('version.list', { workspace: ws.id, sizes: true });
    expect(ids(live)).toEqual([first.id, second.id]);
    for (const v of live) {
      expect(v.orphanOf).toBeUndefined();
      expect(v.sizeBytes).toBeGreaterThan(1 << 20); // CRIU images of a whole desktop, at least
    }

    // A fate it does not know is refused, and nothing changes.
    await expect(client.request('workspace.delete', { workspace: ws.id, versions: 'archive' as 'keep' })).rejects.toMatchObject({ code: 'E_INVALID_PARAMS' });
    expect((await client.request('workspace.get', { workspace: ws.id })).state).toBe('running');

    const res = await client.request('workspace.delete', { workspace: ws.id, versions: 'keep' });
    expect(res).toEqual({ deleted: ws.id, versions: { deleted: [], kept: [first.id, second.id] } });
    const orphans = (await client.request('version.list', {})).filter((v) => v.tree === ws.tree);
    expect(orphans.map((v) => [v.id, v.label, v.orphanOf])).toEqual([
      [first.id, 'first', `${PREFIX}keep`],
      [second.id, 'second', `${PREFIX}keep`],
    ]);
    expect(ids(await client.request('version.list', { workspace: `${PREFIX}keep` }))).toEqual([first.id, second.id]);
    for (const v of orphans) await access(path.join(versionDir(v.id), 'images'));
    expect((await subvolumes()).filter((p) => p.endsWith(`versions/${first.id}/files`))).toHaveLength(1);

    for (const v of orphans) expect(await client.request('version.delete', { version: v.id })).toEqual({ deleted: v.id });
    await expectGoneFromDisk(ids(orphans));
    expect(ids(await client.request('version.list', {}))).not.toContain(first.id);
    await expect(client.request('version.list', { workspace: `${PREFIX}keep` })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });

    // The audit log outlives the workspace: its deletion is found by the id it was called with, by role and time.
    const audit = await client.request('audit.list', { workspace: ws.id, role: 'person', since: started });
    expect(audit.map((e) => `${e.action} ${e.outcome}`)).toEqual(['branch.checkpoint ok', 'branch.checkpoint ok', 'workspace.delete ok']);
  });

  it('deletes them with the last branch by default: records, CRIU images and snapshot subvolumes', async () => {
    const ws = await desktopWorkspace(client, `${PREFIX}default`);
    trees.add(ws.tree);
    const first = await client.request('branch.checkpoint', { workspace: ws.id });
    const second = await client.request('branch.checkpoint', { workspace: ws.id });
    for (const v of [first, second]) await access(path.join(versionDir(v.id), 'files'));

    const res = await client.request('workspace.delete', { workspace: ws.id });
    expect(res).toEqual({ deleted: ws.id, versions: { deleted: [first.id, second.id], kept: [] } });
    expect((await client.request('version.list', {})).filter((v) => v.tree === ws.tree)).toEqual([]);
    await expectGoneFromDisk([first.id, second.id]);
  });

  it('keeps them with the workspace while it has other branches', async () => {
    const main = await desktopWorkspace(client, `${PREFIX}tree`);
    trees.add(main.tree);
    const ofMain = await client.request('branch.checkpoint', { workspace: main.id });
    const { children } = await client.request('branch.fork', { workspace: main.id, copies: 1 });
    const child = await track(children[0]!);

    expect(await client.request('workspace.delete', { workspace: main.id })).toEqual({ deleted: main.id });
    expect((await client.request('version.list', { workspace: child.id })).map((v) => [v.id, v.orphanOf])).toEqual([[ofMain.id, undefined]]);
    await access(versionDir(ofMain.id));

    expect(await client.request('workspace.delete', { workspace: child.id })).toEqual({ deleted: child.id, versions: { deleted: [ofMain.id], kept: [] } });
    await expectGoneFromDisk([ofMain.id]);
  });

  it("lets an agent delete a workspace's last branch only keeping its versions: they are a person's to delete", async () => {
    const ws = await desktopWorkspace(client, `${PREFIX}agent`);
    trees.add(ws.tree);
    const version = await client.request('branch.checkpoint', { workspace: ws.id });
    await withScope(client, agentUserNames(instance().instance)[0]!, [ws.id], async () => {
      const grant = await client.request('grant.set', { workspace: ws.id, kind: 'branch.discard' });
      try {
        const refused = await asAgent('workspace.delete', { workspace: ws.id, versions: 'delete' });
        expect(refused.error).toMatchObject({ code: 'E_FORBIDDEN', message: expect.stringMatching(/only a person may delete versions/) });
        expect((await client.request('workspace.get', { workspace: ws.id })).state).toBe('running');

        expect((await asAgent('workspace.delete', { workspace: ws.id })).result).toEqual({ deleted: ws.id, versions: { deleted: [], kept: [version.id] } });
      } finally {
        await client.request('grant.revoke', { grant: grant.id });
      }
      expect((await asAgent('version.delete', { version: version.id })).error).toMatchObject({ code: 'E_FORBIDDEN' });
    });
    await access(versionDir(version.id));
    await client.request('version.delete', { version: version.id });
    await expectGoneFromDisk([version.id]);
  });

  it('on the command line: ws rm keeps or deletes them, versions lists orphans with sizes, versions rm removes none if one is unknown', async () => {
    const ws = await desktopWorkspace(client, `${PREFIX}cli`);
    trees.add(ws.tree);
    const version = await client.request('branch.checkpoint', { workspace: ws.id, label: 'cli' });
    await waitFor('the version to be saved', async () => (await client.request('version.list', { workspace: ws.id }))[0]?.saved === true, 60_000);

    const both = await grove('ws', 'rm', ws.id, '--keep-versions', '--delete-versions');
    expect(both.stderr).toMatch(/give --keep-versions or --delete-versions, not both/);
    const removed = await grove('ws', 'rm', ws.id, '--keep-versions');
    expect(removed.stdout.trim()).toBe(
      `deleted ${ws.id}; its workspace's versions ${version.id} are kept as orphans (grove versions; grove versions rm VERSION…)`,
    );

    const listed = await grove('versions', `${PREFIX}cli`);
    expect(listed.exitCode, listed.stderr).toBe(0);
    const row = listed.stdout.trim().split('\n')[1]!.split('\t');
    expect(row.slice(0, 3)).toEqual([version.id, `${PREFIX}cli (deleted)`, ws.id]);
    expect(row[4]).toBe('yes'); // saved
    expect(row[5]).toMatch(/^\d+\.\d MiB$/);
    expect(row[6]).toBe('cli');

    const typo = await grove('versions', 'rm', version.id, 'ffffffff');
    expect(typo.exitCode).toBe(2);
    expect(typo.stderr).toMatch(/no version 'ffffffff': nothing was removed/);
    await access(versionDir(version.id));
    expect((await grove('versions', 'rm', version.id)).stdout.trim()).toBe(`deleted ${version.id}`);
    await expectGoneFromDisk([version.id]);

    const audit = await grove('--json', 'audit', '--user', '0', '--since', '10m', '--role', 'person');
    expect((JSON.parse(audit.stdout) as { action: string; target: string }[]).filter((e) => e.target === ws.id).map((e) => e.action)).toEqual([
      'branch.checkpoint',
      'workspace.delete',
    ]);
  });
});
