// Our CRIU's dump with --manage-cgroups=ignore (criu-patches/0012), on a
// plain host process in a cgroup of its own (as a branch's tree is in the
// branch's): the dump reads and records no cgroups, which it did while the
// tree was frozen although no Grove restore reads them, and a restore that
// ignores cgroups brings the process back where the restore runs. Without
// the flag the cgroups are dumped as before.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CGROUP_ROOT } from '../../src/host/cgroups.js';
import { CRIU_ENV } from '../../src/host/criu/criu.js';
import { killIfThere, pidTaken } from './host-processes.js';
import { waitFor } from './support.js';

const criu = loadConfig().criu;

describe("CRIU's dump of a tree in a cgroup of its own", () => {
  let dir = '';
  let group = '';
  const pids = new Set<number>();

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'grove-criu-cgroups-'));
    group = path.join(CGROUP_ROOT, 'pids', path.basename(dir));
    await mkdir(group);
  });
  afterEach(async () => {
    for (const pid of pids) killIfThere(pid);
    await waitFor('the processes to end', async () => (await Promise.all([...pids].map(pidTaken))).every((taken) => !taken), 10_000);
    pids.clear();
    await rmdir(group).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  /** A sleeping process in the test's pids group; its pid. */
  async function sleeper(): Promise<number> {
    const child = spawn('/bin/sleep', ['600'], { detached: true, stdio: 'ignore' });
    const pid = child.pid!;
    pids.add(pid);
    child.unref();
    await writeFile(path.join(group, 'cgroup.procs'), String(pid));
    return pid;
  }

  async function dump(pid: number, extra: string[]): Promise<{ images: string; log: string }> {
    const images = path.join(dir, `images-${extra.length}`);
    await mkdir(images);
    const res = await execa(criu, ['dump', '-t', String(pid), '-D', images, '-o', 'dump.log', '-v4', '--leave-running', ...extra], {
      env: CRIU_ENV,
      reject: false,
    });
    const log = await readFile(path.join(images, 'dump.log'), 'utf8');
    expect(res.exitCode, log.slice(-2000)).toBe(0);
    return { images, log };
  }

  it('records no cgroups when they are ignored, and the restore brings the process back', async () => {
    const pid = await sleeper();
    const plain = await dump(pid, []);
    expect(plain.log).toContain('Dumping cgroups for thread');
    expect(await readdir(plain.images)).toContain('cgroup.img');

    const ignoring = await dump(pid, ['--manage-cgroups=ignore']);
    expect(ignoring.log).not.toContain('Dumping cgroups for thread');
    expect(await readdir(ignoring.images)).not.toContain('cgroup.img');

    killIfThere(pid);
    await waitFor('the dumped process to end', async () => !(await pidTaken(pid)), 10_000);
    const restoreArgs = ['restore', '-D', ignoring.images, '-o', 'restore.log', '-v4', '--restore-detached', '--manage-cgroups=ignore'];
    const res = await execa(criu, restoreArgs, { env: CRIU_ENV, reject: false });
    expect(res.exitCode, (await readFile(path.join(ignoring.images, 'restore.log'), 'utf8').catch(() => '')).slice(-2000)).toBe(0);
    expect(await pidTaken(pid)).toBe(true);
    expect(await readFile(`/proc/${pid}/cmdline`, 'utf8')).toBe('/bin/sleep\x00600\x00');
    // Restored where CRIU ran, not put back into the dumped process's group.
    expect((await readFile(path.join(group, 'cgroup.procs'), 'utf8')).trim()).toBe('');
  });
});
