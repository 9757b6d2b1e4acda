// Two programs joined by the helper (host/pipe-programs.ts): every byte goes
// through, however fast either ends; a failure is told by the program that
// caused it, and a script's own words become the request's error.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pipePrograms, SAID_INVALID, SAID_NOT_FOUND } from '../../src/host/pipe-programs.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-pipe-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sh = (script: string, name: string) => ({ command: ['sh', ['-c', script]] as const, name });

describe('pipePrograms', () => {
  it('passes every byte of a writer that ends at once, and counts them', async () => {
    const out = path.join(dir, 'out');
    for (let i = 0; i < 20; i++) {
      const bytes = await pipePrograms({ from: sh('printf hello', 'writer'), to: sh(`sleep 0.05; cat > ${out}`, 'reader') });
      expect(bytes).toBe(5);
      expect(readFileSync(out, 'utf8')).toBe('hello');
    }
  });

  it('passes a stream much larger than a pipe holds, with back-pressure', async () => {
    const out = path.join(dir, 'out');
    const bytes = await pipePrograms({ from: sh('head -c 20000000 /dev/zero', 'writer'), to: sh(`sleep 0.2; wc -c > ${out}`, 'reader') });
    expect(bytes).toBe(20_000_000);
    expect(readFileSync(out, 'utf8').trim()).toBe('20000000');
  });

  it("tells the writer's own failure, not the reader's complaint about what it got", async () => {
    await expect(pipePrograms({ from: sh('echo broken >&2; exit 5', 'the writer'), to: sh('cat >/dev/null; exit 9', 'the reader') })).rejects.toMatchObject({
      code: 'E_HOST',
      message: 'the writer failed (exit 5): broken',
    });
  });

  it("tells the reader's failure when the writer only died of it (SIGPIPE)", async () => {
    await expect(pipePrograms({ from: sh('yes', 'the writer'), to: sh('head -c 1 >/dev/null; echo stopped >&2; exit 3', 'the reader') })).rejects.toMatchObject(
      {
        message: 'the reader failed (exit 3): stopped',
      },
    );
  });

  it("turns a script's own words into the request's error", async () => {
    await expect(
      pipePrograms({ from: sh('printf x', 'w'), to: sh(`cat >/dev/null; echo 'grove: /x is a symlink' >&2; exit ${SAID_INVALID}`, 'r') }),
    ).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: '/x is a symlink',
    });
    await expect(
      pipePrograms({ from: sh(`echo 'grove: there is no /y' >&2; exit ${SAID_NOT_FOUND}`, 'w'), to: sh('cat >/dev/null', 'r') }),
    ).rejects.toMatchObject({
      code: 'E_NOT_FOUND',
      message: 'there is no /y',
    });
  });

  it('ends both when whoever asked goes away', async () => {
    const gone = new AbortController();
    const piping = pipePrograms({ from: sh('exec sleep 30', 'w'), to: sh('exec cat >/dev/null', 'r'), signal: gone.signal });
    setTimeout(() => gone.abort(new Error('the connection closed')), 100);
    const t0 = Date.now();
    await expect(piping).rejects.toThrow('the connection closed');
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});
