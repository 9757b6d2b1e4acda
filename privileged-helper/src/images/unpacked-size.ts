// How big an image will be once unpacked, measured before anything is
// unpacked. A layer's compressed size says nothing of what it unpacks to (a
// tar bomb is a few MiB that unpack to terabytes) and a gzip trailer's size is
// the sender's word, so each layer of the fetched OCI layout is decompressed
// once (its compression found by its magic, as the image storage finds it;
// gzip by Node's zlib, in its thread pool, the rest by their own programs) and
// two measures are taken, the larger counting:
//   - the decompressed stream, counted as it passes: the count stops as soon
//     as it passes the room in the pool;
//   - the entries' own sizes, from GNU tar's listing of that stream: a sparse
//     entry's holes take almost nothing in the stream, but are written out in
//     full.
// The same listing gives every name, so a path too long for the image storage
// to remove later is refused before anything is unpacked.
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import path from 'node:path';
import { LineReader, type LineEvent } from '../protocol/line-reader.js';
import { GroveError } from '../protocol/wire.js';

/** index.json and a manifest are small; a bigger one is not an image Grove takes. */
const MAX_JSON_BYTES = 4 << 20;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** An OCI descriptor, as far as the count reads it: the compression is found by the blob's magic, not its media type. */
interface Descriptor {
  digest: string;
}

/**
 * The bytes the layers of the single image in `layoutDir` unpack to, or
 * `limit + 1` as soon as they pass `limit`.
 */
export async function unpackedBytes(layoutDir: string, limit: number): Promise<number> {
  let total = 0;
  for (const layer of await layersOf(layoutDir)) {
    total += await countLayer(blobPath(layoutDir, layer.digest), limit - total);
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

/** Node's zlib hands on this much at a time: its default (16 KiB) spends more on the hand-offs than on inflating. */
const INFLATE_CHUNK_BYTES = 1 << 20;
/** The stream and every entry's header: each entry takes at least a 512-byte block there. */
const HEADER_BYTES = 512;
/** A listing line longer than this is not kept: its name alone is over any path Grove takes, and its length says so. */
const MAX_LINE_BYTES = 64 << 10;

/** The layer's bytes once unpacked, or more than `room` as soon as they pass it (the rest is not read). */
async function countLayer(file: string, room: number): Promise<number> {
  const source = createReadStream(file, { highWaterMark: INFLATE_CHUNK_BYTES });
  const layer = decompressed(source, await magicOf(file));
  const listing = listTar(layer.stream);
  let streamBytes = 0;
  let entryBytes = 0;
  let longestPath = 0;
  const unpacked = () => Math.max(streamBytes, entryBytes);
  const over = () => unpacked() > room;
  const stop = () => {
    source.destroy();
    layer.stop();
    listing.stop();
  };
  layer.stream.on('data', (chunk: Buffer) => {
    streamBytes += chunk.length;
    if (over()) stop();
  });
  listing.onEntry((entry) => {
    entryBytes += entry.size + HEADER_BYTES;
    longestPath = Math.max(longestPath, entry.pathBytes);
    if (over()) stop();
  });
  // Every descriptor on the blob is closed before the count answers: the pull
  // then removes the blob, and a file still open keeps its blocks in the pool.
  const [read, listed] = await Promise.all([endOf(layer.stream), listing.done, closed(source), layer.ended]);
  if (over()) return unpacked();
  const error = read ?? listed;
  if (error !== null) throw new GroveError('E_INVALID_PARAMS', `a layer could not be read: ${error}`);
  if (longestPath > MAX_LAYER_PATH_BYTES) {
    throw new GroveError(
      'E_INVALID_PARAMS',
      `a layer could not be unpacked inside the image: it holds a path of ${longestPath} bytes, and Grove takes at most ${MAX_LAYER_PATH_BYTES}`,
    );
  }
  return unpacked();
}

type Compression = 'gzip' | 'zstd' | 'xz' | 'bzip2' | 'none';

/** The compression a file's first bytes say it has. */
async function magicOf(file: string): Promise<Compression> {
  const fh = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await fh.read(Buffer.alloc(6), 0, 6, 0);
    const head = buffer.subarray(0, bytesRead);
    if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
    if (head.equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]))) return 'xz';
    if (head.subarray(0, 3).toString('latin1') === 'BZh') return 'bzip2';
    return 'none';
  } finally {
    await fh.close();
  }
}

/** The layer's tar stream, how to end whatever makes it, and when that has ended. */
function decompressed(source: Readable, compression: Compression): { stream: Readable; stop: () => void; ended: Promise<void> } {
  if (compression === 'none') return { stream: source, stop: () => undefined, ended: Promise.resolve() };
  if (compression === 'gzip') {
    const gunzip = source.pipe(createGunzip({ chunkSize: INFLATE_CHUNK_BYTES }));
    source.on('error', (err) => gunzip.destroy(err));
    return { stream: gunzip, stop: () => gunzip.destroy(), ended: Promise.resolve() };
  }
  const program = spawn(compression, ['-dc'], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let said = '';
  program.stderr.on('data', (chunk: Buffer) => (said = (said + chunk.toString('utf8')).slice(-4096)));
  source.pipe(program.stdin);
  program.stdin.on('error', () => undefined); // it ended: its exit says why
  const ended = new Promise<void>((resolve) => {
    program.on('error', () => {
      program.stdout.destroy(new Error(`a layer is ${compression}-compressed and ${compression} is not installed`));
      resolve(); // never started: nothing to wait for
    });
    program.on('close', (code) => {
      if (code !== 0 && code !== null) program.stdout.destroy(new Error(said.trim().split('\n').at(-1) || `${compression} exited ${code}`));
      resolve();
    });
  });
  return { stream: program.stdout, stop: () => killGroup(program), ended };
}

/** Resolves once the file stream has closed its descriptor (at its end, or destroyed). */
function closed(stream: Readable): Promise<void> {
  return stream.closed ? Promise.resolve() : new Promise((resolve) => stream.once('close', () => resolve()));
}

/** Resolves once the stream has ended: null, or why it failed (a stream destroyed on purpose has not failed). */
function endOf(stream: Readable): Promise<string | null> {
  return new Promise((resolve) => {
    stream.on('end', () => resolve(null));
    stream.on('close', () => resolve(null));
    stream.on('error', (err) => resolve(err.message));
  });
}

interface ListedEntry {
  size: number;
  /** The length in bytes of its name as tar printed it (escapes only lengthen a name; a newline is two characters). */
  pathBytes: number;
}

interface Listing {
  onEntry(fn: (entry: ListedEntry) => void): void;
  /** Ends tar now. */
  stop(): void;
  /** Resolves once tar has ended: null, or why it failed in its words (not when stopped). */
  done: Promise<string | null>;
}

/**
 * GNU tar listing the tar read from `stream`, verbosely. tar may end before
 * the stream does (at an end-of-archive block): the stream is still read to
 * its end, and counted.
 */
function listTar(stream: Readable): Listing {
  const tar = spawn('tar', ['--list', '--verbose', '--numeric-owner', '--full-time', '--utc', '--quoting-style=escape', '--file', '-'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, LC_ALL: 'C.UTF-8' },
  });
  let entry: (e: ListedEntry) => void = () => undefined;
  let stopped = false;
  let lastWords = '';
  stream.pipe(tar.stdin);
  tar.stdin.on('error', () => undefined);
  tar.stdin.on('close', () => {
    stream.unpipe(tar.stdin);
    stream.resume();
  });
  eachLine(tar.stdout, (line) => entry(line.kind === 'line' ? parseEntry(line.text) : { size: 0, pathBytes: line.bytes }));
  eachLine(tar.stderr, (line) => {
    if (line.kind === 'line') lastWords = line.text.replace(/^tar: /, '');
  });
  const done = new Promise<string | null>((resolve) => {
    tar.on('error', () => resolve('tar could not be started'));
    tar.on('close', (code) => resolve(stopped || code === 0 ? null : lastWords || `tar exited ${code}`));
  });
  const stop = () => {
    stopped = true;
    killGroup(tar);
  };
  return { onEntry: (fn) => (entry = fn), stop, done };
}

function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group has ended
  }
}

/** Calls fn with each line of the stream; one longer than MAX_LINE_BYTES only with its length. */
function eachLine(stream: Readable, fn: (line: LineEvent) => void): void {
  const lines = new LineReader(MAX_LINE_BYTES);
  stream.on('data', (chunk: Buffer) => {
    for (const line of lines.push(chunk)) fn(line);
  });
}

/** "perms uid/gid size date time name[ -> target | link to target]": a line tar prints otherwise counts whole as a name. */
const ENTRY = /^(\S)\S{9} \d+\/\d+ +(\d+|\d+, *\d+) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d /;

/**
 * An entry of tar's listing. A link's line ends with its target: its name is
 * taken as all before the last separator, so a name (or target) holding the
 * separator is measured longer than it is, never shorter.
 */
function parseEntry(line: string): ListedEntry {
  const bytes = Buffer.byteLength(line);
  const m = ENTRY.exec(line);
  if (!m) return { size: 0, pathBytes: bytes };
  const size = m[2]!.includes(',') ? 0 : Number(m[2]); // a device's numbers, not a size
  const separator = m[1] === 'l' ? ' -> ' : m[1] === 'h' ? ' link to ' : null;
  const cut = separator === null ? -1 : line.lastIndexOf(separator);
  const target = cut === -1 ? 0 : Buffer.byteLength(line.slice(cut));
  return { size, pathBytes: bytes - Buffer.byteLength(m[0]) - target };
}
