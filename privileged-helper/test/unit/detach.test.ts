import { describe, expect, it } from 'vitest';
import { helperCgroupName, parseMemberships } from '../../src/host/detach.js';

describe("the helper's cgroups", () => {
  it('reads the v1 hierarchies a process is in, by their directory, and leaves v2 to systemd', () => {
    const procCgroup = '9:name=systemd:/\n8:pids:/\n4:memory:/process_api/336cc\n2:cpu,cpuacct:/user.slice\n0::/\n';
    expect(parseMemberships(procCgroup)).toEqual([
      { hierarchy: 'systemd', path: '/' },
      { hierarchy: 'pids', path: '/' },
      { hierarchy: 'memory', path: '/process_api/336cc' },
      { hierarchy: 'cpu,cpuacct', path: '/user.slice' },
    ]);
  });

  it('names its own groups beside, not under, the instance’s branch groups', () => {
    expect(helperCgroupName('e8db')).toBe('grove-helper-e8db');
    expect(helperCgroupName('e8db').startsWith('grove-e8db')).toBe(false);
  });
});
