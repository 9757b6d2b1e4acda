// What a fetched image unpacks to, counted before anything is unpacked: a
// tar bomb (a little gzip that unpacks to much) is stopped as soon as it
// passes the room there is, without being read to its end.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { unpackedBytes } from '../../src/images/unpacked-size.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-layout-'));
  mkdirSync(path.join(dir, 'blobs/sha256'), { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function blob(data: Buffer | string): { digest: string; size: number } {
  const bytes = Buffer.from(data);
  const hex = createHash('sha256').update(bytes).digest('hex');
  writeFileSync(path.join(dir, 'blobs/sha256', hex), bytes);
  return { digest: `sha256:${hex}`, size: bytes.length };
}

function layout(layers: { mediaType: string; data: Buffer }[]): void {
  const manifest = blob(JSON.stringify({ schemaVersion: 2, layers: layers.map((l) => ({ mediaType: l.mediaType, ...blob(l.data) })) }));
  writeFileSync(path.join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest }] }));
}

const GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
const TAR = 'application/vnd.oci.image.layer.v1.tar';

describe('unpackedBytes', () => {
  it('sums what gzip and plain layers unpack to', async () => {
    layout([
      { mediaType: GZIP, data: gzipSync(Buffer.alloc(300_000, 7)) },
      { mediaType: TAR, data: Buffer.alloc(10_240) },
    ]);
    expect(await unpackedBytes(dir, 10 ** 9)).toBe(310_240);
  });

  it('stops at the limit: a small layer that unpacks to 64 MiB is over 1 MiB of room', async () => {
    const bomb = gzipSync(Buffer.alloc(64 << 20));
    expect(bomb.length).toBeLessThan(1 << 20);
    layout([{ mediaType: GZIP, data: bomb }]);
    expect(await unpackedBytes(dir, 1 << 20)).toBe((1 << 20) + 1);
  });

  it('refuses a digest that is not sha256 hex (no path out of the layout)', async () => {
    writeFileSync(path.join(dir, 'index.json'), JSON.stringify({ manifests: [{ digest: 'sha256:../../../etc/passwd', size: 1 }] }));
    await expect(unpackedBytes(dir, 100)).rejects.toThrow(/unsupported digest/);
  });

  it('refuses a layer that is not what its media type says', async () => {
    layout([{ mediaType: GZIP, data: Buffer.from('not gzip at all') }]);
    await expect(unpackedBytes(dir, 100)).rejects.toThrow(/could not be read/);
  });
});
