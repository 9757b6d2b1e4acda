// Our CRIU's --action-script-actions (criu-patches/0015), on a plain host
// process: the action script runs for the actions named and for no other, at
// dump and at restore; a name CRIU does not know fails the run before the tree
// is touched. Without the option the script runs for every action, as before.
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CRIU_ENV } from '../../src/host/criu/criu.js';
import { killIfThere, pidTaken } from './host-processes.js';
import { waitFor } from './support.js';

const criu = loadConfig().criu;

describe("CRIU's action script, for the actions named only", () => {
  let dir = '';
  let script = '';
  let ran = '';
  const pids = new Set<number>();

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'grove-criu-actions-'));
    script = path.join(dir, 'action.sh');
    ran = path.join(dir, 'ran');
    await writeFile(script, `#!/bin/sh\necho "$CRTOOLS_SCRIPT_ACTION" >> '${ran}'\n`);
    await chmod(script, 0o755);
  });
  afterEach(async () => {
    for (const pid of pids) killIfThere(pid);
    await waitFor('the processes to end', async () => (await Promise.all([...pids].map(pidTaken))).every((taken) => !taken), 10_000);
    pids.clear();
    await rm(dir, { recursive: true, force: true });
  });

  function sleeper(): number {
    const child = spawn('/bin/sleep', ['600'], { detached: true, stdio: 'ignore' });
    pids.add(child.pid!);
    child.unref();
    return child.pid!;
  }

  /** The actions the script ran for since the last call. */
  async function actionsRun(): Promise<string[]> {
    const lines = (await readFile(ran, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    await rm(ran, { force: true });
    return lines;
  }

  async function dump(pid: number, name: string, extra: string[]) {
    const images = path.join(dir, name);
    await mkdir(images);
    const args = ['dump', '-t', String(pid), '-D', images, '-o', 'dump.log', '-v4', '--leave-running', '--action-script', script, ...extra];
    const res = await execa(criu, args, { env: CRIU_ENV, reject: false });
    return { images, res, log: await readFile(path.join(images, 'dump.log'), 'utf8').catch(() => '') };
  }

  it('runs the script for every action without the option, and for the named ones only with it', async () => {
    const pid = sleeper();
    const every = await dump(pid, 'every', []);
    expect(every.res.exitCode, every.log.slice(-2000)).toBe(0);
    expect(await actionsRun()).toEqual(['pre-dump', 'post-dump']);

    const named = await dump(pid, 'named', ['--action-script-actions', 'post-dump,pre-resume']);
    expect(named.res.exitCode, named.log.slice(-2000)).toBe(0);
    expect(await actionsRun()).toEqual(['post-dump']);

    killIfThere(pid);
    await waitFor('the dumped process to end', async () => !(await pidTaken(pid)), 10_000);
    const restore = ['restore', '-D', named.images, '-o', 'restore.log', '-v4', '--restore-detached', '--action-script', script];
    const res = await execa(criu, [...restore, '--action-script-actions', 'pre-resume'], { env: CRIU_ENV, reject: false });
    expect(res.exitCode, (await readFile(path.join(named.images, 'restore.log'), 'utf8').catch(() => '')).slice(-2000)).toBe(0);
    expect(await actionsRun()).toEqual(['pre-resume']);
    expect(await readFile(`/proc/${pid}/cmdline`, 'utf8')).toBe('/bin/sleep\x00600\x00');
  });

  it('refuses an action it does not know, before it touches the tree', async () => {
    const pid = sleeper();
    const bad = await dump(pid, 'bad', ['--action-script-actions', 'post-dump,post-dumpp']);
    expect(bad.res.exitCode).not.toBe(0);
    expect(`${bad.res.stderr}${bad.log}`).toContain('No action script action is called post-dumpp');
    expect(await actionsRun()).toEqual([]);
    expect((await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.startsWith('S')).toBe(true);
  });
});
