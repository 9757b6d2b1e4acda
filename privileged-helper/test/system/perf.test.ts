// perf.get against real branches: a fork is in the history with its stage
// timings, and each running branch's memory is read from its own processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { connect, createWorkspace, track } from './support.js';

describe('perf.get', () => {
  let client: HelperClient;
  let source: Workspace;
  const made: string[] = [];

  beforeAll(async () => {
    client = await connect();
    source = await createWorkspace(client, 'perf');
    made.push(source.id);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await client.request('workspace.delete', { workspace: id }).catch(() => undefined);
    client.close();
  });

  it('shows a fork with its timings, and the memory of both branches', async () => {
    const report = await client.request('branch.fork', { workspace: source.id, copies: 1 });
    const [child] = await Promise.all(report.children.map(track));
    made.push(child!.id);

    const perf = await client.request('perf.get', {});
    const fork = perf.forks[0]!;
    expect(fork).toMatchObject({ fork: report.fork, source: { id: source.id, name: 'perf' }, copies: 1, timings: report.timings });
    const t = fork.timings;
    for (const stage of ['prepare', 'dump', 'sourceFrozen', 'restore', 'expose', 'firstFrame'] as const) expect(t[stage]).toBeGreaterThan(0);
    expect(t.total).toBeGreaterThan(t.prepare + t.dump + t.restore + t.expose - 1);
    expect(t.total).toBeLessThan(120_000);
    expect(Date.now() - Date.parse(fork.at)).toBeLessThan(60_000);

    for (const id of [source.id, child!.id]) {
      const b = perf.branches.find((x) => x.workspace === id);
      expect(b, `branch ${id} in perf.get`).toBeDefined();
      expect(b!.processes).toBeGreaterThan(1);
      expect(b!.pssBytes).toBeGreaterThan(0);
      expect(b!.rssBytes).toBeGreaterThanOrEqual(b!.pssBytes);
      expect(b!.ksm.mergeAny).toBe(true);
    }
    expect(perf.host.availableBytes).toBeGreaterThan(0);
    expect(perf.host.totalBytes).toBeGreaterThan(perf.host.availableBytes);
    expect(perf.host.ksm.run).toBe(1);
  });

  it('refuses unknown params', async () => {
    await expect(client.request('perf.get', { limit: 5 } as never)).rejects.toMatchObject({ code: 'E_INVALID_PARAMS' });
  });
});
