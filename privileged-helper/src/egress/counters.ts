// The drop counters of a branch's firewall (see host/netns.ts firewallRules):
// packets the branch tried to send anywhere but the gate.
import { netnsExists } from '../host/netns.js';
import { run } from '../host/run.js';

export const DROP_COUNTERS = { tcp: 'dropped_tcp', udp: 'dropped_udp', other: 'dropped_other' } as const;

export interface DropCounts {
  tcp: number;
  udp: number;
  other: number;
}

/** Parses `nft -j list counters` output of the grove table. */
export function parseDropCounters(json: string): DropCounts {
  const counts: DropCounts = { tcp: 0, udp: 0, other: 0 };
  const doc = JSON.parse(json) as { nftables?: { counter?: { table?: string; name?: string; packets?: number } }[] };
  for (const item of doc.nftables ?? []) {
    const c = item.counter;
    if (!c || c.table !== 'grove') continue;
    for (const [kind, name] of Object.entries(DROP_COUNTERS) as [keyof DropCounts, string][]) {
      if (c.name === name) counts[kind] = c.packets ?? 0;
    }
  }
  return counts;
}

/** Zero when the branch's namespace does not exist (it is not running). */
export async function readDropCounters(netns: string): Promise<DropCounts> {
  if (!(await netnsExists(netns))) return { tcp: 0, udp: 0, other: 0 };
  const { stdout } = await run('ip', ['netns', 'exec', netns, 'nft', '-j', 'list', 'counters', 'table', 'inet', 'grove'], { allowFailure: true });
  return stdout.trim() ? parseDropCounters(stdout) : { tcp: 0, udp: 0, other: 0 };
}
