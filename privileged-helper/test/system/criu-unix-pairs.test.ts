// Our CRIU (build/host/criu-patches/0008) restores a socket pair whose two
// ends one process holds while a process with a lower pid, dumped after it,
// holds one of them. Both ends must be opened by one process; CRIU picked
// the lower pid for one end and the other process for the other, and the
// restore died on "BUG at criu/sk-unix.c". Chromium's processes hold their
// socket pairs like this now and then: a rollback of the desktop failed.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CRIU_ENV } from '../../src/host/criu/criu.js';
import { killIfThere, pidTaken, processesOf } from './host-processes.js';
import { waitFor } from './support.js';

const criu = loadConfig().criu;
const PAIR = path.join(import.meta.dirname, 'fixtures/unix-pair.py');

const childrenOf = async (pid: number) => (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim().split(/\s+/).map(Number);

/** The inodes of the sockets PID holds. */
async function socketsOf(pid: number): Promise<string[]> {
  const links = await Promise.all((await readdir(`/proc/${pid}/fd`)).map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')));
  return links.filter((l) => l.startsWith('socket:')).sort();
}

/** The number in the report ("B got N"), 0 before there is one. */
const answered = async (report: string) => Number(/^B got (\d+)$/.exec(await readFile(report, 'utf8').catch(() => ''))?.[1] ?? 0);

describe('a socket pair held whole by one process and in part by a lower pid', () => {
  let dir = '';

  afterEach(async () => {
    for (const pid of await processesOf(PAIR)) killIfThere(pid);
    await waitFor('the tree to end', async () => (await processesOf(PAIR)).length === 0, 10_000);
    await rm(dir, { recursive: true, force: true });
  });

  it('is restored, and its ends talk on', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'criu-pair-'));
    const report = path.join(dir, 'report');
    const child = spawn('/usr/bin/python3', [PAIR, report], { detached: true, stdio: 'ignore' });
    const root = child.pid!;
    child.unref();
    await waitFor('A to get answers', async () => (await answered(report)) > 2, 10_000);

    // The shape that matters: B (P1's child) holds both ends, A (the root's second child) one, and A's pid is lower.
    const [p1, a] = await childrenOf(root);
    const [b] = await childrenOf(p1!);
    expect(a).toBeLessThan(b!);
    const [aSockets, bSockets] = [await socketsOf(a!), await socketsOf(b!)];
    expect(bSockets).toHaveLength(2);
    expect(aSockets).toHaveLength(1);
    expect(bSockets).toContain(aSockets[0]);

    const images = path.join(dir, 'images');
    await mkdir(images);
    const dump = await execa(criu, ['dump', '-t', String(root), '-D', images, '-o', 'dump.log', '-v4'], { env: CRIU_ENV, reject: false });
    expect(dump.exitCode, (await readFile(path.join(images, 'dump.log'), 'utf8')).slice(-2000)).toBe(0);
    const atDump = await answered(report);
    await waitFor('the dumped tree and its session to end', async () => !(await pidTaken(root)), 30_000);

    const restore = await execa(criu, ['restore', '-D', images, '-o', 'restore.log', '-v4', '--restore-detached'], { env: CRIU_ENV, reject: false });
    expect(restore.exitCode, (await readFile(path.join(images, 'restore.log'), 'utf8')).slice(-2000)).toBe(0);
    await waitFor('A to get answers again', async () => (await answered(report)) > atDump + 3, 10_000);
  });
});
