// Per-workspace networking: a named network namespace, a veth pair on a private
// /30 to the host, loopback up, and no default route. A firewall inside the
// namespace (the workspace has no CAP_NET_ADMIN, so it cannot change it) lets
// in only the host end of the veth (the helper's port forwarders) and lets out
// nothing but replies: a workspace reaches neither its neighbours nor the world.
import { access, readFile } from 'node:fs/promises';
import { GATE_ADDRESS, GATE_PORT } from './branch-network.js';
import { run } from './run.js';

export const MAX_NET_INDEX = 16383; // a /16 holds 16384 /30s

export interface NetPlan {
  netns: string;
  hostVeth: string;
  hostAddress: string;
  containerAddress: string;
  /** The MAC address of the branch's eth0: its own, so that no two branches, a fork's children included, show one. */
  containerMac: string;
}

export function planNetwork(instance: string, id: string, subnet: string, index: number): NetPlan {
  if (!Number.isInteger(index) || index < 0 || index > MAX_NET_INDEX) throw new Error(`net index ${index} out of range`);
  const [a, b] = subnet.split('.').map(Number);
  const offset = index * 4;
  const at = (n: number) => `${a}.${b}.${(offset + n) >> 8}.${(offset + n) & 255}`;
  return {
    netns: netnsName(instance, id),
    hostVeth: hostVethName(instance, id),
    hostAddress: at(1),
    containerAddress: at(2),
    containerMac: branchMac(index),
  };
}

/**
 * A locally administered unicast address (02:…) made of the branch's network
 * index, which no two of the helper's branches share: a fork's child takes one
 * with its own network, never its source's.
 */
function branchMac(index: number): string {
  return `02:67:00:00:${(index >> 8).toString(16).padStart(2, '0')}:${(index & 255).toString(16).padStart(2, '0')}`;
}

export function netnsName(instance: string, id: string): string {
  return `grove-${instance}-${id}`;
}

/** The host end of a branch's veth: ≤ 15 characters (IFNAMSIZ) for a 1-4 character instance and an 8-hex id. */
function hostVethName(instance: string, id: string): string {
  return `gv${instance}${id}`;
}

/** Whether `dev` is the host end of one of this instance's branch veths (a branch id is 8 hex digits). */
function isOwnVeth(dev: string, instance: string): boolean {
  const id = dev.slice(hostVethName(instance, '').length);
  return /^[0-9a-f]{8}$/.test(id) && dev === hostVethName(instance, id);
}

/**
 * The host's routes into `subnet` (a 10.X.0.0/16) through any device but this
 * instance's own veths: another Grove instance or a network of the host's that
 * uses the range. Branches there would answer for the wrong machine. Routes
 * wider than the /16 (a 10.0.0.0/8 LAN) do not count: a branch's /30 is more
 * specific and wins.
 */
export async function foreignRoutesIn(subnet: string, instance: string): Promise<string[]> {
  const prefix = subnet.split('.').slice(0, 2).join('.');
  const { stdout } = await run('ip', ['-json', '-4', 'route', 'list']);
  const routes = JSON.parse(stdout || '[]') as { dst: string; dev?: string }[];
  return routes
    .filter((r) => r.dst.split('.').slice(0, 2).join('.') === prefix && Number(r.dst.split('/')[1] ?? 32) >= 16)
    .filter((r) => !r.dev || !isOwnVeth(r.dev, instance))
    .map((r) => `${r.dst}${r.dev ? ` dev ${r.dev}` : ''}`);
}

/**
 * The host's name servers (resolv.conf) inside `subnet`: the helper's host
 * firewall refuses non-root connections into its subnet, so one there would
 * leave every program but root's without DNS (this VM's resolver is 10.255.255.53).
 */
export async function nameserversIn(subnet: string, resolvConf = '/etc/resolv.conf'): Promise<string[]> {
  const prefix = `${subnet.split('.').slice(0, 2).join('.')}.`;
  const text = await readFile(resolvConf, 'utf8').catch(() => ''); // no resolv.conf: no name server to avoid
  return [...text.matchAll(/^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)/gm)].map((m) => m[1]!).filter((ip) => ip.startsWith(prefix));
}

export function netnsPath(netns: string): string {
  return `/run/netns/${netns}`;
}

export async function netnsExists(netns: string): Promise<boolean> {
  return access(netnsPath(netns)).then(
    () => true,
    () => false,
  );
}

export async function listNetns(): Promise<string[]> {
  const { stdout } = await run('ip', ['-json', 'netns', 'list'], { allowFailure: true });
  if (!stdout.trim()) return [];
  return (JSON.parse(stdout) as { name: string }[]).map((n) => n.name);
}

/**
 * Makes a branch's network in three program runs, as it is on the way of a
 * fan-out's later children (made at their turn) and each run waits for a core
 * while restores hold both: the namespace
 * and the veth pair (container end named eth0 inside) in one `ip -batch`,
 * then the firewall, then the inside's addresses and default route in one
 * more batch. The route comes only once the firewall is in place: the gate's
 * address is reachable, and any other attempt reaches the output chain
 * (dropped and counted there) instead of failing unseen for want of a route.
 */
export async function createNetwork(plan: NetPlan): Promise<void> {
  const batch = (lines: string[]) => `${lines.join('\n')}\n`;
  await run('ip', ['-batch', '-'], {
    input: batch([
      `netns add ${plan.netns}`,
      `link add ${plan.hostVeth} type veth peer name eth0 address ${plan.containerMac} netns ${plan.netns}`,
      `addr add ${plan.hostAddress}/30 dev ${plan.hostVeth}`,
      `link set ${plan.hostVeth} up`,
    ]),
  });
  await run('ip', ['netns', 'exec', plan.netns, 'nft', '-f', '-'], { input: firewallRules(plan) });
  await run('ip', ['-n', plan.netns, '-batch', '-'], {
    input: batch([
      'link set lo up',
      `addr add ${plan.containerAddress}/30 dev eth0`,
      'link set eth0 up',
      `route replace default via ${plan.hostAddress} dev eth0`,
    ]),
  });
}

function firewallRules(plan: NetPlan): string {
  // Out: loopback, replies, and new TCP to the egress gate only. The gate is
  // addressed at a fixed GATE_ADDRESS in every branch and DNAT'ed here to this
  // branch's own veth peer (so restored fork children keep a valid address).
  // Everything else is dropped (TCP reset, so apps fail fast) and counted per kind
  // in named counters that egress.status reads.
  return `
table inet grove
delete table inet grove
table inet grove {
  counter dropped_tcp {}
  counter dropped_udp {}
  counter dropped_other {}
  chain input {
    type filter hook input priority 0; policy drop;
    iif lo accept
    ct state established,related accept
    ip saddr ${plan.hostAddress} ct state new accept
    counter
  }
  chain gate_nat {
    type nat hook output priority -100;
    ip daddr ${GATE_ADDRESS} tcp dport ${GATE_PORT} dnat ip to ${plan.hostAddress}:${GATE_PORT}
  }
  chain output {
    type filter hook output priority 0; policy drop;
    oif lo accept
    ct state established,related accept
    ip daddr ${plan.hostAddress} tcp dport ${GATE_PORT} ct state new accept
    icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert, mld-listener-report, mld2-listener-report } drop
    meta l4proto tcp counter name dropped_tcp reject with tcp reset
    meta l4proto udp counter name dropped_udp drop
    counter name dropped_other drop
  }
  chain forward {
    type filter hook forward priority 0; policy drop;
  }
}
`;
}

/**
 * While CRIU restores a tree into a netns, no packet leaves a socket: a
 * connection being restored may send (data its peer had not taken yet) before
 * its peer socket exists, and would be reset. The lock is a table of its own,
 * dropped at the output hook before every other rule. The restore's action
 * program opens it just before the tasks resume (native/grove-action.c) by adding
 * an accept rule, not by deleting the table: in nftables only additions are
 * quick (a batch that deletes a rule, a table or a hooked chain, or changes
 * its policy, is several times slower than an addition, and this one is on
 * the child's way to its first frame). The opened table stays, accepting all
 * (a later table's drop still applies), until the next restore into the netns
 * replaces it; unlockRestore() removes it after a restore that failed.
 * native/grove-netlock.c (`netlock`) makes, opens and removes it over
 * netlink from inside the netns: one small program, where nsenter and nft
 * would start two and load libnftables, twice per child.
 */
export const RESTORE_LOCK_TABLE = 'grove_restore_lock';

export async function lockForRestore(netlock: string, netnsFile: string): Promise<void> {
  await run(netlock, ['lock', netnsFile, RESTORE_LOCK_TABLE]);
}

export async function unlockRestore(netlock: string, netnsFile: string): Promise<void> {
  await run(netlock, ['unlock', netnsFile, RESTORE_LOCK_TABLE], { allowFailure: true });
}

export async function deleteVeth(hostVeth: string): Promise<void> {
  await run('ip', ['link', 'del', hostVeth], { allowFailure: true });
}

/** Removes the namespace; its veth pair goes with it. Missing is fine. */
export async function deleteNetns(netns: string): Promise<void> {
  if (!(await netnsExists(netns))) return;
  await run('ip', ['netns', 'del', netns]);
}
