import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_NET_INDEX, nameserversIn, netnsPath, planNetwork } from '../../src/host/netns.js';

/** An IPv4 dotted quad as a 32-bit unsigned integer, or NaN if it is not one. */
function toInt(addr: string): number {
  const parts = addr.split('.').map((p) => (/^\d{1,3}$/.test(p) && Number(p) <= 255 ? Number(p) : Number.NaN));
  return parts.length === 4 ? parts.reduce((acc, p) => acc * 256 + p, 0) : Number.NaN;
}

describe('planNetwork', () => {
  const SUBNET = '10.77.0.0';

  it('gives index 0 the first /30: host .1, container .2', () => {
    const plan = planNetwork('abcd', '0123abcd', SUBNET, 0);
    expect(plan).toEqual({
      netns: 'grove-abcd-0123abcd',
      hostVeth: 'gvabcd0123abcd',
      hostAddress: '10.77.0.1',
      containerAddress: '10.77.0.2',
      containerMac: '02:67:00:00:00:00',
    });
  });

  it('carries into the third octet: index 63 is the last /30 of x.y.0.0/24, 64 the first of x.y.1.0/24', () => {
    expect(planNetwork('abcd', '0123abcd', SUBNET, 63)).toMatchObject({ hostAddress: '10.77.0.253', containerAddress: '10.77.0.254' });
    expect(planNetwork('abcd', '0123abcd', SUBNET, 64)).toMatchObject({ hostAddress: '10.77.1.1', containerAddress: '10.77.1.2' });
  });

  it('puts the last index, 16383, at the top of the /16', () => {
    expect(MAX_NET_INDEX).toBe(16383);
    expect(planNetwork('abcd', '0123abcd', SUBNET, MAX_NET_INDEX)).toMatchObject({
      hostAddress: '10.77.255.253',
      containerAddress: '10.77.255.254',
    });
  });

  it('uses only the first two octets of the subnet', () => {
    expect(planNetwork('abcd', '0123abcd', '172.31.9.9', 5)).toMatchObject({ hostAddress: '172.31.0.21', containerAddress: '172.31.0.22' });
  });

  it('places both ends of each index inside its own /30, never a network or broadcast address, with no overlap', () => {
    const base = toInt('10.77.0.0');
    const seen = new Set<number>();
    const wrong: string[] = [];
    for (let i = 0; i <= MAX_NET_INDEX; i++) {
      const { hostAddress, containerAddress } = planNetwork('abcd', '0123abcd', SUBNET, i);
      const host = toInt(hostAddress);
      const container = toInt(containerAddress);
      const block = base + i * 4; // the /30's network address; block + 3 is its broadcast
      if (host !== block + 1 || container !== block + 2) wrong.push(`${i}: ${hostAddress} ${containerAddress}`);
      // Each index owns its block alone, so consecutive indexes never overlap.
      const owner = Math.floor((host - base) / 4);
      if (seen.has(owner)) wrong.push(`${i}: block ${owner} reused`);
      seen.add(owner);
    }
    expect(wrong).toEqual([]);
    expect(seen.size).toBe(MAX_NET_INDEX + 1);
  });

  it('keeps the host veth name within IFNAMSIZ (15 characters) for a 4-character instance', () => {
    const plan = planNetwork('t9z1', 'ffffffff', SUBNET, 1);
    expect(plan.hostVeth.length).toBeLessThanOrEqual(15);
    expect(plan.hostVeth).toMatch(/^[a-z0-9]+$/);
    // Distinct workspaces get distinct interface names.
    expect(planNetwork('t9z1', 'fffffffe', SUBNET, 2).hostVeth).not.toBe(plan.hostVeth);
  });

  it('gives each branch a MAC address of its own, made of its network index', () => {
    expect(planNetwork('abcd', '0123abcd', SUBNET, 1).containerMac).toBe('02:67:00:00:00:01');
    expect(planNetwork('abcd', '0123abcd', SUBNET, MAX_NET_INDEX).containerMac).toBe('02:67:00:00:3f:ff');
  });

  it.each([[-1], [MAX_NET_INDEX + 1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY]])('refuses index %s', (index) => {
    expect(() => planNetwork('abcd', '0123abcd', SUBNET, index)).toThrow(/out of range/);
  });

  it('maps a namespace name to its bind-mount path', () => {
    expect(netnsPath(planNetwork('abcd', '0123abcd', SUBNET, 0).netns)).toBe('/run/netns/grove-abcd-0123abcd');
  });
});

describe('nameserversIn', () => {
  it("finds the host's IPv4 name servers inside a subnet, and only those", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'grove-resolv-'));
    const conf = path.join(dir, 'resolv.conf');
    writeFileSync(conf, '# comment\nnameserver 10.255.255.53\nnameserver 192.0.2.1\nnameserver fd00::53\nsearch example\n');
    try {
      expect(await nameserversIn('10.255.0.0/16', conf)).toEqual(['10.255.255.53']);
      expect(await nameserversIn('10.215.0.0/16', conf)).toEqual([]);
      expect(await nameserversIn('10.25.0.0/16', conf)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
