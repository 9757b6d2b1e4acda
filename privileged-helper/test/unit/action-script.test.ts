// CRIU's action script (host/criu/action-script.sh), run as CRIU runs it: the
// action in CRTOOLS_SCRIPT_ACTION, everything else from the environment.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CGROUP_ROOT } from '../../src/host/cgroups.js';
import { ACTION_SCRIPT, DUMP_SCRIPT, RESTORE_SCRIPT } from '../../src/host/criu/criu.js';

const act = (action: string, env: Record<string, string> = {}) =>
  execa('sh', [ACTION_SCRIPT], { env: { CRTOOLS_SCRIPT_ACTION: action, ...env }, extendEnv: false, reject: false });
const dir = mkdtempSync(path.join(tmpdir(), 'action-script-'));
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

describe("CRIU's action script", () => {
  it('leaves a file saying a dumped tree runs again, when asked to (criu-patches/0007)', async () => {
    const thawed = path.join(dir, 'thawed');
    expect(await act('post-resume', { GROVE_THAWED_FILE: thawed })).toMatchObject({ exitCode: 0 });
    expect(existsSync(thawed)).toBe(true);
    // A restore's post-resume, or a dump nobody waits on: nothing to leave.
    expect(await act('post-resume')).toMatchObject({ exitCode: 0, stdout: '' });
    expect(readdirSync(dir)).toEqual(['thawed']);
  });

  it('moves a restored tree, every process and thread, into its cpu group before it resumes (and fails if it cannot)', async () => {
    const name = `grove-unit-${process.pid}`;
    const group = path.join(CGROUP_ROOT, 'cpu', name);
    mkdirSync(group);
    // A tree like a restored one: a root, a child, and a grandchild with three threads.
    const tree = spawn('sh', ['-c', 'sleep 60 & sh -c \'python3 -c "import threading, time; [threading.Thread(target=time.sleep, args=(60,)).start() for _ in range(2)]; time.sleep(60)" & wait\' & wait'], { stdio: 'ignore', detached: true });
    try {
      // Threads per process, once all are up: the two shells, sleep, python with its two threads.
      const shape = () => {
        const threads = new Map<string, number>();
        for (const pid of cpuGroupsOfTree(tree.pid!).map((row) => row.split('/')[0]!)) threads.set(pid, (threads.get(pid) ?? 0) + 1);
        return [...threads.values()].sort();
      };
      await expect.poll(shape, { timeout: 10_000 }).toEqual([1, 1, 1, 3]);
      expect(await act('pre-resume', { GROVE_CPU_CGROUP: group, CRTOOLS_INIT_PID: String(tree.pid) })).toMatchObject({ exitCode: 0 });
      const groups = cpuGroupsOfTree(tree.pid!);
      expect(groups).toHaveLength(6);
      for (const row of groups) expect(row).toMatch(new RegExp(`: /${name}$`));
      // No group to join: the tree may not run outside it, so the restore fails.
      expect((await act('pre-resume', { GROVE_CPU_CGROUP: `${group}-missing`, CRTOOLS_INIT_PID: String(tree.pid) })).exitCode).not.toBe(0);
    } finally {
      process.kill(-tree.pid!, 'SIGKILL'); // its process group: the whole tree
      await expect.poll(() => readFileSync(path.join(group, 'cgroup.procs'), 'utf8').trim(), { timeout: 10_000 }).toBe('');
      rmdirSync(group);
    }
  }, 30_000);

  it('fails the restore when the network lock cannot be opened (netns.ts lockForRestore)', async () => {
    const res = await act('pre-resume', { GROVE_LOCKED_NETNS: path.join(dir, 'no-such-netns'), GROVE_LOCK_TABLE: 'grove_restore_lock', GROVE_NETLOCK_TOOL: loadConfig().groveNetlock });
    expect(res.exitCode).not.toBe(0);
    expect(res.stderr).toContain('no-such-netns');
  });

  it('does nothing for the actions it has no part in', async () => {
    for (const action of ['pre-dump', 'post-restore', 'network-lock', 'network-unlock']) expect(await act(action), action).toMatchObject({ exitCode: 0, stdout: '' });
  });

  it('is run by CRIU for every action it has a part in, and for no other (criu-patches/0017)', () => {
    const handled = [...readFileSync(ACTION_SCRIPT, 'utf8').matchAll(/^ {2}([a-z-]+)\)$/gm)].map((m) => m[1]);
    expect(new Set([...DUMP_SCRIPT.actions, ...RESTORE_SCRIPT.actions])).toEqual(new Set(handled));
    expect(DUMP_SCRIPT.path).toBe(ACTION_SCRIPT);
    expect(RESTORE_SCRIPT.path).toBe(ACTION_SCRIPT);
  });
});
