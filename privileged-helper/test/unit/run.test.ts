// run() for real: the helper's programs started by grove-spawn
// (native/grove-spawn.c, built by build/host/setup.sh) through
// host/program-starter.ts, with what execa gave before it: output, exit
// codes, input, environment, working directory, timeouts, signals, lines as
// they come, and nothing of the helper's own leaking into a program.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_LINE_CHARS, MAX_OUTPUT_BYTES } from '../../src/host/program-starter.js';
import { programStarter, run } from '../../src/host/run.js';
import { groveSpawnPath } from '../../src/tool-paths.js';
import { until } from '../until.js';

const dir = mkdtempSync(path.join(tmpdir(), 'grove-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('run', () => {
  it('returns what a program wrote, without the final newline, and its exit code', async () => {
    expect(await run('sh', ['-c', 'echo out; echo err >&2'])).toEqual({ exitCode: 0, signal: null, stdout: 'out', stderr: 'err' });
    expect(await run('sh', ['-c', 'printf "a\\n\\n"; exit 3'], { allowFailure: true })).toMatchObject({ exitCode: 3, stdout: 'a\n' });
  });

  it('turns a failure into an E_HOST error naming the tool, its exit code and its last words', async () => {
    await expect(run('sh', ['-c', 'echo why it failed >&2; exit 7'])).rejects.toMatchObject({
      code: 'E_HOST',
      message: 'sh -c echo why it failed >&2; exit 7: exit 7: why it failed',
    });
  });

  it('gives the input on stdin, and /dev/null without one', async () => {
    expect((await run('cat', [], { input: 'given\nlines' })).stdout).toBe('given\nlines');
    expect((await run('sh', ['-c', 'readlink /proc/self/fd/0'])).stdout).toBe('/dev/null');
    const big = 'x'.repeat(3 << 20); // more than a pipe holds: written as the program reads
    expect((await run('wc', ['-c'], { input: big })).stdout.trim()).toBe(String(big.length));
  });

  it("adds the given environment to the helper's, and runs where it is told", async () => {
    const res = await run('sh', ['-c', 'echo "$GROVE_RUN_TEST:$HOME"; pwd'], { env: { GROVE_RUN_TEST: 'given' }, cwd: dir });
    expect(res.stdout).toBe(`given:${process.env.HOME ?? ''}\n${dir}`);
  });

  it('finds a program on the PATH it is given', async () => {
    const tool = path.join(dir, 'grove-run-test-tool');
    writeFileSync(tool, '#!/bin/sh\necho found\n', { mode: 0o755 });
    expect((await run('grove-run-test-tool', [], { env: { PATH: `${dir}:/usr/bin:/bin` } })).stdout).toBe('found');
  });

  it('gives a program a file as its fd 3, and no other descriptor than its three and that one', async () => {
    const file = path.join(dir, 'fd3');
    writeFileSync(file, 'content of fd 3');
    expect((await run('sh', ['-c', 'cat <&3'], { fd3Path: file })).stdout).toBe('content of fd 3');
    // ls lists its own descriptors: 0-2, and the directory it reads (/proc/self/fd).
    const fds = (await run('ls', ['/proc/self/fd'])).stdout.split('\n').map(Number);
    expect(fds.sort()).toEqual([0, 1, 2, 3]);
    const opened = (await run('ls', ['-l', '/proc/self/fd/'])).stdout;
    expect(opened).not.toMatch(/ 3 -> (?!\/proc)/);
  });

  it('starts programs with default signal handling and nothing blocked', async () => {
    const status = (await run('cat', ['/proc/self/status'])).stdout;
    expect(status).toMatch(/^SigBlk:\s+0+$/m);
    // But for signals 32 and 33, glibc's own, which its posix_spawn leaves ignored (and glibc programs take over).
    const ignored = BigInt(`0x${/^SigIgn:\s+([0-9a-f]+)$/m.exec(status)![1]}`);
    expect(ignored & ~0x180000000n).toBe(0n);
  });

  it('says why a program could not start, as a failure or as a result', async () => {
    await expect(run('grove-no-such-tool', ['x'])).rejects.toMatchObject({
      code: 'E_HOST',
      message: 'grove-no-such-tool x: could not start: ENOENT (No such file or directory)',
    });
    expect(await run(path.join(dir, 'missing'), [], { allowFailure: true })).toMatchObject({
      exitCode: -1,
      stderr: 'could not start: ENOENT (No such file or directory)',
    });
    await expect(run('sh', [], { fd3Path: path.join(dir, 'no-such-file') })).rejects.toThrow(/could not start: ENOENT/);
  });

  it('ends a program that runs past its timeout', async () => {
    const pidFile = path.join(dir, 'slow.pid');
    await expect(run('sh', ['-c', `echo $$ > ${pidFile}; exec sleep 30`], { timeoutMs: 300 })).rejects.toThrow(/: timed out$/);
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('says which signal ended a program', async () => {
    expect(await run('sh', ['-c', 'kill -KILL $$'], { allowFailure: true })).toMatchObject({ exitCode: -1, signal: 'SIGKILL' });
    await expect(run('sh', ['-c', 'kill -TERM $$'])).rejects.toThrow(/: killed by SIGTERM$/);
  });

  it('hands each line of stdout and stderr over as it comes', async () => {
    const lines: string[] = [];
    const done = run('sh', ['-c', 'echo first; echo second >&2; sleep 0.3; printf last'], { onLine: (l) => lines.push(l) });
    const early = await until(() => lines.length >= 2 && [...lines], { what: 'the first two lines' });
    expect(early.sort()).toEqual(['first', 'second']);
    await done;
    expect(lines).toContain('last');
  });

  it('hands over a character whose bytes came apart whole', async () => {
    const lines: string[] = [];
    // "é" is two bytes: the pause makes grove-spawn send them in two frames.
    const res = await run('sh', ['-c', "printf 'caf\\303'; sleep 0.2; printf '\\251\\n'"], { onLine: (l) => lines.push(l) });
    expect(lines).toEqual(['café']);
    expect(res.stdout).toBe('café');
  });

  it('keeps large output whole, and many programs at once apart', async () => {
    expect((await run('head', ['-c', String(5 << 20), '/dev/zero'])).stdout.length).toBe(5 << 20);
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => run('sh', ['-c', `sleep 0.0${i % 10}; echo ${i}; echo e${i} >&2`])));
    expect(results.map((r) => `${r.stdout}/${r.stderr}`)).toEqual(Array.from({ length: 40 }, (_, i) => `${i}/e${i}`));
  });

  it('keeps at most MAX_OUTPUT_BYTES of a stream, and hands a line without end over in bounded pieces', async () => {
    expect((await run('head', ['-c', String(MAX_OUTPUT_BYTES + (4 << 20)), '/dev/zero'])).stdout.length).toBe(MAX_OUTPUT_BYTES);
    const pieces: number[] = [];
    await run('sh', ['-c', `head -c ${3 * MAX_LINE_CHARS + 5} /dev/zero | tr '\\0' x`], { onLine: (l) => pieces.push(l.length) });
    expect(pieces).toEqual([MAX_LINE_CHARS, MAX_LINE_CHARS, MAX_LINE_CHARS, 5]);
  });

  it('refuses an argument with a NUL byte and starts nothing', async () => {
    await expect(run('touch', [path.join(dir, 'nul\0file')])).rejects.toMatchObject({ code: 'E_INVALID_PARAMS' });
    expect((await run('ls', [dir])).stdout).not.toContain('nul');
  });

  it('fails what was in flight when grove-spawn dies, and starts it again for the next program', async () => {
    const pidFile = path.join(dir, 'orphan.pid');
    const running = run('sh', ['-c', `echo $$ > ${pidFile}; exec sleep 30`]);
    await until(() => existsSync(pidFile), { what: 'the program to start' });
    const first = programStarter().pid!;
    process.kill(first, 'SIGKILL');
    await expect(running).rejects.toMatchObject({ code: 'E_HOST', message: expect.stringMatching(/grove-spawn .*exited: SIGKILL/) });
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL'); // it ran on, as a program does when the helper dies
    expect((await run('echo', ['again'])).stdout).toBe('again');
    expect(programStarter().pid).not.toBe(first);
  });

  it('grove-spawn refuses a malformed request with a reason, and starts nothing', async () => {
    const marker = path.join(dir, 'malformed-started');
    const frame = (body: Buffer) => Buffer.concat([Buffer.from(Uint32Array.of(body.length).buffer), body]);
    const header = (argc: number, stringsLen: number) => Buffer.from(Uint32Array.of(1, 0, 0, argc, 0, stringsLen).buffer);
    const strings = Buffer.from(`touch\0\0\0touch\0${marker}\0`);
    for (const [input, why] of [
      [frame(Buffer.alloc(8)), /too short/],
      [frame(Buffer.concat([header(5, strings.length), strings])), /do not match its counts/],
      [frame(Buffer.concat([header(2, strings.length + 9), strings])), /malformed/],
      [Buffer.from(Uint32Array.of(0xffffffff).buffer), /too large/],
    ] as const) {
      const res = spawnSync(groveSpawnPath(process.env), [], { input, encoding: 'utf8' });
      expect(res.status).toBe(1);
      expect(res.stderr).toMatch(why);
    }
    expect(() => readFileSync(marker)).toThrow(/ENOENT/);
    // The same request, well formed, does start it.
    const ok = spawnSync(groveSpawnPath(process.env), [], { input: frame(Buffer.concat([header(2, strings.length), strings])) });
    expect(ok.status).toBe(0);
    // grove-spawn ended with its input; the program it started runs on to its end.
    await until(() => existsSync(marker), { what: 'the program grove-spawn started to run to its end' });
  });
});
