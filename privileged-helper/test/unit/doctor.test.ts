import { describe, expect, it } from 'vitest';
import { versionAtLeast } from '../../src/host/doctor.js';

describe('versionAtLeast', () => {
  it.each([
    ['4.2', [4, 2]],
    ['4.2.0', [4, 2]],
    ['4.2.1', [4, 2]],
    ['4.10', [4, 2]], // numeric, not lexicographic
    ['5.0', [4, 2]],
    ['10', [4, 2]],
    ['4.2', [4, 2, 0]], // missing parts count as 0
    ['4.2-rc1', [4, 2]], // a suffix on a part is ignored
    ['3.19.1', [3, 19]],
    ['0.0.1', []],
  ] as const)('%s is at least %j', (version, min) => {
    expect(versionAtLeast(version, min)).toBe(true);
  });

  it.each([
    ['4.1', [4, 2]],
    ['4.1.99', [4, 2]],
    ['3.19', [4, 2]],
    ['3.99.99', [4, 2]],
    ['4', [4, 2]],
    ['4.2', [4, 2, 1]],
    ['1.10', [1, 11]], // numeric: 10 < 11
  ] as const)('%s is below %j', (version, min) => {
    expect(versionAtLeast(version, min)).toBe(false);
  });

  it('refuses versions it cannot read rather than passing them', () => {
    expect(versionAtLeast('v4.2', [4, 2])).toBe(false);
    expect(versionAtLeast('', [4, 2])).toBe(false);
    expect(versionAtLeast('unknown', [4, 2])).toBe(false);
  });
});
