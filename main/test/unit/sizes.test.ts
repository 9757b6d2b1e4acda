import { describe, expect, it } from 'vitest';
import { diskText, sizeText } from '../../src/api/words.js';
import { parseSize } from '../../src/cli/sizes.js';

describe('a size typed on the command line', () => {
  it('is bytes in powers of 1024, with or without i and B, any case', () => {
    expect(parseSize('10G')).toBe(10 * 2 ** 30);
    expect(parseSize('64M')).toBe(64 * 2 ** 20);
    expect(parseSize('64MiB')).toBe(64 * 2 ** 20);
    expect(parseSize('1536mb')).toBe(1536 * 2 ** 20);
    expect(parseSize(' 1.5g ')).toBe(1.5 * 2 ** 30);
    expect(parseSize('2T')).toBe(2 * 2 ** 40);
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('8k')).toBe(8192);
  });

  it('is refused in words when it is not one', () => {
    for (const text of ['', 'G', '-1G', '1e9', '10 GB of disk', '1,5G', '0x10', '10P']) {
      expect(() => parseSize(text), text).toThrow(/^not a size: .* \(e\.g\. 2G, 1536M\)$/);
    }
  });
});

describe('a size and a disk limit in words', () => {
  it('reads as a person would write it', () => {
    expect(sizeText(10 * 2 ** 30)).toBe('10 GiB');
    expect(sizeText(1.5 * 2 ** 30)).toBe('1.5 GiB');
    expect(sizeText(64 * 2 ** 20)).toBe('64 MiB');
    expect(sizeText(123.4 * 2 ** 20)).toBe('123 MiB');
    expect(sizeText(16384)).toBe('16 KiB');
    expect(sizeText(0)).toBe('0 KiB');
  });

  it('says what the limit counts, when writes fail, and when the pool does not enforce it', () => {
    const limits = { memoryBytes: 2 ** 31, pids: 2048, cpuWeight: 100, diskBytes: 64 * 2 ** 20 };
    expect(diskText({ limits, disk: { usedBytes: 5 * 2 ** 20, full: false } })).toBe('5 MiB of 64 MiB');
    expect(diskText({ limits, disk: { usedBytes: 64 * 2 ** 20 - 16384, full: true } })).toBe('64 MiB of 64 MiB — full: writes in it fail');
    expect(diskText({ limits, disk: null })).toBe('limit 64 MiB (not enforced: the pool has no quotas)');
  });
});
