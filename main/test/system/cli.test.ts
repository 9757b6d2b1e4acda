// The grove CLI against the real helper, as an agent would use it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { REPO } from '../../../privileged-helper/test/system/helper-process.js';
import { instance, track } from '../../../privileged-helper/test/system/support.js';

const grove = (args: string[], input?: string) =>
  execa(path.join(REPO, 'main/bin/grove'), ['--socket', instance().socketPath, ...args], { reject: false, input, stripFinalNewline: false, timeout: 120_000 });

describe('grove CLI', () => {
  it('doctor reports CRIU ≥ 4.2 with a passing criu check', async () => {
    const res = await grove(['doctor', '--json']);
    const report = JSON.parse(res.stdout);
    expect(Number(report.criu.version.split('.')[0]) * 100 + Number(report.criu.version.split('.')[1])).toBeGreaterThanOrEqual(402);
    expect(report.criu.checkPassed).toBe(true);
    expect(report.checks.find((c: { name: string }) => c.name === 'pool').ok).toBe(true);
    expect(report.checks.find((c: { name: string }) => c.name === 'disk limits')).toMatchObject({ ok: true, detail: expect.stringContaining('simple quotas') });
    // The test's helper was started detached from the test runner and left its cgroups.
    expect(report.checks.find((c: { name: string }) => c.name === 'helper')).toMatchObject({ ok: true, detail: 'runs in a session and cgroups of its own' });
  });

  it('ends quietly when its reader stops reading (grove doctor | head -0)', async () => {
    const cli = spawn(path.join(REPO, 'main/bin/grove'), ['--socket', instance().socketPath, 'doctor'], { stdio: ['ignore', 'pipe', 'pipe'] });
    cli.stdout.destroy(); // gone before the first line: its first write fails with EPIPE
    let stderr = '';
    cli.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const [code] = (await once(cli, 'exit')) as [number | null];
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('creates, lists, execs into and removes a workspace', async () => {
    const created = await grove(['ws', 'create', 'cli-ws', '--port', '8080', '--json']);
    expect(created.exitCode).toBe(0);
    const ws = await track(JSON.parse(created.stdout));
    try {
      expect(ws.ports.map((p: { containerPort: number }) => p.containerPort).sort()).toEqual([3000, 8080]);
      const human = await grove(['ls']);
      expect(human.stdout).toMatch(new RegExp(`${ws.id}\\s+cli-ws\\s+running\\s+${ws.vncSocket}\\s`));
      expect((await grove(['ws', 'start', ws.id])).stdout).toContain(`desktop:  ${ws.vncSocket} (VNC`);
      const list = JSON.parse((await grove(['ls', '--json'])).stdout);
      expect(list.map((w: { id: string }) => w.id)).toContain(ws.id);
      // Space: per branch in the list when asked, the pool's free space, and the whole picture in grove space.
      const withSpace = (await grove(['ls', '--space'])).stdout;
      expect(withSpace).toMatch(new RegExp(`${ws.id}\\s+cli-ws\\s+running\\s+\\d+\\.\\d MiB\\s`));
      expect(withSpace).toMatch(/^pool: [\d.]+ of [\d.]+ MiB free$/m);
      const space = (await grove(['space'])).stdout;
      expect(space).toMatch(new RegExp(`^cli-ws\\trunning\\t[\\d.]+\\t[\\d.]+$`, 'm'));
      expect((await grove(['stats'])).stdout).toMatch(/^pool: [\d.]+ of [\d.]+ MiB free/m);

      const exec = await grove(['exec', '-i', ws.id, '--', 'sh', '-c', 'cat; echo to-stderr >&2; exit 3'], 'piped-in\n');
      expect(exec.exitCode).toBe(3);
      expect(exec.stdout).toBe('piped-in\n');
      expect(exec.stderr).toBe('to-stderr\n');

      const missing = await grove(['exec', 'no-such-ws', '--', 'true']);
      expect(missing.exitCode).toBe(2);
      expect(missing.stderr).toContain("no workspace 'no-such-ws'");

      // Its disk limit: set with a size, shown with what its files wrote against it.
      const limits = await grove(['ws', 'limits', 'cli-ws', '--disk', '256M']);
      expect(limits.stdout).toMatch(/^cli-ws: memory 2 GiB, 2048 processes and threads, CPU weight 100, disk \d+ [KM]iB of 256 MiB$/m);
      expect((await grove(['ws', 'show', 'cli-ws'])).stdout).toMatch(/^disk: {5}\d+ [KM]iB of 256 MiB$/m);
      const notASize = await grove(['ws', 'limits', 'cli-ws', '--disk', '10X']);
      expect(notASize.exitCode).toBe(2);
      expect(notASize.stderr).toContain('not a size: 10X (e.g. 2G, 1536M)');

      const bad = await grove(['ws', 'create', '../escape']);
      expect(bad.exitCode).toBe(2);
      expect(bad.stderr).toContain('E_INVALID_PARAMS');

      const stopped = JSON.parse((await grove(['ws', 'stop', 'cli-ws', '--json'])).stdout);
      expect(stopped.state).toBe('stopped');
    } finally {
      const rm = await grove(['ws', 'rm', ws.id]);
      expect(rm.stdout).toContain(`deleted ${ws.id}`);
    }
  });
});
