// native/grove-share.c and the action program (native/grove-action.c) for
// real (built by build/host/setup.sh). This host cannot load grove_share, so every capture
// and attach is refused, and the tests check that the refusal is clear and
// reaches CRIU as a failed action; the guest in kernel/test.sh runs the same
// holder and action program with the module (kernel/tests/fork_test.c).
import { execa } from 'execa';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ShareHolder } from '../../src/host/share-holder.js';

const {
  kernelTier: { tool },
  groveAction,
} = loadConfig();
const dir = mkdtempSync(path.join(tmpdir(), 'grove-share-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the kernel tier snapshot holder', () => {
  it('answers on its socket while it runs, and goes with its socket when stopped', async () => {
    const socket = path.join(dir, 'a.sock');
    const holder = await ShareHolder.start(tool, socket);
    expect(holder.session).toEqual({ socket, tool });
    const capture = await execa(tool, ['capture', socket, String(process.pid)], { reject: false });
    expect(capture.exitCode).toBe(1);
    expect(capture.stderr).toBe('error cannot open /dev/grove-share: No such file or directory');
    await holder.stop();
    expect(existsSync(socket)).toBe(false);
    const after = await execa(tool, ['attach', socket, String(process.pid)], { reject: false });
    expect(after.stderr).toMatch(/^grove-share: no holder at .*a\.sock/);
  });

  it('refuses a malformed request', async () => {
    const socket = path.join(dir, 'b.sock');
    const holder = await ShareHolder.start(tool, socket);
    try {
      expect((await execa(tool, ['capture', socket, 'nobody'], { reject: false })).stderr).toBe('error malformed request');
      expect((await execa(tool, ['forget', socket, '1'], { reject: false })).stderr).toMatch(/^usage: grove-share/);
    } finally {
      await holder.stop();
    }
  });

  it('makes the post-dump and pre-resume actions fail when the holder refuses', async () => {
    const socket = path.join(dir, 'c.sock');
    const holder = await ShareHolder.start(tool, socket);
    try {
      for (const action of ['post-dump', 'pre-resume']) {
        const env = { CRTOOLS_SCRIPT_ACTION: action, CRTOOLS_INIT_PID: String(process.pid), GROVE_SHARE_SOCKET: socket, GROVE_SHARE_TOOL: tool };
        const run = await execa(groveAction, [], { env, extendEnv: false, reject: false });
        expect(run.exitCode, action).toBe(1);
        expect(run.stderr, action).toContain('cannot open /dev/grove-share');
      }
      // Without the kernel tier the same actions have nothing to do.
      expect((await execa(groveAction, [], { env: { CRTOOLS_SCRIPT_ACTION: 'pre-resume' }, extendEnv: false, reject: false })).exitCode).toBe(0);
    } finally {
      await holder.stop();
    }
  });

  it("lets a checkpoint's dump go on when its capture is refused, without the mark that says it was made", async () => {
    const socket = path.join(dir, 'e.sock');
    const captured = path.join(dir, 'e.captured');
    const holder = await ShareHolder.start(tool, socket);
    try {
      // The images of a checkpoint hold all its memory: the capture is for rollbacks to share, nothing depends on it.
      const env = {
        CRTOOLS_SCRIPT_ACTION: 'post-dump',
        CRTOOLS_INIT_PID: String(process.pid),
        GROVE_SHARE_SOCKET: socket,
        GROVE_SHARE_TOOL: tool,
        GROVE_SHARE_CAPTURED: captured,
      };
      const run = await execa(groveAction, [], { env, extendEnv: false, reject: false });
      expect(run.exitCode).toBe(0);
      expect(run.stderr).toContain('cannot open /dev/grove-share');
      expect(existsSync(captured)).toBe(false);
    } finally {
      await holder.stop();
    }
  });

  it('says why it did not start', async () => {
    await expect(ShareHolder.start(tool, path.join(dir, 'no-such-dir', 'd.sock'))).rejects.toThrow(
      /snapshot holder did not start: grove-share: listening: No such file or directory/,
    );
  });
});
