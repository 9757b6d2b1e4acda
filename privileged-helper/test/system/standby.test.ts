// Warm standbys of versions (branches/standby.ts), for real: with a budget set,
// a saved checkpoint is restored ahead and frozen, reported by perf.get and
// by no listing of branches. Deleting the version, going over the budget (the
// oldest first) and a helper killed with a standby each leave nothing of it:
// no process, netns, cgroup, subvolume or mount.
import { access, readFile, readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { PerfReport, Version, Workspace } from '../../src/protocol/entities.js';
import { startHelper, stopHelper, type TestInstance } from './helper-process.js';
import { GROVE_CLI, runAs } from './agent-users.js';
import { mountPointsUnder, netnsNames } from './leftovers.js';
import { connect, createWorkspace, hostPort, httpGet, instance, sh, track, waitFor } from './support.js';

type Standby = PerfReport['standbys'][number];

/**
 * A loopback service holding 160 MiB of random bytes (private memory KSM
 * cannot merge, so a standby's PSS is mostly its own): it answers their hash,
 * and changes a byte of each page on /mutate.
 */
const HEAP_SERVER = `
import hashlib, http.server, os
heap = bytearray(os.urandom(160 << 20))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == '/mutate':
            for i in range(0, len(heap), 4096):
                heap[i] ^= 0xff
        body = hashlib.sha256(heap).hexdigest().encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(('0.0.0.0', 3000), Handler).serve_forever()
`;

const heapHash = (ws: Workspace, path = '/') => httpGet(hostPort(ws, 3000), 30_000, path);

/** The instance as the tests run it, with a standby budget (MiB). */
function withBudget(t: TestInstance, mib: number): TestInstance {
  return { ...t, env: { ...t.env, GROVE_STANDBY_BUDGET_MIB: String(mib) } };
}

const group = (t: TestInstance, controller: string, id: string) => `/sys/fs/cgroup/${controller}/grove-${t.instance}/${id}`;

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Whether the process runs (a zombie has ended: only its parent's reaping is left). */
async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat !== null && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

describe('standbys of versions', () => {
  const t = instance();
  let client: HelperClient;
  let ws: Workspace;
  /** The heap's hash when the first version is saved. */
  let atVersion = '';
  /** The processes of each standby seen, by its id. */
  const processes = new Map<string, number[]>();

  async function restart(to: TestInstance, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    client.close();
    await stopHelper(t, signal);
    await startHelper(to);
    client = await connect('standby');
  }

  async function standbys(): Promise<Standby[]> {
    return (await client.request('perf.get', {})).standbys;
  }

  /** Checkpoints the branch and waits for its version's standby; its processes are remembered. */
  async function checkpointWithStandby(): Promise<{ version: Version; standby: Standby }> {
    const version = await client.request('branch.checkpoint', { workspace: ws.id });
    let standby: Standby | undefined;
    await waitFor(
      `a standby of version ${version.id}`,
      async () => (standby = (await standbys()).find((s) => s.version === version.id)) !== undefined,
      180_000,
    );
    const pids = (await readFile(`${group(t, 'freezer', standby!.id)}/cgroup.procs`, 'utf8')).split('\n').filter(Boolean).map(Number);
    processes.set(standby!.id, pids);
    return { version, standby: standby! };
  }

  /** What is left of a standby on the host, in words (nothing once it is dropped). */
  async function leftOf(id: string): Promise<string[]> {
    const left: string[] = [];
    for (const ns of await netnsNames()) if (ns.includes(id)) left.push(`netns ${ns}`);
    for (const controller of await readdir('/sys/fs/cgroup')) if (await exists(group(t, controller, id))) left.push(`cgroup ${controller}`);
    if (await exists(`${t.stateDir}/pool/workspaces/${id}`)) left.push('subvolume');
    for (const m of await mountPointsUnder(`${t.runDir}-roots/${id}`)) left.push(`mount ${m}`);
    for (const pid of processes.get(id) ?? []) if (await running(pid)) left.push(`process ${pid}`);
    return left;
  }

  beforeAll(async () => {
    client = await connect('standby');
    ws = await createWorkspace(client, 'standby-src', [3000]);
    await client.request('exec.run', { workspace: ws.id, argv: ['tee', '/root/heap.py'], stdin: HEAP_SERVER });
    await sh(client, ws, 'setsid python3 /root/heap.py </dev/null >/dev/null 2>&1 &');
    atVersion = await heapHash(ws);
    await restart(withBudget(t, 100_000));
  });

  afterAll(async () => {
    await client.request('workspace.delete', { workspace: ws.id }).catch(() => undefined);
    await restart(t); // the instance as the other files expect it: no standbys
    client.close();
  });

  it('restores a saved checkpoint ahead, frozen, reported and in no listing of branches', async () => {
    const { version, standby } = await checkpointWithStandby();
    expect(await heapHash(ws)).toBe(atVersion);
    expect(standby.pssBytes).toBeGreaterThan(160 * 2 ** 20); // the heap, restored
    expect((await readFile(`${group(t, 'freezer', standby.id)}/freezer.state`, 'utf8')).trim()).toBe('FROZEN');
    const pids = processes.get(standby.id)!;
    expect(pids.length).toBeGreaterThan(1);
    for (const pid of pids) expect((await readFile(`/proc/${pid}/cgroup`, 'utf8')).includes(`freezer:/grove-${t.instance}/${standby.id}`)).toBe(true);
    expect((await client.request('workspace.list', {})).map((w) => w.id)).not.toContain(standby.id);
    const stats = await runAs('root', GROVE_CLI, ['--socket', t.socketPath, 'stats']);
    expect(stats.stdout).toMatch(new RegExp(`standbys of versions: .*${version.id} \\([\\d.]+ MiB, \\d+ s old\\)`));
  });

  it('gives a fork from the version its standby: the version’s memory, the child’s own name; then a new standby', async () => {
    const [standby] = await standbys();
    expect(await heapHash(ws, '/mutate')).not.toBe(atVersion); // the branch moves on
    const report = await client.request('branch.fork', { workspace: ws.id, copies: 1, version: standby!.version, names: ['standby-child'] });
    const [child] = report.children;
    await track(child!);
    try {
      expect(report.standby).toBe(child!.id);
      expect(child!.id).toBe(standby!.id);
      expect(child!.state).toBe('running');
      expect(await heapHash(child!)).toBe(atVersion);
      expect((await sh(client, child!, 'hostname; cat /etc/hostname')).split('\n').slice(0, 2)).toEqual(['standby-child', 'standby-child']);
      expect((await readFile(`${group(t, 'freezer', child!.id)}/freezer.state`, 'utf8')).trim()).toBe('THAWED');
      await waitFor('a new standby of the version', async () => (await standbys()).some((s) => s.version === standby!.version && s.id !== child!.id), 180_000);
    } finally {
      await client.request('workspace.delete', { workspace: child!.id });
    }
    expect(await leftOf(child!.id)).toEqual([]);
  });

  it('drops a version’s standby when the version is deleted, and leaves nothing of it', async () => {
    const [standby] = await standbys();
    await client.request('version.delete', { version: standby!.version });
    expect(await standbys()).toEqual([]);
    expect(await leftOf(standby!.id)).toEqual([]);
  });

  let measured = 0;

  it('leaves nothing of a standby when the helper is killed', async () => {
    const { standby } = await checkpointWithStandby();
    measured = standby.pssBytes;
    // Room for one standby of this branch, not two (their heaps are their own).
    await restart(withBudget(t, Math.ceil((1.4 * measured) / 2 ** 20)), 'SIGKILL');
    expect(await standbys()).toEqual([]);
    expect(await leftOf(standby.id)).toEqual([]);
  });

  it('drops the oldest standby once they hold more than the budget', async () => {
    const first = await checkpointWithStandby();
    const second = await checkpointWithStandby();
    await waitFor('the oldest standby to go', async () => !(await standbys()).some((s) => s.id === first.standby.id), 60_000);
    expect((await standbys()).map((s) => s.version)).toEqual([second.version.id]);
    expect(await leftOf(first.standby.id)).toEqual([]);
    expect((await client.request('version.list', { workspace: ws.id })).map((v) => v.id)).toContain(first.version.id); // the version stays
  });
});
