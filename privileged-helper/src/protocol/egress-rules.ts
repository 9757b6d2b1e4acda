// Allow-list rules as people write and read them ("host", "host:port",
// "[v6]:port", "*.example.com:443"), for every side: the helper, the CLI and
// the renderer (so no Node imports here).
import type { EgressChange, EgressRule } from './entities.js';

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** An IPv4 or IPv6 address literal (IPv6 without brackets). */
export function isIpLiteral(host: string): boolean {
  if (IPV4.test(host)) return true;
  if (!host.includes(':') || !/^[0-9a-f:.]+$/i.test(host)) return false;
  try {
    new URL(`http://[${host}]/`); // the WHATWG URL parser validates IPv6 the same way in Node and browsers
    return true;
  } catch {
    return false;
  }
}

/** A host name, a '*.' suffix pattern, or an IP literal. */
export function isHostPattern(host: string): boolean {
  if (isIpLiteral(host)) return true;
  const name = host.startsWith('*.') ? host.slice(2) : host;
  return name.length > 0 && name.length <= 253 && name.split('.').every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(l));
}

/** "host", "host:port", "[v6]:port", "*.example.com:443" → a rule; throws on anything else. */
export function parseRule(text: string): EgressRule {
  const t = text.trim().toLowerCase();
  let host = t;
  let port: number | undefined;
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d+))?$/.exec(t);
  if (bracketed) {
    host = bracketed[1]!;
    port = bracketed[2] === undefined ? undefined : Number(bracketed[2]);
  } else if (!isIpLiteral(t)) {
    const m = /^(.*):(\d+)$/.exec(t);
    if (m) {
      host = m[1]!;
      port = Number(m[2]);
    }
  }
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) throw new Error(`not a port in '${text}'`);
  if (!isHostPattern(host)) throw new Error(`not a host name or IP address: '${text}'`);
  return port === undefined ? { host } : { host, port };
}

export function formatRule(r: EgressRule): string {
  const host = r.host.includes(':') ? `[${r.host}]` : r.host;
  return r.port === undefined ? host : `${host}:${r.port}`;
}

/** A policy change in words: 'mode gate, allow example.org:443, hold mutating requests'. */
export function describeEgressChange(c: EgressChange): string {
  const parts: string[] = [];
  if (c.mode) parts.push(`mode ${c.mode}`);
  if (c.allow?.length) parts.push(`allow ${c.allow.map(formatRule).join(' ')}`);
  if (c.remove?.length) parts.push(`remove ${c.remove.map(formatRule).join(' ')}`);
  if (c.holdMutating !== undefined) parts.push(c.holdMutating ? 'hold mutating requests' : 'do not hold mutating requests');
  return parts.join(', ') || 'no change';
}
