// How big an image will be once unpacked, measured before anything is
// unpacked: GNU tar lists each layer of the fetched OCI layout, decompressing
// it in processes of its own (tar finds the compression by its magic, as the
// image storage does), and the helper reads only the listing. A layer's
// compressed size says nothing of what it unpacks to (a tar bomb is a few MiB
// that unpack to terabytes) and a gzip trailer's size is the sender's word, so
// two measures are taken, and the larger counts:
//   - the tar stream tar reads, from its checkpoints as it goes and its total
//     at the end: the count stops as soon as it passes the room in the pool;
//   - the entries' own sizes, from the listing: a sparse entry's holes take
//     almost nothing in the stream, but are written out in full.
// The same listing gives every name, so a path too long for the image storage
// to remove later is refused before anything is unpacked.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
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

/** tar says how many records it has read every this many (about 1 MiB of its default 10 KiB records). */
const CHECKPOINT_RECORDS = 100;
const RECORD_BYTES = 10_240;
/** The stream and every entry's header: each entry takes at least a 512-byte block there. */
const HEADER_BYTES = 512;
/** A listing line longer than this is not kept whole: its name alone is over any path Grove takes. */
const MAX_LINE_BYTES = 64 << 10;

/** The layer's bytes once unpacked, or more than `room` as soon as they pass it (the rest is not read). */
async function countLayer(file: string, room: number): Promise<number> {
  const listing = listLayer(file);
  let streamBytes = 0;
  let entryBytes = 0;
  let longestPath = 0;
  const over = () => Math.max(streamBytes, entryBytes) > room;
  listing.onCheckpoint((bytes) => {
    streamBytes = Math.max(streamBytes, bytes);
    if (over()) listing.stop();
  });
  listing.onEntry((entry) => {
    entryBytes += entry.size + HEADER_BYTES;
    longestPath = Math.max(longestPath, entry.pathBytes);
    if (over()) listing.stop();
  });
  const end = await listing.done;
  if (over()) return Math.max(streamBytes, entryBytes);
  if (end.error !== null) throw new GroveError('E_INVALID_PARAMS', `a layer could not be read: ${end.error}`);
  if (longestPath > MAX_LAYER_PATH_BYTES) {
    throw new GroveError('E_INVALID_PARAMS', `a layer could not be unpacked inside the image: it holds a path of ${longestPath} bytes, and Grove takes at most ${MAX_LAYER_PATH_BYTES}`);
  }
  return Math.max(end.totalBytes ?? streamBytes, entryBytes);
}

interface ListedEntry {
  size: number;
  /** The length in bytes of its name as tar printed it (escapes only lengthen a name; a newline is two characters). */
  pathBytes: number;
}

interface ListingEnd {
  /** tar's own count of the stream it read ("Total bytes read"), if it got that far. */
  totalBytes: number | null;
  /** Why tar failed, in its words; null if it listed the whole layer (or was stopped). */
  error: string | null;
}

interface Listing {
  onCheckpoint(fn: (streamBytes: number) => void): void;
  onEntry(fn: (entry: ListedEntry) => void): void;
  /** Ends tar and its decompressor now. */
  stop(): void;
  /** Resolves once tar and its decompressor have ended. */
  done: Promise<ListingEnd>;
}

/** GNU tar listing `file` verbosely, in a process group of its own (with the decompressor it starts). */
function listLayer(file: string): Listing {
  const tar = spawn(
    'tar',
    ['--list', '--verbose', '--numeric-owner', '--full-time', '--utc', '--quoting-style=escape', '--totals', `--checkpoint=${CHECKPOINT_RECORDS}`, '--checkpoint-action=echo=#%u', '--file', file],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, LC_ALL: 'C.UTF-8' } },
  );
  let checkpoint: (bytes: number) => void = () => undefined;
  let entry: (e: ListedEntry) => void = () => undefined;
  let stopped = false;
  let totalBytes: number | null = null;
  let lastWords = '';
  eachLine(tar.stdout, (line, bytes) => entry(parseEntry(line, bytes)));
  eachLine(tar.stderr, (line) => {
    const reached = /^tar: #(\d+)$/.exec(line);
    const total = /^Total bytes read: (\d+)/.exec(line);
    if (reached) checkpoint(Number(reached[1]) * RECORD_BYTES); // %u: the records read so far
    else if (total) totalBytes = Number(total[1]);
    else lastWords = line.replace(/^tar: /, '');
  });
  const stop = () => {
    stopped = true;
    killGroup(tar);
  };
  const done = new Promise<ListingEnd>((resolve) => {
    tar.on('error', () => resolve({ totalBytes: null, error: 'tar could not be started' }));
    tar.on('close', (code) => {
      killGroup(tar); // a decompressor tar left behind
      resolve({ totalBytes, error: stopped || code === 0 ? null : lastWords || `tar exited ${code}` });
    });
  });
  return { onCheckpoint: (fn) => (checkpoint = fn), onEntry: (fn) => (entry = fn), stop, done };
}

function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group has ended
  }
}

/** Calls fn with each line (its first MAX_LINE_BYTES, and its whole length in bytes); nothing is kept past a line's end. */
function eachLine(stream: NodeJS.ReadableStream, fn: (line: string, bytes: number) => void): void {
  let kept: Buffer[] = [];
  let keptBytes = 0;
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => {
    for (let at = 0; at < chunk.length; ) {
      const newline = chunk.indexOf(10, at);
      const end = newline === -1 ? chunk.length : newline;
      const piece = chunk.subarray(at, Math.min(end, at + Math.max(0, MAX_LINE_BYTES - keptBytes)));
      kept.push(piece);
      keptBytes += piece.length;
      bytes += end - at;
      if (newline !== -1) {
        fn(Buffer.concat(kept).toString('utf8'), bytes);
        [kept, keptBytes, bytes] = [[], 0, 0];
      }
      at = end + 1;
    }
  });
}

/** "perms uid/gid size date time name[ -> target | link to target]": a line tar prints otherwise counts whole as a name. */
const ENTRY = /^(\S)\S{9} \d+\/\d+ +(\d+|\d+, *\d+) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d /;

/**
 * An entry of tar's listing. A link's line ends with its target: its name is
 * taken as all before the last separator, so a name (or target) holding the
 * separator is measured longer than it is, never shorter.
 */
function parseEntry(line: string, bytes: number): ListedEntry {
  const m = ENTRY.exec(line);
  if (!m) return { size: 0, pathBytes: bytes };
  const size = m[2]!.includes(',') ? 0 : Number(m[2]); // a device's numbers, not a size
  const separator = m[1] === 'l' ? ' -> ' : m[1] === 'h' ? ' link to ' : null;
  const cut = separator === null ? -1 : line.lastIndexOf(separator);
  const target = cut === -1 ? 0 : Buffer.byteLength(line.slice(cut));
  return { size, pathBytes: bytes - Buffer.byteLength(m[0]) - target };
}
