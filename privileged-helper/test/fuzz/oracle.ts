// A judge of address literals that shares no code with the gate's
// (egress/address.ts, egress/policy.ts), for the fuzz properties: Node's
// WHATWG URL parser says which address a literal names, and net.BlockList
// (which itself takes ::ffff:a.b.c.d for a.b.c.d) whether the kernel would
// then reach a place the gate must never connect to.
//
// The URL standard takes a few IPv4 spellings that the C library's resolver,
// which the gate would otherwise hand the name to, does not (inet_aton):
// a part "0x" without digits, a trailing dot, percent-escapes and non-ASCII
// digits. Those are names to the gate, so they are names here too.
import net from 'node:net';
import os from 'node:os';

export interface Named {
  family: 4 | 6;
  /** The WHATWG URL serialization: dotted quad, or compressed lower-case IPv6 without brackets. */
  text: string;
}

/** The address a literal names, or null for a name. Brackets and an IPv6 zone id are taken off first. */
export function namedAddress(literal: string): Named | null {
  const bare = /^\[(.*)\]$/.exec(literal)?.[1] ?? literal;
  if (bare.includes(':')) {
    const v6 = bare.replace(/%[^%]*$/, '');
    if (!/^[0-9a-fA-F:.]+$/.test(v6)) return null;
    const host = hostname(`[${v6}]`);
    return host ? { family: 6, text: host.slice(1, -1) } : null;
  }
  if (!/^[0-9a-zA-Z.]+$/.test(bare) || bare.endsWith('.') || bare.split('.').some((part) => /^0x$/i.test(part))) return null;
  const host = hostname(bare);
  return host && net.isIPv4(host) ? { family: 4, text: host } : null;
}

function hostname(host: string): string | null {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return null;
  }
}

/** What the gate refuses whatever a policy or a person says: loopback, unspecified, link-local, multicast and reserved. */
const NEVER: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

/** Addresses a connection must never reach: NEVER, Grove's branch subnet, and every address of this host. */
export function refusedAddresses(subnet: string): net.BlockList {
  const list = new net.BlockList();
  for (const [address, prefix, family] of NEVER) list.addSubnet(address, prefix, family);
  const [base, bits] = subnet.split('/');
  list.addSubnet(base!, Number(bits), 'ipv4');
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const a of addresses ?? []) list.addAddress(a.address.replace(/%.*$/, ''), a.family === 'IPv4' ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** Whether a connection to the address would reach one of `refused`. */
export function reachesRefused(a: Named, refused: net.BlockList): boolean {
  return refused.check(a.text, a.family === 4 ? 'ipv4' : 'ipv6');
}
