// What an agent leaves running through exec belongs to the branch: a service
// started in the background (&, nohup, setsid, a double-forking daemon,
// disown, a tmux server) keeps serving in every fork with its in-memory state
// as of the fork, and nothing of the helper's (another session's terminal, a
// pipe) leaks into it. Before,
// every fork of such a branch failed ("A session leader … is outside of its
// pid namespace"; "Can't lookup mount … /dev/ptmx").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { COUNTER_SERVER } from './fixtures/counter.js';
import { connect, createWorkspace, sh, track } from './support.js';

const WAYS: [string, number, string][] = [
  ['&', 8101, 'python3 /tmp/counter.py 8101 >/dev/null 2>&1 &'],
  ['nohup … &', 8102, 'nohup python3 /tmp/counter.py 8102 >/dev/null 2>&1 &'],
  ['setsid', 8103, 'setsid python3 /tmp/counter.py 8103 </dev/null >/dev/null 2>&1 &'],
  ['a double-forking daemon', 8104, '( python3 /tmp/counter.py 8104 </dev/null >/dev/null 2>&1 & ) ; exit 0'],
  ['disown', 8105, 'bash -c "python3 /tmp/counter.py 8105 </dev/null >/dev/null 2>&1 & disown"'],
  ['a tmux server', 8106, 'tmux new-session -d -s agent "python3 /tmp/counter.py 8106"'],
];

const get = (c: HelperClient, ws: Workspace, port: number) =>
  sh(c, ws, `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=5).read().decode())'`);

describe('what exec leaves running', () => {
  let c: HelperClient;
  let ws: Workspace;
  const made: string[] = [];

  beforeAll(async () => {
    c = await connect('exec-background');
    ws = await createWorkspace(c, 'bg');
    made.push(ws.id);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await c?.request('workspace.delete', { workspace: id }).catch(() => undefined);
    c?.close();
  });

  it("inherits nothing of the helper but stdio, not even another session's terminal", async () => {
    const terminal = await c.request('exec.open', { workspace: ws.id, cols: 80, rows: 24 });
    try {
      const fds = (await sh(c, ws, 'ls /proc/self/fd')).trim().split('\n').map(Number);
      expect(fds.filter((fd) => fd > 3)).toEqual([]); // 0-2 and ls's own directory
      expect(await sh(c, ws, 'ls -l /proc/self/fd/ | grep -c ptmx || true')).toBe('0\n');
    } finally {
      await c.request('exec.close', { session: terminal.session });
    }
  });

  it('forks a branch whose services were started through exec, every way, with their state', async () => {
    await c.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', 'cat > /tmp/counter.py'], stdin: COUNTER_SERVER });
    for (const [, , start] of WAYS) await sh(c, ws, start);
    for (const [way, port] of WAYS) await expect.poll(() => get(c, ws, port).catch(() => ''), { timeout: 20_000, message: way }).toBe('1\n');
    // Each exec'd service lives in a session inside the branch, never the helper's.
    const sessions = await sh(c, ws, 'ps -o sid= -C python3');
    expect(
      sessions
        .trim()
        .split(/\s+/)
        .map(Number)
        .every((sid) => sid > 1),
    ).toBe(true);

    const t0 = Date.now();
    const report = await c.request('branch.fork', { workspace: ws.id, copies: 2 });
    const children = await Promise.all(report.children.map(track));
    made.push(...children.map((x) => x.id));
    process.stderr.write(
      `[exec-background] fork into 2 with ${WAYS.length} exec'd services: ${Date.now() - t0} ms (total ${Math.round(report.timings.total)} ms)\n`,
    );

    // Each child and the source carry on from the count at the fork, each on its own.
    for (const branch of [...children, ws]) {
      for (const [way, port] of WAYS) expect(await get(c, branch, port), `${branch.name} ${way}`).toBe('2\n');
    }
    expect(await get(c, children[0]!, 8101)).toBe('3\n');
    expect(await get(c, children[1]!, 8101)).toBe('3\n');
    expect(await get(c, ws, 8101)).toBe('3\n');
  });

  it('still runs a command in a branch whose Python, which holds runs, is gone, so that it can be repaired', async () => {
    const python = (await sh(c, ws, 'readlink -f /usr/bin/python3')).trim();
    await sh(c, ws, `mv ${python} ${python}.away`);
    try {
      expect(await c.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', 'cat; echo err >&2; exit 3'], stdin: 'still runs\n' })).toEqual({
        exitCode: 3,
        signal: null,
        stdout: 'still runs\n',
        stderr: 'err\n',
        timedOut: false,
      });
    } finally {
      await sh(c, ws, `mv ${python}.away ${python}`);
    }
    expect(await sh(c, ws, 'python3 -c "print(6*7)"')).toBe('42\n');
  });
});
