// Forks from a saved version, for real: the children are restored from the
// version's images and files (its processes, their heap, its files), while
// the branch it is a version of is not touched (it runs on unchanged, or
// stays stopped). Bad versions are refused in words and change nothing, a
// fault at each stage leaves nothing behind, and an agent forks only from
// versions of its scope.
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { ForkReport, Version, Workspace } from '../../src/protocol/entities.js';
import type { GroveError } from '../../src/protocol/wire.js';
import { agentUserNames, CALL, GROVE_CLI, runAs, withScope } from './agent-users.js';
import { netnsNames } from './leftovers.js';
import { connect, createWorkspace, fullPool, hostPort, httpGet, instance, sh, track, waitFor } from './support.js';

/** A loopback service whose state is in memory: a counter, and a heap it hashes (and can change a byte of per page). */
const HEAP_SERVER = `
import hashlib, http.server, os
count = 0
heap = bytearray(os.urandom(32 << 20))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global count
        if self.path == '/inc':
            count += 1
        if self.path == '/mutate':
            for i in range(0, len(heap), 4096):
                heap[i] ^= 0xff
        body = f'{count} {hashlib.sha256(heap).hexdigest()}'.encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(('0.0.0.0', 3000), Handler).serve_forever()
`;

const server = (ws: Workspace, path = '/') => httpGet(hostPort(ws, 3000), 30_000, path);

/** What the branch's processes hold in memory (the counter and the heap's hash) and what its files say. */
async function stateOf(client: HelperClient, ws: Workspace): Promise<{ memory: string; files: string }> {
  return { memory: await server(ws), files: await sh(client, ws, 'cat /root/state.txt /dev/shm/marker') };
}

interface CallOutput {
  result?: unknown;
  error?: { code: string; message: string };
}

describe('fork from a version', () => {
  let client: HelperClient;
  let source: Workspace;
  let other: Workspace;
  let version: Version;
  let otherVersion: Version;
  let atVersion: { memory: string; files: string };
  let now: { memory: string; files: string };
  const made: string[] = [];

  async function saved(v: Version): Promise<void> {
    await waitFor(`version ${v.id} to be saved`, async () => (await client.request('version.list', {})).some((x) => x.id === v.id && x.saved), 60_000);
  }

  async function fork(params: { copies: number; version: string; names?: string[] }): Promise<ForkReport> {
    const report = await client.request('branch.fork', { workspace: source.id, ...params });
    made.push(...report.children.map((c) => c.id));
    for (const child of report.children) await track(child);
    return report;
  }

  beforeAll(async () => {
    client = await connect('fork-from-version');
    source = await createWorkspace(client, 'fv');
    made.push(source.id);
    other = await createWorkspace(client, 'fv-other');
    made.push(other.id);
    await client.request('exec.run', { workspace: source.id, argv: ['tee', '/root/heap.py'], stdin: HEAP_SERVER });
    await sh(client, source, 'setsid python3 /root/heap.py </dev/null >/dev/null 2>&1 &');
    for (let i = 0; i < 3; i++) await server(source, '/inc');
    await sh(client, source, 'echo v1 > /root/state.txt; echo shm-v1 > /dev/shm/marker');
    atVersion = await stateOf(client, source);
    version = await client.request('branch.checkpoint', { workspace: source.id, label: 'v1' });
    otherVersion = await client.request('branch.checkpoint', { workspace: other.id });
    await server(source, '/mutate');
    await server(source, '/inc');
    await sh(client, source, 'echo v2 > /root/state.txt; echo shm-v2 > /dev/shm/marker');
    now = await stateOf(client, source);
    expect(now.memory).not.toBe(atVersion.memory);
    expect(atVersion.memory).toMatch(/^3 [0-9a-f]{64}$/);
    await saved(version);
    await saved(otherVersion);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await client.request('workspace.delete', { workspace: id, versions: 'delete' }).catch(() => undefined);
    client.close();
  });

  /** The source as it was, running the same processes on its state after the version. */
  async function expectSourceUntouched(): Promise<void> {
    expect(await client.request('workspace.get', { workspace: source.id })).toMatchObject({ state: 'running', pid: source.pid });
    expect(await stateOf(client, source)).toEqual(now);
  }

  /**
   * What a refused or failed fork from a version must leave as it was:
   * branches, versions (but those `deleted` meanwhile), netns, subvolumes,
   * the scratch space, the version's images, the source.
   */
  async function expectNothingChanged(failing: () => Promise<void>, deleted: string[] = []): Promise<void> {
    const t = instance();
    const branchNetns = async () => {
      const prepared = new Set((await fullPool(client)).map((id) => `grove-${t.instance}-${id}`));
      return (await netnsNames()).filter((n) => n.startsWith(`grove-${t.instance}-`) && !prepared.has(n)).sort();
    };
    const images = `${t.stateDir}/pool/versions/${version.id}/images`;
    const before = {
      branches: (await client.request('workspace.list', {})).map((w) => w.id).sort(),
      versions: (await client.request('version.list', {}))
        .map((v) => v.id)
        .filter((id) => !deleted.includes(id))
        .sort(),
      netns: await branchNetns(),
      subvolumes: (await readdir(`${t.stateDir}/pool/workspaces`)).sort(),
      images: (await readdir(images)).sort(),
    };
    await failing();
    expect({
      branches: (await client.request('workspace.list', {})).map((w) => w.id).sort(),
      versions: (await client.request('version.list', {})).map((v) => v.id).sort(),
      netns: await branchNetns(),
      subvolumes: (await readdir(`${t.stateDir}/pool/workspaces`)).sort(),
      images: (await readdir(images)).sort(),
    }).toEqual(before);
    expect(await readdir(`${t.runDir}/scratch`)).toEqual([]);
    await expectSourceUntouched();
  }

  const refusal = (params: object) =>
    client.request('branch.fork', { workspace: source.id, copies: 1, ...params }).then(
      () => null,
      (err: unknown) => err as GroveError,
    );

  it("makes N children with the version's processes, heap and files, while the source runs on unchanged", async () => {
    const report = await fork({ copies: 2, version: version.id });
    expect(report.version).toBe(version.id);
    expect(report.timings.sourceFrozen).toBe(0);
    expect(report.memory).toMatch(new RegExp(`^copied by CRIU from version ${version.id}'s images`));
    expect(report.children.map((c) => c.name)).toEqual(['fv-1', 'fv-2']);
    for (const child of report.children) {
      expect(child).toMatchObject({ state: 'running', parent: source.id, tree: source.tree, version: version.id, main: false });
      expect(child.pid).not.toBe(source.pid);
      expect(await stateOf(client, child)).toEqual(atVersion);
      expect((await sh(client, child, 'hostname')).trim()).toBe(child.name);
    }
    await expectSourceUntouched();
    // Each child goes on from the version on its own.
    const [first, second] = report.children;
    await server(first!, '/inc');
    expect(await server(first!)).toMatch(/^4 /);
    expect(await server(second!)).toBe(atVersion.memory);
  });

  it('refuses a missing version, one of another workspace and a stage it does not have, in words, changing nothing', async () => {
    await expectNothingChanged(async () => {
      expect(await refusal({ version: 'ffffffff' })).toMatchObject({ code: 'E_NOT_FOUND', message: "no version 'ffffffff'" });
      expect(await refusal({ version: otherVersion.id })).toMatchObject({
        code: 'E_CONFLICT',
        message: `version ${otherVersion.id} belongs to another workspace`,
      });
      expect(await refusal({ version: version.id, faultAt: 'dump' })).toMatchObject({
        code: 'E_INVALID_PARAMS',
        message: "a fork from a version has no 'dump' stage (it has prepare, restore, expose, commit, stall)",
      });
      expect(await refusal({ version: 'not-an-id' })).toMatchObject({ code: 'E_INVALID_PARAMS' });
    });
  });

  it('refuses a version being deleted, and keeps a version from being deleted while a fork restores from it', async () => {
    const doomed = await client.request('branch.checkpoint', { workspace: source.id, label: 'doomed' });
    await saved(doomed);
    await expectNothingChanged(async () => {
      // Sent together: the fork arrives while the deletion runs, or after it.
      const deleting = client.request('version.delete', { version: doomed.id });
      const failure = await refusal({ version: doomed.id });
      await deleting;
      expect([`E_CONFLICT: version ${doomed.id} is being deleted; fork from another version`, `E_NOT_FOUND: no version '${doomed.id}'`]).toContain(
        `${failure?.code}: ${failure?.message}`,
      );
    }, [doomed.id]);

    const watcher = await connect('fork-from-version-watcher');
    try {
      await watcher.subscribe(['progress']);
      const prepared = new Promise<void>((resolve) => watcher.on('progress', (p) => p.job.startsWith('fork-') && p.stage === 'prepare' && resolve()));
      const forking = fork({ copies: 1, version: version.id, names: ['fv-held'] });
      await prepared;
      await expect(client.request('version.delete', { version: version.id })).rejects.toMatchObject({
        code: 'E_CONFLICT',
        message: `version ${version.id} is being rolled back to or forked from; delete it once that is done`,
      });
      const report = await forking;
      expect(await stateOf(client, report.children[0]!)).toEqual(atVersion);
      await client.request('workspace.delete', { workspace: report.children[0]!.id });
    } finally {
      watcher.close();
    }
  });

  it.each(['prepare', 'restore', 'expose', 'commit'] as const)('undoes everything when it fails after %s, the source untouched', async (stage) => {
    await expectNothingChanged(async () => {
      const failure = await refusal({ copies: 2, version: version.id, faultAt: stage });
      expect(failure).toMatchObject({ code: 'E_HOST', message: `fault injected after stage '${stage}'` });
    });
  });

  it('lets an agent fork from versions of the workspaces in its scope, and from no other', async () => {
    const [agent] = agentUserNames(instance().instance);
    const call = async (method: string, params: object): Promise<CallOutput> => {
      const res = await runAs(agent!, CALL, [instance().agentSocketPath, method, JSON.stringify(params)]);
      expect(res.stderr, res.stdout).toBe('');
      return JSON.parse(res.stdout) as CallOutput;
    };
    await withScope(client, agent!, ['fv'], async () => {
      const forked = await call('branch.fork', { workspace: 'fv', copies: 1, names: ['fv-agent'], version: version.id });
      const child = (forked.result as ForkReport).children[0]!;
      made.push(child.id);
      await track(child);
      expect(child).toMatchObject({ name: 'fv-agent', version: version.id, madeBy: { role: 'agent', user: agent } });
      expect(await stateOf(client, child)).toEqual(atVersion);
      // Another workspace's version is one it does not see: as if it did not exist.
      expect((await call('branch.fork', { workspace: 'fv', copies: 1, version: otherVersion.id })).error).toEqual({
        code: 'E_NOT_FOUND',
        message: `no version '${otherVersion.id}'`,
      });
    });
  });

  it('forks from a version on the command line (grove fork --from), and says so', async () => {
    const res = await runAs('root', GROVE_CLI, ['--socket', instance().socketPath, 'fork', 'fv', '--from', version.id, '--name', 'fv-cli']);
    expect(res.stderr).not.toMatch(/error/i);
    expect(res.exitCode).toBe(0);
    expect(res.stdout).toContain(`restored from version ${version.id}; the source was not touched`);
    expect(res.stdout).not.toContain('source frozen');
    const child = await track(await client.request('workspace.get', { workspace: 'fv-cli' }));
    made.push(child.id);
    expect(await stateOf(client, child)).toEqual(atVersion);
    await expectSourceUntouched();
  });

  it('forks from a version of a stopped branch, which stays stopped', async () => {
    await client.request('workspace.stop', { workspace: source.id });
    const report = await fork({ copies: 1, version: version.id, names: ['fv-cold'] });
    expect(await stateOf(client, report.children[0]!)).toEqual(atVersion);
    expect(await client.request('workspace.get', { workspace: source.id })).toMatchObject({ state: 'stopped', pid: null });
  });
});
