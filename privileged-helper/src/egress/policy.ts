// Egress policy, pure logic: which destinations a branch may reach, how a
// proxy request names its destination, and which addresses the gate must never
// connect to whatever a policy says. No I/O here, so all of it is unit-tested.
import net from 'node:net';
import type { EgressPolicy, EgressRule } from '../protocol/entities.js';
import { formatRule, isHostPattern } from '../protocol/egress-rules.js';
import type { ProxyTarget } from './gate-protocol.js';
import { canonicalAddress, effective, formatAddress, inRange, kindOfAddress, parseAddress, parseRange, type Range } from './address.js';

export const DEFAULT_POLICY: EgressPolicy = { mode: 'deny', allow: [], holdMutating: false };

export type Verdict = { action: 'allow' } | { action: 'deny'; reason: string } | { action: 'hold'; reason: 'destination' | 'mutating' };

export interface Destination {
  /** As the client named it: a lower-case host name or an IP literal (IPv6 without brackets). */
  host: string;
  port: number;
  /** The HTTP method, or CONNECT for a tunnel. */
  method: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A plain-HTTP request that may change something outside (CONNECT tunnels cannot be inspected). */
export function isMutating(method: string): boolean {
  const m = method.toUpperCase();
  return m !== 'CONNECT' && !SAFE_METHODS.has(m);
}

/** Does the rule cover this destination? Names match exactly (case-insensitive) or by '*.' suffix; IPs match only IPs. */
export function ruleMatches(rule: EgressRule, host: string, port: number): boolean {
  if (rule.port !== undefined && rule.port !== port) return false;
  const h = host.toLowerCase();
  const r = rule.host.toLowerCase();
  if (r.startsWith('*.')) return !net.isIP(h) && h.endsWith(r.slice(1)) && h.length > r.length - 1;
  return net.isIP(r) && net.isIP(h) ? normalizeIp(r) === normalizeIp(h) : r === h;
}

export function isAllowListed(policy: EgressPolicy, host: string, port: number): boolean {
  return policy.allow.some((r) => ruleMatches(r, host, port));
}

/**
 * The policy's answer for one request, decided on the name as the client gave
 * it: the gate resolves a name only once it may pass, so a denied name never
 * leaks out through DNS.
 */
export function decide(policy: EgressPolicy, dest: Destination): Verdict {
  if (policy.mode === 'deny') return { action: 'deny', reason: "the branch's egress policy is deny" };
  const listed = isAllowListed(policy, dest.host, dest.port);
  if (listed) return policy.holdMutating && isMutating(dest.method) ? { action: 'hold', reason: 'mutating' } : { action: 'allow' };
  if (policy.mode === 'gate') return { action: 'hold', reason: 'destination' };
  return { action: 'deny', reason: `${formatRule({ host: dest.host, port: dest.port })} is not on the branch's allow list` };
}

/** Adds rules (skipping duplicates) and removes others; a removal without port drops every rule for its host. */
export function editAllowList(allow: EgressRule[], add: EgressRule[], remove: EgressRule[]): EgressRule[] {
  const kept = allow.filter((r) => !remove.some((x) => x.host === r.host && (x.port === undefined || x.port === r.port)));
  for (const r of add) if (!kept.some((k) => k.host === r.host && k.port === r.port)) kept.push(r.port === undefined ? { host: r.host } : r);
  return kept;
}

// --- where a proxy request goes ------------------------------------------------

/** A CONNECT request's authority "host:port" or "[v6]:port". */
export function parseConnectTarget(authority: string): ProxyTarget {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(authority) ?? /^([^:[\]\s/]+):(\d{1,5})$/.exec(authority);
  if (!m) throw new Error(`CONNECT needs host:port, got '${authority}'`);
  return { host: checkHost(m[1]!), port: checkPort(m[2]!), path: null, url: null };
}

/** A forward-proxy request line's absolute URL (http:// only: https goes through CONNECT). */
export function parseProxyUrl(rawUrl: string): ProxyTarget {
  let u: URL;
  try {
    u = new URL(rawUrl);
  } catch {
    throw new Error(`a proxy request needs an absolute http:// URL, got '${rawUrl.slice(0, 200)}'`);
  }
  if (u.protocol !== 'http:') throw new Error(`the gate forwards http:// URLs (use CONNECT for ${u.protocol}), got '${rawUrl.slice(0, 200)}'`);
  if (u.username || u.password) throw new Error('URLs with credentials are refused');
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return { host: checkHost(host), port: u.port ? checkPort(u.port) : 80, path: `${u.pathname}${u.search}`, url: u.toString() };
}

function checkHost(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (net.isIP(h)) return h;
  if (!isHostPattern(h) || h.startsWith('*.')) throw new Error(`not a host name: '${host.slice(0, 100)}'`);
  return h;
}

function checkPort(text: string): number {
  const p = Number(text);
  if (!Number.isInteger(p) || p < 1 || p > 65535) throw new Error(`not a port: '${text}'`);
  return p;
}

/** GROVE_GATE_HOSTS='name=ip,name2=ip2' (tests): names the gate resolves without DNS. */
export function parseHostsMap(text: string | undefined): Map<string, string> {
  const map = new Map<string, string>();
  for (const item of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, ip] = item.split('=').map((s) => s.trim().toLowerCase());
    if (!name || !ip || !net.isIP(ip)) throw new Error(`GROVE_GATE_HOSTS: expected name=ip, got '${item}'`);
    map.set(name, ip);
  }
  return map;
}

// --- addresses the gate never connects to ---------------------------------------

/** A range of addresses (address.ts): what the gate refuses is a set of these. */
export type Cidr = Range;

export function parseCidr(text: string): Cidr {
  return parseRange(text);
}

/** Always refused: loopback, unspecified, link-local, multicast, broadcast (v4 and v6). */
const ALWAYS_FORBIDDEN: Cidr[] = ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '224.0.0.0/4', '240.0.0.0/4', '::/128', '::1/128', 'fe80::/10', 'ff00::/8'].map(
  parseRange,
);

/**
 * Why the gate must refuse to connect to `ip`, or null. `extra` holds Grove's
 * own ranges (its branch subnet, every branch veth's /30, the host's own
 * addresses) so no branch reaches the helper's listeners or another branch.
 * The literal is parsed in every form the kernel or a resolver takes, and
 * judged by the address it reaches (address.ts).
 */
export function forbiddenReason(ip: string, extra: Cidr[]): string | null {
  const parsed = parseAddress(ip);
  if (!parsed) return null;
  const reached = effective(parsed);
  const shown = formatAddress(reached) === ip ? ip : `${ip} (${formatAddress(reached)})`;
  if (ALWAYS_FORBIDDEN.some((c) => inRange(reached, c))) return `${shown} is ${kindOfAddress(reached)}`;
  if (extra.some((c) => inRange(reached, c))) return `${shown} belongs to Grove or to this host`;
  return null;
}

/** The address text as the kernel reaches it: IPv4 dotted (from any literal form, mapped IPv6 included), IPv6 in eight groups; a name as it is, in lower case. */
export function normalizeIp(ip: string): string {
  return canonicalAddress(ip) ?? ip.toLowerCase();
}

export function inCidr(ip: string, cidr: Cidr): boolean {
  const a = parseAddress(ip);
  return a !== null && inRange(a, cidr);
}
