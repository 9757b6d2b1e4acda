// How big an image will be once unpacked, measured before anything is
// unpacked. A layer's compressed size says nothing of what it unpacks to (a
// tar bomb is a few MiB that unpack to terabytes) and a gzip trailer's size is
// the sender's word, so each layer of the fetched OCI layout is decompressed
// once (its compression found by its magic, as the image storage finds it;
// each by its own program, gzip by ISA-L's igzip, which inflates several times
// faster than zlib) into GNU tar's listing, and two measures are taken, the
// larger counting:
//   - the decompressed stream, as far as tar says it has read it: the count
//     stops as soon as it passes the room in the pool;
//   - the entries' own sizes, from the listing: a sparse entry's holes take
//     almost nothing in the stream, but are written out in full.
// The same listing gives every name, so a path too long for the image storage
// to remove later is refused before anything is unpacked.
import { spawn, type ChildProcess } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
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

/** The stream and every entry's header: each entry takes at least a 512-byte block there. */
const HEADER_BYTES = 512;
/** A listing line longer than this is not kept: its name alone is over any path Grove takes, and its length says so. */
const MAX_LINE_BYTES = 64 << 10;
/** tar reads its input in records of this many bytes (its default blocking factor, 20 blocks of 512). */
const RECORD_BYTES = 10240;
/** tar says how much of the stream it has read every this many records: the stream's count moves in these steps. */
const CHECKPOINT_RECORDS = 500;
/**
 * Reading past end-of-archive blocks, tar counts whole records and one more
 * than the stream fills; the stream's count takes that one off, so it is never
 * below the stream and above it by less than a record.
 */
const RECORDS_COUNTED_PAST_THE_END = 1;

/** The layer's bytes once unpacked, or more than `room` as soon as they pass it (the rest is not read). */
async function countLayer(file: string, room: number): Promise<number> {
  const layer = decompressed(file, await magicOf(file));
  const listing = listTar(layer.output);
  let entryBytes = 0;
  let longestPath = 0;
  const unpacked = () => Math.max(listing.streamBytes(), entryBytes);
  const over = () => unpacked() > room;
  const stop = () => {
    layer.stop();
    listing.stop();
  };
  listing.onProgress(() => {
    if (over()) stop();
  });
  listing.onEntry((entry) => {
    entryBytes += entry.size + HEADER_BYTES;
    longestPath = Math.max(longestPath, entry.pathBytes);
    if (over()) stop();
  });
  // Both programs have ended, and with them every descriptor on the blob,
  // before the count answers: the pull then removes the blob, and a file
  // still open keeps its blocks in the pool.
  const [unread, listed] = await Promise.all([layer.done, listing.done]);
  if (over()) return unpacked();
  const error = unread ?? listed;
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

/** The program that decompresses each (build/host/setup.sh installs them). */
const DECOMPRESSOR: Record<Exclude<Compression, 'none'>, string> = { gzip: 'igzip', zstd: 'zstd', xz: 'xz', bzip2: 'bzip2' };

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

/** Where tar reads the layer's tar stream: the file itself, or a pipe from its decompressor. */
type TarInput = { file: string } | { pipe: Readable };

interface Decompression {
  output: TarInput;
  stop(): void;
  /** Resolves once the decompressor has ended: null, or why it failed in its words (not when stopped, nor when tar stopped reading). */
  done: Promise<string | null>;
}

/**
 * The layer's tar stream: a plain layer as it is, any other from its
 * decompressor, which reads the blob itself. Its output goes to tar through a
 * pipe between the two programs: the stream never passes through the helper.
 */
function decompressed(file: string, compression: Compression): Decompression {
  if (compression === 'none') return { output: { file }, stop: () => undefined, done: Promise.resolve(null) };
  const decompressor = DECOMPRESSOR[compression];
  const program = spawn(decompressor, ['-dc', '--', file], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const said = lastWordsOf(program);
  let stopped = false;
  const done = new Promise<string | null>((resolve) => {
    program.on('error', () => resolve(`a layer is ${compression}-compressed and ${decompressor} is not installed`));
    // Ended by SIGPIPE: tar stopped reading, and says why itself.
    program.on('close', (code, signal) => resolve(stopped || code === 0 || signal === 'SIGPIPE' ? null : said() || `${decompressor} exited ${code}`));
  });
  return {
    output: { pipe: program.stdout },
    stop: () => {
      stopped = true;
      killGroup(program);
    },
    done,
  };
}

interface ListedEntry {
  size: number;
  /** The length in bytes of its name as tar printed it (escapes only lengthen a name; a newline is two characters). */
  pathBytes: number;
}

interface Listing {
  onEntry(fn: (entry: ListedEntry) => void): void;
  /** Called each time tar says how much of the stream it has read. */
  onProgress(fn: () => void): void;
  /** The bytes of the stream tar has read so far. */
  streamBytes(): number;
  /** Ends tar now. */
  stop(): void;
  /** Resolves once tar has ended: null, or why it failed in its words (not when stopped). */
  done: Promise<string | null>;
}

/** tar's checkpoints and its totals, on its stderr: the bytes of the stream read so far. */
const READ_SO_FAR = /^(?:tar: )?(?:grove-read r|Total bytes read): (\d+)/;

/**
 * GNU tar listing the layer's tar stream, verbosely, to its end: past
 * end-of-archive blocks (--ignore-zeros), so what follows them is read and
 * counted too, and anything there but more archive is an error.
 */
function listTar(input: TarInput): Listing {
  const source = 'file' in input ? input.file : '-';
  const args = ['--list', '--verbose', '--ignore-zeros', '--totals', '--numeric-owner', '--full-time', '--utc', '--quoting-style=escape'];
  const progress = [`--checkpoint=${CHECKPOINT_RECORDS}`, '--checkpoint-action=echo=grove-read %{r}T'];
  const tar = spawn('tar', [...args, ...progress, '--file', source], {
    stdio: ['pipe' in input ? input.pipe : 'ignore', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, LC_ALL: 'C.UTF-8' },
  });
  // tar has the pipe's read end now; the helper's copy would keep the
  // decompressor writing into it after tar ended.
  if ('pipe' in input) input.pipe.destroy();
  let entry: (e: ListedEntry) => void = () => undefined;
  let progressed: () => void = () => undefined;
  let readBytes = 0;
  let stopped = false;
  let lastWords = '';
  eachLine(tar.stdout, (line) => entry(line.kind === 'line' ? parseEntry(line.text) : { size: 0, pathBytes: line.bytes }));
  eachLine(tar.stderr, (line) => {
    if (line.kind !== 'line') return;
    const read = READ_SO_FAR.exec(line.text);
    if (!read) lastWords = line.text.replace(/^tar: /, '');
    else {
      readBytes = Math.max(readBytes, Number(read[1]) - RECORDS_COUNTED_PAST_THE_END * RECORD_BYTES);
      progressed();
    }
  });
  const done = new Promise<string | null>((resolve) => {
    tar.on('error', () => resolve('tar could not be started'));
    tar.on('close', (code) => resolve(stopped || code === 0 ? null : lastWords || `tar exited ${code}`));
  });
  const stop = () => {
    stopped = true;
    killGroup(tar);
  };
  return { onEntry: (fn) => (entry = fn), onProgress: (fn) => (progressed = fn), streamBytes: () => readBytes, stop, done };
}

/** The last line a program said on stderr, once it has ended. */
function lastWordsOf(program: ChildProcess): () => string {
  let said = '';
  program.stderr?.on('data', (chunk: Buffer) => (said = (said + chunk.toString('utf8')).slice(-4096)));
  return () => said.trim().split('\n').at(-1) ?? '';
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
