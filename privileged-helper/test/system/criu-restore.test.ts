// Our CRIU's restore fixes, on plain host processes outside any workspace:
// - 0007: a socket pair whose two ends one process holds while a process
//   with a lower pid, dumped after it, holds one of them. Both ends must be
//   opened by one process; CRIU picked the lower pid for one end and the
//   other process for the other, and the restore died on "BUG at
//   criu/sk-unix.c". Chromium's processes hold their socket pairs like this
//   now and then: a rollback of the desktop failed.
// - 0008: a shared memory segment whose pages cannot be read fails the
//   restore; CRIU went on with the segment's content wrong.
// - 0009: a file mapping that borrows the previous mapping's file takes
//   that file's mode only when it is private; a shared one keeps its own,
//   or it could not be written after the restore.
// - 0005: a page read that fails says where, which page and what is mapped
//   there now (CI has seen it fail, rarely, in forks after a rollback).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CRIU_ENV } from '../../src/host/criu/criu.js';
import { REWRITER } from './fixtures/rewriter.js';
import { killIfThere, pidTaken, processesOf } from './host-processes.js';
import { waitFor } from './support.js';

const criu = loadConfig().criu;
const PAIR = path.join(import.meta.dirname, 'fixtures/unix-pair.py');
const FILE_MAPPINGS = path.join(import.meta.dirname, 'fixtures/file-mappings.py');
const COW_FILE_MAPPING = path.join(import.meta.dirname, 'fixtures/cow-file-mapping.py');
const DELETED_FILE_MAPPING = path.join(import.meta.dirname, 'fixtures/deleted-file-mapping.py');

const childrenOf = async (pid: number) => (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim().split(/\s+/).map(Number);

/** The inodes of the sockets PID holds. */
async function socketsOf(pid: number): Promise<string[]> {
  const links = await Promise.all((await readdir(`/proc/${pid}/fd`)).map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')));
  return links.filter((l) => l.startsWith('socket:')).sort();
}

/** The number in the pair's report ("B got N"), 0 before there is one. */
const answered = async (report: string) => Number(/^B got (\d+)$/.exec(await readFile(report, 'utf8').catch(() => ''))?.[1] ?? 0);

/**
 * The pages image a pagemap image names: CRIU's two magic numbers, then
 * the size of the PagemapHead message and the message, whose field 1
 * (a varint, tag 0x08) is pages_id.
 */
async function pagesImageOf(pagemap: string): Promise<string> {
  const image = await readFile(pagemap);
  if (image[12] !== 0x08) throw new Error(`${pagemap}: no pages_id where a PagemapHead has it`);
  let id = 0;
  for (let at = 13, shift = 0; ; at++, shift += 7) {
    id += (image[at]! & 0x7f) * 2 ** shift;
    if (image[at]! < 0x80) break;
  }
  return path.join(path.dirname(pagemap), `pages-${id}.img`);
}

/** N as a protobuf varint. */
function varint(n: number): Buffer {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    n = Math.floor(n / 0x80);
  } while (n);
  return Buffer.from(out);
}

/**
 * Rewrites the size CRIU recorded for FILE in the images' files.img (field 8
 * of each RegFileEntry of that name, a varint, tag 0x40, after the name), so
 * that the restore's check of the file's size passes for a file changed since.
 */
async function rewriteRecordedSize(images: string, file: string, from: number, to: number): Promise<void> {
  const image = path.join(images, 'files.img');
  const bytes = await readFile(image);
  const [name, was, now] = [Buffer.from(file.slice(1)), Buffer.concat([Buffer.from([0x40]), varint(from)]), varint(to)];
  if (was.length !== now.length + 1) throw new Error(`sizes ${from} and ${to} take different lengths`);
  let rewritten = 0;
  for (let at = bytes.indexOf(name); at >= 0; at = bytes.indexOf(name, at + 1)) {
    const size = bytes.indexOf(was, at + name.length);
    if (size < 0 || size > at + name.length + 16) continue;
    now.copy(bytes, size + 1);
    rewritten++;
  }
  if (!rewritten) throw new Error(`${image}: no size ${from} recorded for ${file}`);
  await writeFile(image, bytes);
}

const hex = (n: bigint) => n.toString(16);

describe("our CRIU's restore", () => {
  let dir = '';

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'criu-restore-'));
  });

  afterEach(async () => {
    const scripts = [PAIR, REWRITER, FILE_MAPPINGS, COW_FILE_MAPPING, DELETED_FILE_MAPPING];
    for (const script of scripts) for (const pid of await processesOf(script)) killIfThere(pid);
    await waitFor('the trees to end', async () => (await Promise.all(scripts.map(processesOf))).every((pids) => pids.length === 0), 10_000);
    await rm(dir, { recursive: true, force: true });
  });

  /** Starts ARGV detached; its pid. */
  function start(argv: string[]): number {
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: 'ignore' });
    child.unref();
    return child.pid!;
  }

  /** Dumps the tree at ROOT (which ends it) and waits until its pids are free for the restore; the images' directory. */
  async function dump(root: number): Promise<string> {
    const images = path.join(dir, 'images');
    await mkdir(images);
    const res = await execa(criu, ['dump', '-t', String(root), '-D', images, '-o', 'dump.log', '-v4'], { env: CRIU_ENV, reject: false });
    expect(res.exitCode, (await readFile(path.join(images, 'dump.log'), 'utf8')).slice(-2000)).toBe(0);
    await waitFor('the dumped tree and its session to end', async () => !(await pidTaken(root)), 30_000);
    return images;
  }

  const restore = (images: string) =>
    execa(criu, ['restore', '-D', images, '-o', 'restore.log', '-v4', '--restore-detached'], { env: CRIU_ENV, reject: false });
  const restoreLog = (images: string) => readFile(path.join(images, 'restore.log'), 'utf8');

  it('restores a socket pair held whole by one process and in part by a lower pid, and its ends talk on', async () => {
    const report = path.join(dir, 'report');
    const root = start(['/usr/bin/python3', PAIR, report]);
    await waitFor('A to get answers', async () => (await answered(report)) > 2, 10_000);
    // The shape that matters: B (P1's child) holds both ends, A (the root's second child) one, and A's pid is lower.
    const [p1, a] = await childrenOf(root);
    const [b] = await childrenOf(p1!);
    expect(a).toBeLessThan(b!);
    const [aSockets, bSockets] = [await socketsOf(a!), await socketsOf(b!)];
    expect(bSockets).toHaveLength(2);
    expect(aSockets).toHaveLength(1);
    expect(bSockets).toContain(aSockets[0]);

    const images = await dump(root);
    const atDump = await answered(report);
    const res = await restore(images);
    expect(res.exitCode, (await restoreLog(images)).slice(-2000)).toBe(0);
    await waitFor('A to get answers again', async () => (await answered(report)) > atDump + 3, 10_000);
  });

  it("gives a shared writable mapping its file's read-write mode back, next to a read-only private mapping of the same file", async () => {
    const file = path.join(dir, 'mapped');
    const counted = async () => (await readFile(file).catch(() => Buffer.alloc(8192))).readBigUInt64LE(4096);
    const pid = start(['/usr/bin/python3', FILE_MAPPINGS, file]);
    await waitFor('the process to count', async () => (await counted()) > 2n, 10_000);
    // The shape that matters: the two mappings of the file are side by side, the private one first.
    const maps = (await readFile(`/proc/${pid}/maps`, 'utf8')).split('\n').filter((l) => l.endsWith(file));
    expect(maps.map((l) => l.split(/\s+/)[1])).toEqual(['r--p', 'rw-s']);
    expect(maps[0]!.split('-')[1]!.split(' ')[0]).toBe(maps[1]!.split('-')[0]);

    const images = await dump(pid);
    const atDump = await counted();
    const res = await restore(images);
    expect(res.exitCode, (await restoreLog(images)).slice(-2000)).toBe(0);
    await waitFor('the restored process to count on in the file', async () => (await counted()) > atDump + 3n, 10_000);
  });

  it('fails, saying so, when the pages of a SysV shared memory segment cannot be read, and leaves no process', async () => {
    // The segment is saved with its IPC namespace, and CRIU saves only a namespace that is not its own. (unshare execs: the pid stays.)
    const report = path.join(dir, 'report.json');
    const root = start(['/usr/bin/unshare', '--ipc', '/usr/bin/python3', REWRITER, report, 'sysvshm']);
    await waitFor(
      'the rewriter to report (its segment made)',
      () =>
        readFile(report).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    const images = await dump(root);
    const segments = (await readdir(images)).filter((f) => f.startsWith('pagemap-shmem-'));
    expect(segments).toHaveLength(1);
    await truncate(await pagesImageOf(path.join(images, segments[0]!)), 4096);

    const res = await restore(images);
    expect(res.exitCode).not.toBe(0);
    expect(await restoreLog(images)).toMatch(/Can't read the pages of shared memory/);
    expect(await processesOf(REWRITER)).toEqual([]);
  });

  it('says so when a mapping of a deleted file reaches past the end of the copy it is restored from', async () => {
    // Such a copy has no path the restorer's report of a failed page read could measure (criu-patches/0013).
    const file = path.join(dir, 'deleted');
    const pid = start(['/usr/bin/python3', DELETED_FILE_MAPPING, file]);
    await waitFor(
      'the process to map and delete its file',
      () =>
        readFile(`${file}.ready`).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    const base = await readFile(`${file}.ready`, 'utf8');
    const images = await dump(pid);
    const res = await restore(images);
    expect(res.exitCode, (await restoreLog(images)).slice(-2000)).toBe(0);
    const end = hex(BigInt(`0x${base}`) + 3n * 4096n);
    expect(await restoreLog(images)).toContain(
      `Mapping ${base}-${end} at 0x0 of ${file}, a file deleted before the dump, reaches past the end of its restored copy (0x1000 bytes)`,
    );
  });

  it('says, when a page read fails, which page could not be written and what the process has mapped there now', async () => {
    // A private file mapping past its file's end faults as if nothing were mapped there: a cause of the EFAULT CI saw (criu-patches/0005).
    const file = path.join(dir, 'mapped');
    const pid = start(['/usr/bin/python3', COW_FILE_MAPPING, file]);
    await waitFor(
      'the process to write its mapping',
      () =>
        readFile(`${file}.ready`).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    const [mapping] = (await readFile(`/proc/${pid}/maps`, 'utf8')).split('\n').filter((l) => l.endsWith(file));
    const base = BigInt(`0x${mapping!.split('-')[0]}`);
    const images = await dump(pid);
    await truncate(file, 4096);
    await rewriteRecordedSize(images, file, 3 * 4096, 4096);

    const res = await restore(images);
    expect(res.exitCode).not.toBe(0);
    const log = await restoreLog(images);
    process.stderr.write(
      `[criu-restore] a failed page read says:\n${log
        .split('\n')
        .filter((l) => /read pages data| {2}page 0x| {2}mapped now| {2}each of its pages/.test(l))
        .join('\n')}\n`,
    );
    // The first page is read; the read stops at the second, past the file's end.
    expect(log).toMatch(
      new RegExp(
        `Can't read pages data \\(-14\\) into 0x${hex(base + 4096n)}\\+0x2000 \\(\\d+ iovs\\): vma 0x${hex(base)}-0x${hex(base + 3n * 4096n)} prot 0x3 flags 0x2 `,
      ),
    );
    expect(log).toContain(`  page 0x${hex(base + 4096n)} of it reads -14`);
    expect(log).toContain(`  mapped now: ${hex(base)}-${hex(base + 3n * 4096n)} rw-p 00000000 `);
    expect(log).toMatch(new RegExp(`  mapped now: [^\\n]* ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(file size 0x1000\\)`));
    expect(await processesOf(COW_FILE_MAPPING)).toEqual([]);
  });
});
