import { describe, expect, it } from 'vitest';
import { isFull } from '../../src/host/disk-quota.js';

const MiB = 2 ** 20;

describe('a branch whose disk limit is full', () => {
  it('has less than 1 MiB, or 1 % of its limit, left: a write reserves its size before it is charged', () => {
    expect(isFull(0, 64 * MiB)).toBe(false);
    expect(isFull(63 * MiB, 64 * MiB)).toBe(false);
    expect(isFull(63 * MiB + 1, 64 * MiB)).toBe(true);
    expect(isFull(64 * MiB, 64 * MiB)).toBe(true);
    expect(isFull(10 * 1024 * MiB - 103 * MiB, 10 * 1024 * MiB)).toBe(false);
    expect(isFull(10 * 1024 * MiB - 102 * MiB, 10 * 1024 * MiB)).toBe(true);
    // Lowered below what it holds already.
    expect(isFull(200 * MiB, 64 * MiB)).toBe(true);
  });
});
