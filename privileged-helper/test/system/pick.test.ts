// branch.pick, a race's end as one transaction: a pick that names what it
// may not (a branch of another workspace, the main line as a rival, the
// winner twice) changes nothing; one that fails after the promotion's switch
// leaves every branch as it was; one that succeeds leaves one main line, the
// rivals discarded, the old main as chosen, and one entry in the audit log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { connect, createWorkspace, sh, track } from './support.js';

describe('branch.pick', () => {
  let c: HelperClient;
  let main: Workspace;
  let other: Workspace;
  let racers: Workspace[];
  const made: string[] = [];
  const treeOf = async () =>
    (await c.request('workspace.list', {}))
      .filter((w) => w.tree === main.tree)
      .map((w) => ({ name: w.name, main: w.main, state: w.state, ports: w.ports }))
      .sort((a, b) => a.name.localeCompare(b.name));

  beforeAll(async () => {
    c = await connect('pick');
    main = await createWorkspace(c, 'race');
    other = await createWorkspace(c, 'race-other');
    made.push(main.id, other.id);
    const report = await c.request('branch.fork', { workspace: main.id, copies: 3 });
    racers = await Promise.all(report.children.map(track));
    made.push(...racers.map((r) => r.id));
    for (const r of racers) await sh(c, r, `echo ${r.name} > /root/work.txt`);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await c?.request('workspace.delete', { workspace: id, versions: 'delete' }).catch(() => undefined);
    c?.close();
  });

  it('refuses a pick that names what it may not, before anything changes', async () => {
    const before = await treeOf();
    const [a, b] = racers;
    for (const [others, why] of [
      [[other.id], /'race-other' is not a branch of race-1's workspace/],
      [[main.id], /is the main line/],
      [[a!.id], /both the winner and a rival/],
      [[b!.id, b!.id], /named twice/],
    ] as const) {
      await expect(c.request('branch.pick', { workspace: a!.id, others: [...others], losers: 'discard' })).rejects.toMatchObject({
        code: 'E_INVALID_PARAMS',
        message: expect.stringMatching(why),
      });
    }
    await expect(c.request('branch.pick', { workspace: a!.id, others: ['nosuchbranch'], losers: 'discard' })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
    expect(await treeOf()).toEqual(before);
  });

  it.each(['checkpoint', 'switch', 'open'] as const)('leaves every branch as it was when it fails after the promotion’s %s', async (faultAt) => {
    const before = await treeOf();
    const [a, b, cc] = racers;
    await expect(c.request('branch.pick', { workspace: a!.id, others: [b!.id, cc!.id], losers: 'discard', faultAt })).rejects.toMatchObject({
      code: 'E_HOST',
    });
    expect(await treeOf()).toEqual(before);
    expect(await c.request('version.list', { workspace: main.id })).toEqual([]);
  });

  it('promotes the winner, discards its rivals, keeps the old main as asked: audited as one decision', async () => {
    const [a, b, winner] = racers;
    const since = (await c.request('audit.list', {})).at(-1)?.seq ?? 0;
    const res = await c.request('branch.pick', { workspace: winner!.id, others: [a!.id, b!.id], losers: 'discard', oldMain: 'keep' });
    expect(res).toMatchObject({ main: { id: winner!.id, main: true, state: 'running' }, discarded: [a!.id, b!.id], kept: [], oldMainVersion: null });
    expect((await treeOf()).map((w) => [w.name, w.main, w.state])).toEqual([
      ['race', false, 'running'],
      [winner!.name, true, 'running'],
    ]);
    const entries = (await c.request('audit.list', {})).filter((e) => e.seq > since);
    expect(entries.map((e) => [e.action, e.target, e.outcome])).toEqual([['branch.pick', winner!.id, 'ok']]);
    expect((await sh(c, winner!, 'cat /root/work.txt')).trim()).toBe(winner!.name);
  });
});
