import { describe, expect, it } from 'vitest';
import { dumpStats, restoreStats } from '../../src/host/criu/criu-stats.js';

/** stats-dump of a fork of the desktop on this host (CRIU 4.2.1): freezing 30566 µs, frozen 889256 µs. */
const REAL = '40591055063309572e0000000a2c08e6ee0110a8a33618bd9e0f20d7b10528cfe403300038f5b7034000480050ce0158ce0160fc2d680070d217';

describe('the source frozen (CRIU stats-dump)', () => {
  it('adds the time to seize the tree and the time it stayed frozen', () => {
    expect(dumpStats(Buffer.from(REAL, 'hex'))?.sourceFrozenMs).toBe(920);
  });

  it('is null for a missing, short or foreign file rather than a wrong number', () => {
    expect(dumpStats(Buffer.alloc(0))).toBeNull();
    expect(dumpStats(Buffer.from('4059105506330957020000001200', 'hex'))).toBeNull(); // an entry without dump stats
  });

  it('refuses a truncated entry', () => {
    expect(() => dumpStats(Buffer.from(REAL.slice(0, 40), 'hex'))).toThrow(/truncated/);
  });
});

/** A stats file as CRIU writes one: two magics, a length, a StatsEntry with `field` holding these varints. */
function statsFile(field: number, values: Record<number, number>): Buffer {
  const varint = (n: number) => {
    const out: number[] = [];
    for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
    return [...out, n];
  };
  const inner = Object.entries(values).flatMap(([f, v]) => [...varint(Number(f) * 8), ...varint(v)]);
  const entry = Buffer.from([...varint(field * 8 + 2), ...varint(inner.length), ...inner]);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(entry.length);
  return Buffer.concat([Buffer.from('4059105506330957', 'hex'), len, entry]);
}

describe('dumpStats and restoreStats', () => {
  it('read every measure of a real dump', () => {
    expect(dumpStats(Buffer.from(REAL, 'hex'))).toMatchObject({
      sourceFrozenMs: 920,
      freezingMs: 31,
      memdumpMs: expect.any(Number),
      pagesWritten: expect.any(Number),
    });
  });

  it('read a restore: forking, restore time and pages', () => {
    const file = statsFile(2, { 1: 0, 2: 0, 3: 41_500, 4: 612_300, 5: 58_000 });
    expect(restoreStats(file)).toEqual({ forkingMs: 42, restoreMs: 612, pagesRestored: 58_000 });
    expect(dumpStats(file)).toBeNull();
    expect(restoreStats(Buffer.from(REAL, 'hex'))).toBeNull();
  });
});
