import { formatRule, parseRule } from '../../src/protocol/egress-rules.js';
import { describe, expect, it } from 'vitest';
import {
  decide,
  DEFAULT_POLICY,
  editAllowList,
  forbiddenReason,
  inCidr,
  isMutating,
  normalizeIp,
  parseCidr,
  parseHostsMap,
  ruleMatches,
} from '../../src/egress/policy.js';
import { parseDropCounters } from '../../src/egress/counters.js';
import { proxyFiles } from '../../src/egress/workspace-config.js';
import type { EgressPolicy } from '../../src/protocol/entities.js';

const policy = (over: Partial<EgressPolicy>): EgressPolicy => ({ ...DEFAULT_POLICY, ...over });

describe('parseRule', () => {
  it.each([
    ['example.com', { host: 'example.com' }],
    ['Example.COM:443', { host: 'example.com', port: 443 }],
    ['*.example.com:80', { host: '*.example.com', port: 80 }],
    ['10.218.0.2', { host: '10.218.0.2' }],
    ['10.218.0.2:8080', { host: '10.218.0.2', port: 8080 }],
    ['2001:db8::1', { host: '2001:db8::1' }],
    ['[2001:db8::1]:443', { host: '2001:db8::1', port: 443 }],
  ])('%s', (text, rule) => {
    expect(parseRule(text)).toEqual(rule);
    expect(parseRule(formatRule(rule))).toEqual(rule);
  });

  it.each(['', 'a b', 'host:0', 'host:70000', '-bad.com', 'x..y', 'http://x.com', '*.', 'a/b'])('refuses %j', (text) => {
    expect(() => parseRule(text)).toThrow();
  });
});

describe('ruleMatches', () => {
  it('matches names case-insensitively, with or without a port', () => {
    expect(ruleMatches({ host: 'outside.test' }, 'OUTSIDE.test', 8080)).toBe(true);
    expect(ruleMatches({ host: 'outside.test', port: 80 }, 'outside.test', 80)).toBe(true);
    expect(ruleMatches({ host: 'outside.test', port: 80 }, 'outside.test', 443)).toBe(false);
    expect(ruleMatches({ host: 'outside.test' }, 'evil-outside.test', 80)).toBe(false);
    expect(ruleMatches({ host: 'outside.test' }, 'sub.outside.test', 80)).toBe(false);
  });

  it('matches subdomains for *. but not the bare domain or look-alikes', () => {
    const r = { host: '*.example.com' };
    expect(ruleMatches(r, 'a.example.com', 443)).toBe(true);
    expect(ruleMatches(r, 'a.b.example.com', 443)).toBe(true);
    expect(ruleMatches(r, 'example.com', 443)).toBe(false);
    expect(ruleMatches(r, 'badexample.com', 443)).toBe(false);
  });

  it('matches IPs only as IPs (never a name to an IP rule without resolving)', () => {
    expect(ruleMatches({ host: '10.218.0.2' }, '10.218.0.2', 80)).toBe(true);
    expect(ruleMatches({ host: '10.218.0.2' }, 'outside.test', 80)).toBe(false);
    expect(ruleMatches({ host: '2001:db8::1' }, '2001:0db8:0:0:0:0:0:1', 80)).toBe(true);
  });
});

describe('decide', () => {
  const get = (host: string, port = 80, method = 'GET') => ({ host, port, method });

  it('denies everything in deny mode, the allow list included', () => {
    const p = policy({ mode: 'deny', allow: [{ host: 'outside.test' }] });
    expect(decide(p, get('outside.test')).action).toBe('deny');
    expect(decide(DEFAULT_POLICY, get('outside.test'))).toMatchObject({ action: 'deny', reason: expect.stringContaining('deny') });
  });

  it('passes the allow list and refuses the rest in allow mode', () => {
    const p = policy({ mode: 'allow', allow: [{ host: 'outside.test', port: 80 }] });
    expect(decide(p, get('outside.test'))).toEqual({ action: 'allow' });
    expect(decide(p, get('outside.test', 443, 'CONNECT'))).toMatchObject({ action: 'deny', reason: expect.stringContaining('outside.test:443') });
    expect(decide(p, get('other.test')).action).toBe('deny');
  });

  it('holds destinations off the list in gate mode', () => {
    const p = policy({ mode: 'gate', allow: [{ host: 'outside.test' }] });
    expect(decide(p, get('outside.test'))).toEqual({ action: 'allow' });
    expect(decide(p, get('other.test'))).toEqual({ action: 'hold', reason: 'destination' });
    expect(decide(p, get('other.test', 443, 'CONNECT'))).toEqual({ action: 'hold', reason: 'destination' });
  });

  it('holds mutating plain-HTTP requests to allowed destinations under holdMutating', () => {
    for (const mode of ['allow', 'gate'] as const) {
      const p = policy({ mode, allow: [{ host: 'outside.test' }], holdMutating: true });
      expect(decide(p, get('outside.test', 80, 'GET'))).toEqual({ action: 'allow' });
      expect(decide(p, get('outside.test', 80, 'HEAD'))).toEqual({ action: 'allow' });
      expect(decide(p, get('outside.test', 80, 'POST'))).toEqual({ action: 'hold', reason: 'mutating' });
      expect(decide(p, get('outside.test', 80, 'delete'))).toEqual({ action: 'hold', reason: 'mutating' });
      expect(decide(p, get('outside.test', 443, 'CONNECT'))).toEqual({ action: 'allow' });
    }
    expect(isMutating('PUT')).toBe(true);
    expect(isMutating('OPTIONS')).toBe(false);
  });
});

describe('editAllowList', () => {
  it('adds without duplicates and removes by host (all ports) or host:port', () => {
    let list = editAllowList([], [{ host: 'a.test' }, { host: 'b.test', port: 80 }, { host: 'b.test', port: 443 }], []);
    list = editAllowList(list, [{ host: 'a.test' }], []);
    expect(list).toEqual([{ host: 'a.test' }, { host: 'b.test', port: 80 }, { host: 'b.test', port: 443 }]);
    expect(editAllowList(list, [], [{ host: 'b.test', port: 80 }])).toEqual([{ host: 'a.test' }, { host: 'b.test', port: 443 }]);
    expect(editAllowList(list, [], [{ host: 'b.test' }])).toEqual([{ host: 'a.test' }]);
  });
});

describe('addresses the gate refuses', () => {
  const grove = [parseCidr('10.215.0.0/16'), parseCidr('10.214.0.0/30')];

  it.each(['127.0.0.1', '127.8.9.10', '0.0.0.0', '169.254.77.1', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', '::ffff:127.0.0.1'])(
    'refuses %s always',
    (ip) => expect(forbiddenReason(ip, [])).not.toBeNull(),
  );

  it("refuses Grove's subnet and other branches' /30s, also written as IPv4-mapped IPv6", () => {
    expect(forbiddenReason('10.215.3.2', grove)).toMatch(/Grove/);
    expect(forbiddenReason('10.214.0.2', grove)).toMatch(/Grove/);
    expect(forbiddenReason('::ffff:10.215.0.1', grove)).toMatch(/Grove/);
    expect(forbiddenReason('10.214.0.6', grove)).toBeNull();
    expect(forbiddenReason('10.218.0.2', grove)).toBeNull();
    expect(forbiddenReason('2001:db8::1', grove)).toBeNull();
  });

  it('normalizes and compares addresses', () => {
    expect(normalizeIp('::FFFF:10.1.2.3')).toBe('10.1.2.3');
    expect(normalizeIp('2001:db8::1')).toBe('2001:db8:0:0:0:0:0:1');
    expect(inCidr('2001:db8::ff', parseCidr('2001:db8::/32'))).toBe(true);
    expect(inCidr('2001:db9::ff', parseCidr('2001:db8::/32'))).toBe(false);
    expect(inCidr('10.0.0.1', parseCidr('2001:db8::/32'))).toBe(false);
  });
});

describe('parseHostsMap', () => {
  it('reads name=ip pairs and refuses anything else', () => {
    expect([...parseHostsMap('outside.test=10.218.0.2, Other.Test=10.218.0.6')]).toEqual([
      ['outside.test', '10.218.0.2'],
      ['other.test', '10.218.0.6'],
    ]);
    expect(parseHostsMap(undefined).size).toBe(0);
    expect(() => parseHostsMap('outside.test=not-an-ip')).toThrow(/name=ip/);
  });
});

describe('drop counters', () => {
  it('reads the named counters of the grove table from nft -j', () => {
    const json = JSON.stringify({
      nftables: [
        { metainfo: { version: '1.0.6' } },
        { counter: { family: 'inet', name: 'dropped_tcp', table: 'grove', handle: 3, packets: 4, bytes: 240 } },
        { counter: { family: 'inet', name: 'dropped_udp', table: 'grove', handle: 4, packets: 1, bytes: 29 } },
        { counter: { family: 'inet', name: 'dropped_other', table: 'grove', handle: 5, packets: 0, bytes: 0 } },
        { counter: { family: 'inet', name: 'dropped_tcp', table: 'other', handle: 9, packets: 99, bytes: 0 } },
      ],
    });
    expect(parseDropCounters(json)).toEqual({ tcp: 4, udp: 1, other: 0 });
  });
});

describe('proxy configuration of a branch', () => {
  it('adds grove-gate to /etc/hosts once, keeping the identity lines, and sets the proxy for shells, PAM and Chromium', () => {
    const hosts = '127.0.0.1\tlocalhost\n127.0.1.1\talpha\n';
    const once = proxyFiles(hosts, '');
    const twice = proxyFiles(once['etc/hosts']!, once['etc/environment']!);
    expect(twice).toEqual(once);
    expect(once['etc/hosts']).toBe('127.0.0.1\tlocalhost\n127.0.1.1\talpha\n169.254.77.1\tgrove-gate\t# grove-egress\n');
    expect(once['etc/environment']).toContain('https_proxy=http://grove-gate:3128');
    expect(once['etc/profile.d/grove-proxy.sh']).toContain('export HTTP_PROXY=http://grove-gate:3128');
    expect(once['etc/profile.d/grove-proxy.sh']).toContain('export no_proxy=localhost,127.0.0.1,::1');
    expect(once['etc/chromium.d/grove-proxy']).toContain('CHROMIUM_FLAGS="$CHROMIUM_FLAGS --proxy-server=http://grove-gate:3128"');
  });
});
