// CRIU's action program (native/grove-action.c, built by build/host/setup.sh),
// run as CRIU runs it: the action in CRTOOLS_SCRIPT_ACTION, everything else
// from the environment, nothing inherited.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CGROUP_ROOT } from '../../src/host/cgroups.js';
import { DUMP_ACTIONS, RESTORE_ACTIONS } from '../../src/host/criu/criu.js';

const { groveAction, groveNetlock } = loadConfig();
const act = (action: string, env: Record<string, string> = {}) =>
  execa(groveAction, [], { env: { CRTOOLS_SCRIPT_ACTION: action, ...env }, extendEnv: false, reject: false });
const dir = mkdtempSync(path.join(tmpdir(), 'grove-action-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every thread of PID and of its descendants, as "pid/tid: cpu group". */
function cpuGroupsOfTree(pid: number): string[] {
  const rows: string[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const cpu = readFileSync(`/proc/${pid}/task/${tid}/cgroup`, 'utf8').match(/^\d+:cpu:(.*)$/m)?.[1];
    rows.push(`${pid}/${tid}: ${cpu}`);
    for (const kid of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) rows.push(...cpuGroupsOfTree(Number(kid)));
  }
  return rows;
}

describe("CRIU's action program", () => {
  it('leaves a file saying a dumped tree runs again, when asked to (criu-patches/0022)', async () => {
    const thawed = path.join(dir, 'thawed');
    expect(await act('post-resume', { GROVE_THAWED_FILE: thawed })).toMatchObject({ exitCode: 0, stderr: '' });
    expect(existsSync(thawed)).toBe(true);
    // A restore's post-resume, or a dump nobody waits on: nothing to leave.
    expect(await act('post-resume')).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
    expect(readdirSync(dir)).toEqual(['thawed']);
    rmSync(thawed);
  });

  it('moves a restored tree, every process and thread, into its cpu group before it resumes (and fails if it cannot)', async () => {
    const name = `grove-unit-${process.pid}`;
    const group = path.join(CGROUP_ROOT, 'cpu', name);
    mkdirSync(group);
    // A tree like a restored one: a root, a child, and a grandchild with three threads.
    const tree = spawn(
      'sh',
      [
        '-c',
        'sleep 60 & sh -c \'python3 -c "import threading, time; [threading.Thread(target=time.sleep, args=(60,)).start() for _ in range(2)]; time.sleep(60)" & wait\' & wait',
      ],
      { stdio: 'ignore', detached: true },
    );
    try {
      // Threads per process, once all are up: the two shells, sleep, python with its two threads.
      const shape = () => {
        const threads = new Map<string, number>();
        for (const pid of cpuGroupsOfTree(tree.pid!).map((row) => row.split('/')[0]!)) threads.set(pid, (threads.get(pid) ?? 0) + 1);
        return [...threads.values()].sort();
      };
      await expect.poll(shape, { timeout: 10_000 }).toEqual([1, 1, 1, 3]);
      expect(await act('pre-resume', { GROVE_CPU_CGROUP: group, CRTOOLS_INIT_PID: String(tree.pid) })).toMatchObject({ exitCode: 0, stderr: '' });
      const groups = cpuGroupsOfTree(tree.pid!);
      expect(groups).toHaveLength(6);
      for (const row of groups) expect(row).toMatch(new RegExp(`: /${name}$`));
      // No group to join: the tree may not run outside it, so the restore fails.
      const missing = await act('pre-resume', { GROVE_CPU_CGROUP: `${group}-missing`, CRTOOLS_INIT_PID: String(tree.pid) });
      expect(missing.exitCode).toBe(1);
      expect(missing.stderr).toBe(`grove-action pre-resume: cannot open ${group}-missing/cgroup.procs: No such file or directory`);
      // Nor does it take a root that is not a pid.
      const bad = await act('pre-resume', { GROVE_CPU_CGROUP: group, CRTOOLS_INIT_PID: '../1' });
      expect(bad).toMatchObject({ exitCode: 1, stderr: 'grove-action pre-resume: CRTOOLS_INIT_PID is not a pid: ../1' });
    } finally {
      process.kill(-tree.pid!, 'SIGKILL'); // its process group: the whole tree
      await expect.poll(() => readFileSync(path.join(group, 'cgroup.procs'), 'utf8').trim(), { timeout: 10_000 }).toBe('');
      rmdirSync(group);
    }
  }, 30_000);

  it('fails the restore when the network lock cannot be opened (netns.ts lockForRestore)', async () => {
    const res = await act('pre-resume', {
      GROVE_LOCKED_NETNS: path.join(dir, 'no-such-netns'),
      GROVE_LOCK_TABLE: 'grove_restore_lock',
      GROVE_NETLOCK_TOOL: groveNetlock,
    });
    expect(res.exitCode).toBe(1);
    expect(res.stderr).toContain('no-such-netns');
    const missingTool = await act('pre-resume', {
      GROVE_LOCKED_NETNS: path.join(dir, 'no-such-netns'),
      GROVE_LOCK_TABLE: 'grove_restore_lock',
      GROVE_NETLOCK_TOOL: path.join(dir, 'no-such-tool'),
    });
    expect(missingTool).toMatchObject({
      exitCode: 1,
      stderr: `grove-action pre-resume: cannot start ${path.join(dir, 'no-such-tool')}: No such file or directory`,
    });
    // The lock's table is part of what it is told: without it, nothing is started.
    expect(await act('pre-resume', { GROVE_LOCKED_NETNS: '/run/netns/x', GROVE_NETLOCK_TOOL: groveNetlock })).toMatchObject({
      exitCode: 1,
      stderr: 'grove-action pre-resume: GROVE_LOCK_TABLE is not set',
    });
  });

  it('does nothing for the actions it has no part in', async () => {
    for (const action of ['pre-dump', 'post-restore', 'network-lock', 'network-unlock'])
      expect(await act(action), action).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
    // Run by hand, it says what it is.
    const bare = await execa(groveAction, [], { env: {}, extendEnv: false, reject: false });
    expect(bare.exitCode).toBe(2);
    expect(bare.stderr).toMatch(/^usage: CRTOOLS_SCRIPT_ACTION=ACTION grove-action/);
  });

  it('is run by CRIU for every action it has a part in, and for no other (criu-patches/0015)', () => {
    const source = readFileSync(path.resolve(import.meta.dirname, '../../native/grove-action.c'), 'utf8');
    const table = source.slice(source.indexOf('} actions[] = {'));
    const handled = [...table.matchAll(/^\t\{ "([a-z-]+)", \w+ \},$/gm)].map((m) => m[1]);
    expect(handled.length).toBeGreaterThan(0);
    expect(new Set([...DUMP_ACTIONS, ...RESTORE_ACTIONS])).toEqual(new Set(handled));
  });

  it('refuses a snapshot it cannot take, and says why', async () => {
    const from = path.join(dir, 'from');
    mkdirSync(from, { recursive: true });
    const to = path.join(dir, 'to');
    const snapshot = (env: Record<string, string>) => act('post-dump', { GROVE_SNAPSHOT_FROM: from, GROVE_SNAPSHOT_TO: to, ...env });
    // tmpdir is not btrfs: the kernel refuses, and the dump with it.
    const notBtrfs = await snapshot({});
    expect(notBtrfs.exitCode).toBe(1);
    expect(notBtrfs.stderr).toMatch(new RegExp(`^grove-action post-dump: snapshot ${from} -> ${to}: `));
    expect(await snapshot({ GROVE_SNAPSHOT_FROM: path.join(dir, 'nowhere') })).toMatchObject({
      exitCode: 1,
      stderr: `grove-action post-dump: snapshot from ${path.join(dir, 'nowhere')}: No such file or directory`,
    });
    expect(await snapshot({ GROVE_SNAPSHOT_TO: path.join(dir, 'nowhere', 'to') })).toMatchObject({
      exitCode: 1,
      stderr: `grove-action post-dump: snapshot to ${path.join(dir, 'nowhere', 'to')}: No such file or directory`,
    });
    expect(await snapshot({ GROVE_SNAPSHOT_TO: `${dir}/..` })).toMatchObject({
      exitCode: 1,
      stderr: `grove-action post-dump: snapshot to ${dir}/..: Invalid argument`,
    });
    expect(await snapshot({ GROVE_SNAPSHOT_FROM: '' })).toMatchObject({ exitCode: 1, stderr: 'grove-action post-dump: GROVE_SNAPSHOT_FROM is not set' });
    expect(existsSync(to)).toBe(false);
  });
});

describe("the action program's snapshot, on btrfs", () => {
  const fs = path.join(dir, 'btrfs');
  const image = path.join(dir, 'btrfs.img');
  beforeAll(async () => {
    writeFileSync(image, '');
    await execa('truncate', ['-s', '128M', image]);
    await execa('mkfs.btrfs', ['-q', image]);
    mkdirSync(fs);
    await execa('mount', ['-o', 'loop', image, fs]); // the loop device goes with the unmount
    await execa('btrfs', ['subvolume', 'create', path.join(fs, 'branch')]);
    writeFileSync(path.join(fs, 'branch', 'file'), 'the fork point');
  });
  afterAll(async () => {
    if ((await execa('umount', [fs], { reject: false })).exitCode !== 0) await execa('umount', ['-l', fs]);
  });

  const snapshot = (to: string, env: Record<string, string> = {}) =>
    act('post-dump', { GROVE_SNAPSHOT_FROM: path.join(fs, 'branch'), GROVE_SNAPSHOT_TO: path.join(fs, to), ...env });
  const readOnly = async (subvolume: string) => (await execa('btrfs', ['property', 'get', '-ts', path.join(fs, subvolume), 'ro'])).stdout.trim();

  it("takes a read-only snapshot of the branch, or a writable one for a fork's only child", async () => {
    expect(await snapshot('fork-point')).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
    expect(await readOnly('fork-point')).toBe('ro=true');
    expect(readFileSync(path.join(fs, 'fork-point', 'file'), 'utf8')).toBe('the fork point');
    expect(await snapshot('only-child', { GROVE_SNAPSHOT_WRITABLE: '1' })).toMatchObject({ exitCode: 0, stderr: '' });
    expect(await readOnly('only-child')).toBe('ro=false');
  });

  it('never takes one over what is there', async () => {
    writeFileSync(path.join(fs, 'taken'), 'not a snapshot');
    expect(await snapshot('taken')).toMatchObject({
      exitCode: 1,
      stderr: `grove-action post-dump: snapshot ${path.join(fs, 'branch')} -> ${path.join(fs, 'taken')}: File exists`,
    });
    expect(readFileSync(path.join(fs, 'taken'), 'utf8')).toBe('not a snapshot');
  });
});
