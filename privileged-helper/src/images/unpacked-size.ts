// How big an image will be once unpacked, measured before anything is
// unpacked: each layer of the fetched OCI layout is decompressed once and its
// bytes counted. A layer's compressed size says nothing of that (a tar bomb
// is a few MiB of zeros that unpack to terabytes) and a gzip trailer's size is
// the sender's word, so the count is the only measure; it stops as soon as
// the total passes what the pool has room for. The same pass has GNU tar list
// each layer's names, so a path too long for the image storage to remove
// later is refused before anything is unpacked.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
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

/**
 * The longest path a layer may hold, in bytes. containers-storage's btrfs
 * driver, on a pool with quotas, removes a layer only after it stats every
 * folder in it by its full path, which fails past PATH_MAX (4096 with the
 * storage's own prefix): such a layer could never be removed again.
 */
export const MAX_LAYER_PATH_BYTES = 3840;

/** The layer's bytes once decompressed, or more than `room` as soon as they pass it (the rest is not read). */
async function countDecompressed(file: string, mediaType: string, room: number): Promise<number> {
  const source = createReadStream(file);
  const tar = mediaType.endsWith('+zstd') || mediaType.endsWith('.zstd') ? zstdOf(source) : mediaType.endsWith('gzip') ? source.pipe(createGunzip()) : source;
  const names = listNames(tar);
  const bytes = await countStream(tar, room, () => source.destroy()).catch(async (err: unknown) => {
    await names.abandon();
    throw err;
  });
  if (bytes > room) {
    await names.abandon();
    return bytes;
  }
  const pathBytes = await names.longest;
  if (pathBytes > MAX_LAYER_PATH_BYTES) {
    throw new GroveError('E_INVALID_PARAMS', `a layer could not be unpacked inside the image: it holds a path of ${pathBytes} bytes, and Grove takes at most ${MAX_LAYER_PATH_BYTES}`);
  }
  return bytes;
}

/**
 * GNU tar listing the tar read from `stream`: the length in bytes of the
 * longest name in it, or abandon it when the stream is not read to its end.
 * Its escape quoting only lengthens a name (a newline in it is written as two
 * characters), so a name is never measured shorter than it is.
 */
function listNames(stream: Readable): { longest: Promise<number>; abandon: () => Promise<void> } {
  const tar = spawn('tar', ['--list', '--quoting-style=escape', '--file', '-'], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, LC_ALL: 'C.UTF-8' } });
  const longest = longestLine(tar, stream);
  // Waits for tar to end, so nothing of the count outlives it.
  const abandon = async () => {
    tar.kill();
    await longest.catch(() => undefined);
  };
  return { longest, abandon };
}

function longestLine(tar: ChildProcessByStdio<Writable, Readable, null>, stream: Readable): Promise<number> {
  stream.pipe(tar.stdin);
  // tar may end before the stream does (at an end-of-archive block): the count still reads it to its end.
  tar.stdin.on('error', () => undefined);
  tar.stdin.on('close', () => {
    stream.unpipe(tar.stdin);
    stream.resume();
  });
  return new Promise((resolve, reject) => {
    let longest = 0;
    let line = 0;
    tar.stdout.on('data', (chunk: Buffer) => {
      for (let at = 0; at < chunk.length; ) {
        const newline = chunk.indexOf(10, at);
        const end = newline === -1 ? chunk.length : newline;
        line += end - at;
        if (newline !== -1) [longest, line] = [Math.max(longest, line), 0];
        at = end + 1;
      }
    });
    tar.on('error', () => reject(new GroveError('E_HOST', 'tar could not be started to list a layer')));
    tar.on('close', () => resolve(Math.max(longest, line)));
  });
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
