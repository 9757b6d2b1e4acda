// The host side of branch isolation: only root may open connections from this
// machine to a branch. A branch's own firewall (netns.ts) admits every new
// connection that comes from the host end of its veth, and so from any
// process on the host, whoever runs it: without this table a local user could
// open a branch's desktop (VNC, no password) or any port of it directly.
//
// One nftables table per helper instance, in the host's own network
// namespace, on the output hook: a new connection to the instance's subnet
// (the branches' addresses and the host ends of their veths, where the egress
// gate listens) from a socket whose owner is not uid 0 is refused, TCP with a
// reset so clients fail at once. The helper's own connections (forwarders,
// computer use, the first-frame probe) are root's and pass, as do replies and
// packets with no socket (the kernel's own). IPv6 needs no rule: a branch's
// firewall admits none. The table stays while the helper is stopped (its
// branches run on) and goes with --purge.
import { run } from './run.js';

export function hostTableName(instance: string): string {
  return `grove-${instance}`;
}

/** Makes (or replaces, atomically) the instance's table. `subnet` is a validated 10.X.0.0/16. */
export async function guardBranchAddresses(instance: string, subnet: string): Promise<void> {
  const table = hostTableName(instance);
  await run('nft', ['-f', '-'], {
    input: `
table inet ${table}
delete table inet ${table}
table inet ${table} {
  chain output {
    type filter hook output priority filter; policy accept;
    ip daddr ${subnet} ct state new meta skuid != 0 jump refuse
  }
  chain refuse {
    meta l4proto tcp reject with tcp reset
    drop
  }
}
`,
  });
}

/** Removes the table; a missing one is fine (declaring it first makes the delete succeed). */
export async function removeHostTable(table: string): Promise<void> {
  await run('nft', ['-f', '-'], { input: `table inet ${table}\ndelete table inet ${table}\n` });
}
