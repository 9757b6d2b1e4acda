// The gate's address check is a parser (egress/address.ts): every literal form
// of an address is judged by the address the kernel would reach.
import { describe, expect, it } from 'vitest';
import { canonicalAddress, describeAddress, effective, formatAddress, parseAddress } from '../../src/egress/address.js';
import { forbiddenReason, parseCidr } from '../../src/egress/policy.js';

const LOOPBACK_FORMS = [
  '127.0.0.1',
  '127.1',
  '0x7f.1',
  '0x7f000001',
  '2130706433',
  '017700000001',
  '0177.0.0.1',
  '127.0.1',
  '::ffff:127.0.0.1',
  '[::ffff:127.0.0.1]',
  '::ffff:7f00:1',
  '[::ffff:7f00:1]',
  '0:0:0:0:0:ffff:7f00:0001',
  '::127.0.0.1',
  '::7f00:1',
  '64:ff9b::7f00:1',
  '64:ff9b::127.0.0.1',
  '64:ff9b:1::7f00:1',
  '2002:7f00:1::',
  '::1',
  '0:0:0:0:0:0:0:1',
  '[::1]',
  'fe80::1%eth0',
];

describe('parseAddress and effective', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.01', '127.0.0.1'],
    ['10.1.256', '10.1.1.0'],
    ['[::ffff:7f00:1]', '127.0.0.1'],
    ['::ffff:c000:202', '192.0.2.2'],
    ['64:ff9b::c000:202', '192.0.2.2'],
    ['2002:c000:0202::1', '192.0.2.2'],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['FE80::0001%eth0', 'fe80:0:0:0:0:0:0:1'],
    ['2001:db8::1', '2001:db8:0:0:0:0:0:1'],
  ])('reads %s as the address it reaches, %s', (text, reached) => {
    expect(canonicalAddress(text)).toBe(reached);
  });

  it.each(['example.com', 'a.b.c.d.e', '1.2.3.4.5', '256.1.1.1', '08.1.1.1', '0x', '1..1', '::ffff:1.2.3', 'grove-gate', ''])(
    'takes %s for a name, not an address',
    (text) => {
      expect(parseAddress(text)).toBeNull();
    },
  );

  it('takes a zone id off whole, from its first %, though it holds colons itself (a fuzz find: it threw)', () => {
    expect(canonicalAddress('fe80::1%a:b:c:d:e:f:g:h::%1')).toBe('fe80:0:0:0:0:0:0:1');
    expect(canonicalAddress('fe80::1%a:b::%1')).toBe('fe80:0:0:0:0:0:0:1');
  });

  it('normalizes once and for all: the canonical text of a canonical text is itself (random addresses in every form)', () => {
    let seed = 42;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const forms = (b: number[]) => [
      b.join('.'),
      String(((b[0]! << 24) >>> 0) + (b[1]! << 16) + (b[2]! << 8) + b[3]!),
      `0x${b[0]!.toString(16)}.${b[1]}.${(b[2]! << 8) + b[3]!}`,
      `::ffff:${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`,
      `[::ffff:${b.join('.')}]`,
      `64:ff9b::${b.join('.')}`,
    ];
    for (let i = 0; i < 2000; i++) {
      const bytes = [rand(256), rand(256), rand(256), rand(256)];
      const canon = forms(bytes).map((f) => canonicalAddress(f));
      expect(new Set(canon).size, forms(bytes).join(' ')).toBe(1);
      expect(canonicalAddress(canon[0]!)).toBe(canon[0]);
      const v6 = Array.from({ length: 8 }, () => rand(0x10000).toString(16)).join(':');
      const once = canonicalAddress(v6)!;
      expect(canonicalAddress(once)).toBe(once);
      expect(formatAddress(effective(parseAddress(once)!))).toBe(once);
    }
  });
});

describe('the gate refuses, before asking anyone', () => {
  const grove = [parseCidr('10.215.0.0/16'), parseCidr('192.0.2.2/32')];

  it.each(LOOPBACK_FORMS)("%s: this machine's loopback, in any form", (form) => {
    expect(forbiddenReason(form, grove)).toMatch(/loopback|link-local/);
  });

  it.each(['::ffff:10.215.0.1', '[::ffff:ad7:1]', '0xa.0xd7.0.1', '::ffff:c000:202', '64:ff9b::192.0.2.2'])("%s: Grove's or the host's own", (form) => {
    expect(forbiddenReason(form, grove)).toMatch(/belongs to Grove or to this host/);
  });

  it('says the address it reaches when the form hides it', () => {
    expect(forbiddenReason('[::ffff:7f00:1]', grove)).toBe("[::ffff:7f00:1] (127.0.0.1) is this machine's loopback");
    expect(forbiddenReason('224.0.0.1', grove)).toBe('224.0.0.1 is a multicast address');
    expect(forbiddenReason('255.255.255.255', grove)).toBe('255.255.255.255 is the broadcast address');
  });

  it('lets an ordinary outside address be asked about', () => {
    expect(forbiddenReason('198.51.100.7', grove)).toBeNull();
    expect(forbiddenReason('2001:db8::7', grove)).toBeNull();
    expect(forbiddenReason('example.com', grove)).toBeNull();
  });
});

describe('what a person is shown of an address literal', () => {
  it.each([
    ['[::ffff:c000:207]', '192.0.2.7', 'a documentation address (reaches nothing real)'],
    ['0xa.1', '10.0.0.1', 'a private network address'],
    ['2886729729', '172.16.0.1', 'a private network address'],
    ['::ffff:c0a8:101', '192.168.1.1', 'a private network address'],
    ['fd12::1', 'fd12:0:0:0:0:0:0:1', 'a private network address (unique local)'],
    ['100.100.1.1', '100.100.1.1', "a carrier-grade NAT address (an ISP's private network)"],
    ['64:ff9b::808:808', '8.8.8.8', 'a public address'],
    ['2606:4700::1111', '2606:4700:0:0:0:0:0:1111', 'a public address'],
  ])('%s reaches %s, %s', (literal, reached, what) => {
    expect(describeAddress(literal)).toEqual({ reached, what });
  });

  it('says nothing of a host name: what it resolves to is judged when it connects', () => {
    expect(describeAddress('example.com')).toBeNull();
  });
});
