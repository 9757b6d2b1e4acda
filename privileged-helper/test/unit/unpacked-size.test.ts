// What a fetched image unpacks to, counted before anything is unpacked: a
// tar bomb (a little gzip that unpacks to much) is stopped as soon as it
// passes the room there is, without being read to its end.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_LAYER_PATH_BYTES, unpackedBytes } from '../../src/images/unpacked-size.js';

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
  writeFileSync(
    path.join(dir, 'index.json'),
    JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest }] }),
  );
}

const GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
const TAR = 'application/vnd.oci.image.layer.v1.tar';
const ZSTD = 'application/vnd.oci.image.layer.v1.tar+zstd';

describe('unpackedBytes', () => {
  it('sums what gzip and plain layers unpack to: their tar streams', async () => {
    const big = tarOf(['big'], 300_000);
    const small = tarOf(['small']);
    layout([
      { mediaType: GZIP, data: gzipSync(big) },
      { mediaType: TAR, data: small },
    ]);
    expect(await unpackedBytes(dir, 10 ** 9)).toBe(big.length + small.length);
  });

  it('counts a layer of several MiB by its size, in room just above it', async () => {
    const layer = tarOf(['a', 'b', 'c'], 3 << 20);
    layout([{ mediaType: GZIP, data: gzipSync(layer) }]);
    expect(await unpackedBytes(dir, layer.length + 4096)).toBe(layer.length);
  });

  it('stops at the limit: a small layer that unpacks to 64 MiB is over 1 MiB of room', async () => {
    const bomb = gzipSync(tarOf(['zeros'], 64 << 20));
    expect(bomb.length).toBeLessThan(1 << 20);
    layout([{ mediaType: GZIP, data: bomb }]);
    expect(await unpackedBytes(dir, 1 << 20)).toBe((1 << 20) + 1);
  });

  it('counts a sparse entry by what it is written out as, not by its few bytes in the stream', async () => {
    const files = mkdtempSync(path.join(os.tmpdir(), 'grove-sparse-'));
    try {
      execFileSync('truncate', ['--size', '1G', path.join(files, 'holes')]);
      execFileSync('tar', ['--create', '--sparse', '--file', path.join(dir, 'sparse.tar'), '--directory', files, 'holes']);
      const sparse = readFileSync(path.join(dir, 'sparse.tar'));
      expect(sparse.length).toBeLessThan(1 << 20);
      layout([{ mediaType: TAR, data: sparse }]);
      expect(await unpackedBytes(dir, 64 << 20)).toBe((64 << 20) + 1);
    } finally {
      rmSync(files, { recursive: true, force: true });
    }
  });

  it.each(['gzip', 'zstd'] as const)('leaves no tar, nor its decompressor, once it stops reading a %s tar bomb', async (compression) => {
    const header = tarOf(['zeros']).subarray(0, 512);
    header.write(((256 << 20).toString(8) + '\0').padStart(12, '0'), 124, 'ascii'); // the size field: 256 MiB
    header.write('        ', 148, 'ascii');
    header.write((header.reduce((sum, b) => sum + b, 0).toString(8) + '\0 ').padStart(8, '0'), 148, 'ascii');
    const bomb = Buffer.concat([header, Buffer.alloc(256 << 20)]);
    const data = compression === 'gzip' ? gzipSync(bomb) : execFileSync('zstd', ['-c', '-q'], { input: bomb, maxBuffer: 64 << 20 });
    layout([{ mediaType: compression === 'gzip' ? GZIP : ZSTD, data }]);
    const before = programsNamed('zstd');
    expect(await unpackedBytes(dir, 1 << 20)).toBe((1 << 20) + 1);
    expect(tarsOfOurs()).toEqual([]);
    expect(programsNamed('zstd').filter((pid) => !before.includes(pid))).toEqual([]);
    // The pull removes the blob next: a descriptor still on it would keep its blocks in the pool.
    expect(descriptorsOn(dir)).toEqual([]);
  });

  it('sums what a zstd layer unpacks to', async () => {
    const layer = tarOf(['z'], 100_000);
    layout([{ mediaType: ZSTD, data: execFileSync('zstd', ['-c', '-q'], { input: layer }) }]);
    expect(await unpackedBytes(dir, 10 ** 9)).toBe(layer.length);
  });

  it('refuses a digest that is not sha256 hex (no path out of the layout)', async () => {
    writeFileSync(path.join(dir, 'index.json'), JSON.stringify({ manifests: [{ digest: 'sha256:../../../etc/passwd', size: 1 }] }));
    await expect(unpackedBytes(dir, 100)).rejects.toThrow(/unsupported digest/);
  });

  it('refuses a layer that is not what its media type says', async () => {
    layout([{ mediaType: GZIP, data: Buffer.from('not gzip at all') }]);
    await expect(unpackedBytes(dir, 100)).rejects.toThrow(/could not be read/);
  });

  it("refuses a gzip layer whose stream is damaged, in the decompressor's words", async () => {
    const good = gzipSync(tarOf(['a'], 200_000));
    const damaged = Buffer.concat([good.subarray(0, 40), Buffer.alloc(64, 0xff), good.subarray(104)]);
    layout([{ mediaType: GZIP, data: damaged }]);
    await expect(unpackedBytes(dir, 10 ** 9)).rejects.toThrow(/could not be read: .+/);
  });

  it('refuses a layer holding a path longer than the image storage could remove, before anything is unpacked', async () => {
    const deep = (bytes: number, component = 'd'.repeat(199)) =>
      Array.from({ length: Math.ceil(bytes / 200) }, () => component)
        .join('/')
        .slice(0, bytes);
    layout([{ mediaType: GZIP, data: gzipSync(tarOf([deep(3000)])) }]);
    expect(await unpackedBytes(dir, 10 ** 9)).toBeGreaterThan(0);
    layout([{ mediaType: GZIP, data: gzipSync(tarOf([deep(MAX_LAYER_PATH_BYTES + 1)])) }]);
    await expect(unpackedBytes(dir, 10 ** 9)).rejects.toThrow(`it holds a path of ${MAX_LAYER_PATH_BYTES + 1} bytes`);
    // Newlines in its names do not make a path look shorter.
    layout([{ mediaType: TAR, data: tarOf([deep(MAX_LAYER_PATH_BYTES + 1, `${'n'.repeat(99)}\n${'n'.repeat(99)}`)]) }]);
    await expect(unpackedBytes(dir, 10 ** 9)).rejects.toThrow(/it holds a path of \d+ bytes/);
  });
});

/** A tar (PAX, as image layers of long names are) holding one file of `size` zeros at each of `names`. */
function tarOf(names: string[], size = 1): Buffer {
  const script =
    'import io, sys, tarfile, json\nout = io.BytesIO()\nwith tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as t:\n    for n in json.loads(sys.argv[1]):\n        i = tarfile.TarInfo(n); i.size = int(sys.argv[2]); t.addfile(i, io.BytesIO(bytes(i.size)))\nsys.stdout.buffer.write(out.getvalue())';
  return execFileSync('python3', ['-c', script, JSON.stringify(names), String(size)], { maxBuffer: 128 << 20 });
}

/** This process's descriptors on files under `folder`. */
function descriptorsOn(folder: string): string[] {
  return readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    })
    .filter((target) => target.startsWith(`${folder}/`));
}

/** Running processes of this name. */
function programsNamed(name: string): string[] {
  return readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && statOf(pid).startsWith(`(${name}) `) && statOf(pid).split(' ')[1] !== 'Z');
}

/** tar processes this one started that are still running. */
function tarsOfOurs(): string[] {
  return readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && statOf(pid).startsWith(`(tar) `) && statOf(pid).split(' ')[2] === String(process.pid));
}

/** /proc/PID/stat from its name on: "(comm) state ppid ..."; '' once it ended. */
function statOf(pid: string): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.indexOf('('));
  } catch {
    return '';
  }
}
