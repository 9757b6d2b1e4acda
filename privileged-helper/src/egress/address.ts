// IP addresses as a branch may write them to the gate, parsed to the bytes the
// kernel would connect to. A string match misses forms that reach the same
// place: `[::ffff:7f00:1]` is 127.0.0.1, so is `2130706433` or `0x7f.1` (the
// classic inet_aton forms getaddrinfo still takes), `::127.0.0.1`
// (IPv4-compatible), 64:ff9b::7f00:1 (NAT64) and 2002:7f00:1:: (6to4). Every
// literal is parsed, then reduced to the address it reaches (`effective`), and
// only then compared with what the gate refuses.
import net from 'node:net';

export type Address = { family: 4; bytes: number[] } | { family: 6; bytes: number[] };

/**
 * The address a literal names, in any form a resolver or the kernel takes it:
 * IPv4 as one to four dot-separated parts, each decimal, octal (0…) or hex
 * (0x…), the last filling the remaining bytes; IPv6 in brackets or not, with a
 * zone id or not, with an embedded dotted IPv4 or not. Null for anything else
 * (a host name).
 */
export function parseAddress(text: string): Address | null {
  const bare = text.trim().replace(/^\[(.*)\]$/, '$1');
  // A zone id runs from the first '%' on: it may hold ':' and '.' itself (net.isIPv6 takes those).
  return parseV4(bare) ?? parseV6(bare.replace(/%.*$/s, ''));
}

function parseV4(text: string): Address | null {
  const parts = text.split('.');
  if (parts.length > 4 || parts.some((p) => p === '')) return null;
  const values = parts.map(partValue);
  if (values.some((v) => v === null)) return null;
  const last = values.pop()!;
  if (values.some((v) => v! > 255) || last! >= 2 ** (8 * (4 - values.length))) return null;
  const bytes = [...(values as number[])];
  for (let i = 4 - values.length - 1; i >= 0; i--) bytes.push(Math.floor(last! / 2 ** (8 * i)) % 256);
  return { family: 4, bytes };
}

function partValue(p: string): number | null {
  const v = /^0x[0-9a-f]+$/i.test(p) ? parseInt(p.slice(2), 16) : /^0[0-7]*$/.test(p) ? parseInt(p, 8) : /^[1-9][0-9]*$/.test(p) ? Number(p) : null;
  return v !== null && Number.isSafeInteger(v) && v <= 0xffffffff ? v : null;
}

function parseV6(text: string): Address | null {
  if (!net.isIPv6(text)) return null;
  let groups = text.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(groups);
  if (v4) {
    const b = parseV4(v4[1]!)?.bytes;
    if (!b) return null;
    groups = groups.slice(0, -v4[1]!.length) + `${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, tail] = groups.includes('::') ? groups.split('::') : [groups, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const words = [...h, ...Array<string>(tail === undefined ? 0 : 8 - h.length - t.length).fill('0'), ...t].map((g) => parseInt(g, 16));
  if (words.length !== 8 || words.some((w) => !(w >= 0 && w <= 0xffff))) return null;
  return { family: 6, bytes: words.flatMap((w) => [w >> 8, w & 0xff]) };
}

/**
 * The address a connection to `a` reaches: an IPv6 address that carries an
 * IPv4 one (mapped ::ffff:0:0/96, compatible ::/96 but :: and ::1, NAT64
 * 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16) is that IPv4 address.
 */
export function effective(a: Address): Address {
  if (a.family === 4) return a;
  const b = a.bytes;
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number): Address => ({ family: 4, bytes: b.slice(at, at + 4) });
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4(12);
  if (zeros(0, 12) && !zeros(12, 15)) return v4(12);
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && (zeros(4, 12) || (b[4] === 0 && b[5] === 1))) return v4(12);
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2);
  return a;
}

/** One text per address: dotted quad, or IPv6's eight groups in hex without leading zeros. */
export function formatAddress(a: Address): string {
  if (a.family === 4) return a.bytes.join('.');
  const words = Array.from({ length: 8 }, (_, i) => ((a.bytes[2 * i]! << 8) | a.bytes[2 * i + 1]!).toString(16));
  return words.join(':');
}

/** The text of the address a literal reaches, or null for a name. */
export function canonicalAddress(text: string): string | null {
  const a = parseAddress(text);
  return a ? formatAddress(effective(a)) : null;
}

export interface Range {
  address: Address;
  prefix: number;
}

export function parseRange(text: string): Range {
  const [address, prefix] = text.split('/');
  const a = address === undefined ? null : parseAddress(address);
  const bits = Number(prefix);
  if (!a || !Number.isInteger(bits) || bits < 0 || bits > a.bytes.length * 8) throw new Error(`not a CIDR: ${text}`);
  return { address: effective(a), prefix: bits };
}

export function inRange(a: Address, r: Range): boolean {
  const x = effective(a);
  if (x.family !== r.address.family) return false;
  for (let bit = 0; bit < r.prefix; bit++) {
    const mask = 0x80 >> (bit % 8);
    if ((x.bytes[bit >> 3]! & mask) !== (r.address.bytes[bit >> 3]! & mask)) return false;
  }
  return true;
}

/** What an address is, in words for a person; the first range that holds it wins. */
const KINDS: [Range, string][] = [
  ['127.0.0.0/8', "this machine's loopback"],
  ['::1/128', "this machine's loopback"],
  ['0.0.0.0/8', 'the unspecified address (this machine)'],
  ['::/128', 'the unspecified address (this machine)'],
  ['169.254.0.0/16', 'a link-local address'],
  ['fe80::/10', 'a link-local address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['ff00::/8', 'a multicast address'],
  ['255.255.255.255/32', 'the broadcast address'],
  ['240.0.0.0/4', 'a reserved address'],
  ['10.0.0.0/8', 'a private network address'],
  ['172.16.0.0/12', 'a private network address'],
  ['192.168.0.0/16', 'a private network address'],
  ['fc00::/7', 'a private network address (unique local)'],
  ['100.64.0.0/10', "a carrier-grade NAT address (an ISP's private network)"],
  ['192.0.2.0/24', 'a documentation address (reaches nothing real)'],
  ['198.51.100.0/24', 'a documentation address (reaches nothing real)'],
  ['203.0.113.0/24', 'a documentation address (reaches nothing real)'],
  ['2001:db8::/32', 'a documentation address (reaches nothing real)'],
  ['198.18.0.0/15', 'a benchmarking address'],
].map(([range, what]) => [parseRange(range!), what!]);

export function kindOfAddress(a: Address): string {
  return KINDS.find(([range]) => inRange(a, range))?.[1] ?? 'a public address';
}

/** For a person deciding on a literal: the address it reaches, and what that is; null for a host name. */
export function describeAddress(text: string): { reached: string; what: string } | null {
  const a = parseAddress(text);
  if (!a) return null;
  const reached = effective(a);
  return { reached: formatAddress(reached), what: kindOfAddress(reached) };
}
