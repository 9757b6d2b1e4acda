// New branches' networks made ahead (workspaces/prepared-pool.ts): the helper
// keeps a few sets (netns with veth pair and firewall, cgroups) ready, made
// for the ids the next branches will have; a fork's child takes one, and the
// pool refills afterwards. What the pool holds is read from perf.get and
// checked on the host itself. A fork into more children than it restores at
// once makes the later ones' networks at their turn (branches/fork.ts).
import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { linkNames, netnsNames } from './leftovers.js';
import { connect, createWorkspace, fullPool, instance, sh, track } from './support.js';

describe('networks prepared ahead', () => {
  let c: HelperClient;
  let source: Workspace;
  const made: string[] = [];

  afterAll(async () => {
    for (const id of made.reverse()) await c.request('workspace.delete', { workspace: id }).catch(() => undefined);
    c?.close();
  });

  it('keeps sets ready on the host, gives one to a fork’s child, and makes another', async () => {
    const t = instance();
    c = await connect('prepared');
    source = await createWorkspace(c, 'prepared');
    made.push(source.id);
    const ready = await fullPool(c);
    expect(ready.length).toBeGreaterThan(0);
    const [netns, links] = [await netnsNames(), await linkNames()];
    for (const id of ready) {
      expect(netns).toContain(`grove-${t.instance}-${id}`);
      expect(links).toContain(`gv${t.instance}${id}`);
    }
    const [child] = (await c.request('branch.fork', { workspace: source.id, copies: 1 })).children;
    made.push(child!.id);
    expect(child!.id).toBe(ready[0]); // the oldest ready set, id and all
    const running = await track(child!);
    // Its network is the branch's own now: address, firewall and route as if made for it on the spot.
    await expectOwnNetwork(running);
    const again = await fullPool(c);
    expect(again).not.toContain(child!.id);
    expect(again).toEqual(expect.arrayContaining(ready.slice(1)));
  });

  it('makes the networks of the children restored after the first ones at their turn, once the source runs again', async () => {
    const atOnce = os.availableParallelism(); // the helper restores as many children at once as there are cores
    const stages: { stage: string; message: string }[] = [];
    c.on('progress', (p) => {
      if (p.job.startsWith('fork-')) stages.push({ stage: p.stage, message: p.message });
    });
    await c.subscribe(['progress']);
    const { children } = await c.request('branch.fork', { workspace: source.id, copies: atOnce + 1 });
    made.push(...children.map((w) => w.id));
    const late = children[atOnce]!;
    const thawed = stages.findIndex((s) => s.stage === 'thaw');
    const madeLate = stages.flatMap((s, i) => (s.stage === 'prepare' && s.message.includes('made at its turn') ? [{ ...s, i }] : []));
    expect(thawed).toBeGreaterThan(0);
    expect(madeLate).toEqual([expect.objectContaining({ message: expect.stringMatching(new RegExp(`^${late.name}'s network, made at its turn: \\d+ ms$`)) })]);
    expect(madeLate[0]!.i).toBeGreaterThan(thawed);
    await expectOwnNetwork(await track(late));
  });

  /** A branch's own network: its default route out of eth0, and its firewall, which refuses the world. */
  async function expectOwnNetwork(ws: Workspace): Promise<void> {
    expect(await sh(c, ws, 'cat /proc/net/route | awk \'$2 == "00000000" { print $1 }\'')).toBe('eth0\n');
    expect(await sh(c, ws, 'python3 -c "import socket; s = socket.socket(); s.settimeout(3); print(s.connect_ex((\'1.1.1.1\', 80)))"')).toBe('111\n');
  }
});
