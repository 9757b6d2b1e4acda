import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { groveFile } from '../../src/protocol/grove-files.js';

interface Pin {
  name: string;
  version: string;
  hashes: string[];
}

/** The lock file's requirements, each with its continuation lines joined. */
function readPins(text: string): Pin[] {
  const requirements = text
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  return requirements.map((requirement) => {
    const [spec = '', ...options] = requirement.split(/\s+/);
    const pin = /^([a-z0-9][a-z0-9._-]*)==([\w.+!-]+)$/i.exec(spec);
    if (!pin) throw new Error(`not an exact pin: ${requirement}`);
    const hashes = options.map((option) => {
      const hash = /^--hash=sha256:([0-9a-f]{64})$/.exec(option);
      if (!hash) throw new Error(`not a sha256 hash in ${pin[1]}'s line: ${option}`);
      return hash[1]!;
    });
    return { name: pin[1]!.toLowerCase(), version: pin[2]!, hashes };
  });
}

describe("Selkies's lock file", () => {
  const pins = readPins(readFileSync(groveFile('build/host/selkies/requirements.lock'), 'utf8'));

  it('pins every package to one version and at least one sha256', () => {
    expect(pins.length).toBeGreaterThan(10);
    for (const pin of pins) expect(pin.hashes.length, pin.name).toBeGreaterThan(0);
    expect(new Set(pins.map((p) => p.name)).size).toBe(pins.length);
  });

  it('holds the versions Grove is written for', () => {
    const version = (name: string) => pins.find((p) => p.name === name)?.version;
    expect(version('selkies')).toBe('2.1.0');
    expect(version('pixelflux')).toBe('2.2.1');
  });

  it('refuses a line without a hash or a loose pin', () => {
    expect(() => readPins('aiohttp==3.14.5 \\\n    --hash=md5:abc\n')).toThrow(/sha256/);
    expect(() => readPins('aiohttp>=3.14\n')).toThrow(/exact pin/);
    expect(readPins('aiohttp==3.14.5\n')[0]!.hashes).toEqual([]);
  });
});
