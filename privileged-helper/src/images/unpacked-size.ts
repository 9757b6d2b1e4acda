// How big an image will be once unpacked, measured before anything is
// unpacked: each layer of the fetched OCI layout is decompressed once and its
// bytes counted. A layer's compressed size says nothing of that (a tar bomb
// is a few MiB of zeros that unpack to terabytes) and a gzip trailer's size is
// the sender's word, so the count is the only measure; it stops as soon as
// the total passes what the pool has room for.
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { GroveError } from '../protocol/wire.js';

/** index.json and a manifest are small; a bigger one is not an image Grove takes. */
const MAX_JSON_BYTES = 4 << 20;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
}

/**
 * The bytes the layers of the single image in `layoutDir` unpack to, or
 * `limit + 1` as soon as they pass `limit`.
 */
export async function unpackedBytes(layoutDir: string, limit: number): Promise<number> {
  let total = 0;
  for (const layer of await layersOf(layoutDir)) {
    total += await countDecompressed(blobPath(layoutDir, layer.digest), layer.mediaType ?? '', limit - total);
    if (total > limit) return limit + 1;
  }
  return total;
}

async function layersOf(layoutDir: string): Promise<Descriptor[]> {
  const index = (await readJson(path.join(layoutDir, 'index.json'))) as { manifests?: Descriptor[] };
  const manifests = index.manifests ?? [];
  if (manifests.length !== 1) throw new GroveError('E_INVALID_PARAMS', `the image's layout has ${manifests.length} manifests, not one`);
  const manifest = (await readJson(blobPath(layoutDir, manifests[0]!.digest))) as { layers?: Descriptor[] };
  return manifest.layers ?? [];
}

async function readJson(file: string): Promise<unknown> {
  const text = await readFile(file);
  if (text.length > MAX_JSON_BYTES) throw new GroveError('E_INVALID_PARAMS', `${path.basename(file)} is over ${MAX_JSON_BYTES} bytes`);
  return JSON.parse(text.toString('utf8'));
}

function blobPath(layoutDir: string, digest: string): string {
  if (!DIGEST.test(digest)) throw new GroveError('E_INVALID_PARAMS', `unsupported digest '${digest.slice(0, 80)}'`);
  return path.join(layoutDir, 'blobs', 'sha256', digest.slice('sha256:'.length));
}

/** The layer's bytes once decompressed, or more than `room` as soon as they pass it (the rest is not read). */
async function countDecompressed(file: string, mediaType: string, room: number): Promise<number> {
  const source = createReadStream(file);
  if (mediaType.endsWith('+zstd') || mediaType.endsWith('.zstd')) return countStream(zstdOf(source), room, () => source.destroy());
  if (mediaType.endsWith('gzip')) return countStream(source.pipe(createGunzip()), room, () => source.destroy());
  return countStream(source, room, () => source.destroy());
}

function zstdOf(source: Readable): Readable {
  const zstd = spawn('zstd', ['-dc'], { stdio: ['pipe', 'pipe', 'ignore'] });
  source.pipe(zstd.stdin);
  zstd.stdin.on('error', () => undefined); // zstd ended: its output says how far it got
  zstd.on('error', () => zstd.stdout.destroy(new GroveError('E_HOST', 'a layer is zstd-compressed and zstd is not installed')));
  zstd.stdout.on('close', () => zstd.kill());
  return zstd.stdout;
}

function countStream(stream: Readable, room: number, stop: () => void): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > room) {
        stop();
        stream.destroy();
        resolve(bytes);
      }
    });
    stream.on('end', () => resolve(bytes));
    stream.on('error', (err) => reject(new GroveError('E_INVALID_PARAMS', `a layer could not be read: ${err.message}`)));
  });
}
