// New branches' networks made ahead (workspaces/prepared-pool.ts): the helper
// keeps a few sets (netns with veth pair and firewall, cgroups) ready, made
// for the ids the next branches will have; a fork's child takes one, and the
// pool refills afterwards. What the pool holds is read from perf.get and
// checked on the host itself.
import { afterAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { linkNames, netnsNames } from './leftovers.js';
import { connect, createWorkspace, fullPool, instance, sh, track } from './support.js';

describe('networks prepared ahead', () => {
  let c: HelperClient;
  const made: string[] = [];

  afterAll(async () => {
    for (const id of made.reverse()) await c.request('workspace.delete', { workspace: id }).catch(() => undefined);
    c?.close();
  });

  it('keeps sets ready on the host, gives one to a fork’s child, and makes another', async () => {
    const t = instance();
    c = await connect('prepared');
    const source: Workspace = await createWorkspace(c, 'prepared');
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
    expect(await sh(c, running, 'cat /proc/net/route | awk \'$2 == "00000000" { print $1 }\'')).toBe('eth0\n');
    expect(await sh(c, running, 'python3 -c "import socket; s = socket.socket(); s.settimeout(3); print(s.connect_ex((\'1.1.1.1\', 80)))"')).toBe('111\n');
    const again = await fullPool(c);
    expect(again).not.toContain(child!.id);
    expect(again).toEqual(expect.arrayContaining(ready.slice(1)));
  });
});
