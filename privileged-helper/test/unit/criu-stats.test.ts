import { describe, expect, it } from 'vitest';
import { sourceFrozenMs } from '../../src/host/criu/criu-stats.js';

/** stats-dump of a fork of the desktop on this host (CRIU 4.2.1): freezing 30566 µs, frozen 889256 µs. */
const REAL = '40591055063309572e0000000a2c08e6ee0110a8a33618bd9e0f20d7b10528cfe403300038f5b7034000480050ce0158ce0160fc2d680070d217';

describe('sourceFrozenMs (CRIU stats-dump)', () => {
  it('adds the time to seize the tree and the time it stayed frozen', () => {
    expect(sourceFrozenMs(Buffer.from(REAL, 'hex'))).toBe(920);
  });

  it('is null for a missing, short or foreign file rather than a wrong number', () => {
    expect(sourceFrozenMs(Buffer.alloc(0))).toBeNull();
    expect(sourceFrozenMs(Buffer.from('4059105506330957020000001200', 'hex'))).toBeNull(); // an entry without dump stats
  });

  it('refuses a truncated entry', () => {
    expect(() => sourceFrozenMs(Buffer.from(REAL.slice(0, 40), 'hex'))).toThrow(/truncated/);
  });
});
