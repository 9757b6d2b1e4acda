// The run holder and its relay, run on the host with their directory in a
// temporary one: what the helper gets, and what a detached copy leaves.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOG_BYTES, RUN, RUN_HOLDER, RUNS_DIR } from '../../src/exec/run-holder.js';
import { frame, FrameReader } from '../../src/exec/terminal-holder.js';
import { parseDetached } from '../../src/exec/exec-service.js';
import { until } from '../until.js';

let dir = '';
let serial = 0;

interface Held {
  stdout: string;
  stderr: string;
  status: string | null;
  id: string;
}

/** Runs argv through the relay and holder; `then` acts on the relay once the command's first output is in. */
async function held(argv: string[], input = '', then?: (relay: ChildProcess) => void, logBytes = LOG_BYTES): Promise<Held> {
  const id = `e${(serial++).toString(16).padStart(8, '0')}`;
  const holder = RUN_HOLDER.replaceAll(RUNS_DIR, dir).replace(`LOG_BYTES = ${LOG_BYTES}`, `LOG_BYTES = ${logBytes}`);
  const relay = spawn('sh', ['-c', RUN.replaceAll(RUNS_DIR, dir), holder, id], { stdio: ['pipe', 'pipe', 'inherit'] });
  const got: Held = { stdout: '', stderr: '', status: null, id };
  const reader = new FrameReader((kind, payload) => {
    if (kind === 'o') {
      if (got.stdout === '') then?.(relay);
      got.stdout += payload.toString();
    } else if (kind === 'e') got.stderr += payload.toString();
    else if (kind === 'x') {
      got.status = payload.toString();
      relay.stdin.end();
    }
  });
  relay.stdout.on('data', (chunk: Buffer) => reader.push(chunk));
  relay.stdin.write(frame('c', Buffer.from(JSON.stringify(argv))));
  relay.stdin.write(frame('i', Buffer.from(input)));
  relay.stdin.write(frame('e'));
  await new Promise((resolve) => relay.on('close', resolve));
  return got;
}

/** Ends the relay (its shell turned cat, and the cat it started), as a fork's child has none. */
function endRelay(relay: ChildProcess): void {
  spawn('pkill', ['-KILL', '-P', String(relay.pid)]).on('close', () => relay.kill('SIGKILL'));
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'grove-runs-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a run's holder", () => {
  it('passes input, stdout, stderr and the exit status, and leaves no log behind', async () => {
    expect(await held(['sh', '-c', 'tr a-z A-Z; echo err >&2; exit 3'], 'shout')).toMatchObject({ stdout: 'SHOUT', stderr: 'err\n', status: '3' });
    expect(await held(['sh', '-c', 'wc -c'], 'x'.repeat(300_000))).toMatchObject({ stdout: '300000\n', status: '0' });
    expect(await held(['sh', '-c', 'kill -TERM $$'])).toMatchObject({ status: '-15' });
    expect(await held(['no-such-program-here'])).toMatchObject({ stderr: expect.stringContaining('no-such-program-here'), status: '127' });
    expect(await held(['sh', '-c', 'yes | head -1'])).toMatchObject({ stdout: 'y\n', status: '0' }); // SIGPIPE is the command's again
    // The command is not on the holder's own command line, where pgrep -f (and pkill -f) would find it.
    expect(await held(['pgrep', '-f', 'no process is called grove-run-holder-test'])).toMatchObject({ stdout: '', status: '1' });
    expect(await readdir(dir)).toEqual([]);
  });

  it('kills the command and what it started when told', async () => {
    const marker = `sleep 3${serial}1`;
    const got = await held(['sh', '-c', `echo started; ${marker} & ${marker}`], '', (relay) => relay.stdin!.write(frame('k')));
    expect(got.status).toBe('-9');
    const left = await new Promise<string>((resolve) => {
      let out = '';
      spawn('pgrep', ['-f', `^${marker}$`])
        .stdout.on('data', (d: Buffer) => (out += d.toString()))
        .on('close', () => resolve(out));
    });
    expect(left).toBe('');
  });

  it('runs on without its relay, its output in a bounded log with its exit status', async () => {
    const got = await held(['sh', '-c', 'echo first; sleep 1; head -c 5000 /dev/zero | tr "\\0" x; echo; echo last; exit 4'], '', endRelay, 2000);
    expect(got.stdout).toBe('first\n');
    const home = path.join(dir, got.id);
    await until(
      () =>
        readFile(path.join(home, 'status'), 'utf8').then(
          () => true,
          () => false,
        ),
      { what: 'the detached run to end', timeoutMs: 10_000 },
    );
    expect(await readFile(path.join(home, 'status'), 'utf8')).toBe('4');
    const log = (await readFile(path.join(home, 'log.1'), 'utf8')) + (await readFile(path.join(home, 'log'), 'utf8'));
    expect(log.length).toBeLessThanOrEqual(2 * (2000 + 32768));
    expect(log).toMatch(/x+\nlast\n$/);
    expect(parseDetached(`${got.id} 4 sh -c echo first\n`)).toEqual([{ id: got.id, command: 'sh -c echo first', exitStatus: 4 }]);
  });
});

describe('the listing of detached runs', () => {
  it('takes what parses and leaves out the rest', () => {
    expect(parseDetached('e0000000a running sleep 60\ne0000000b -9 xdotool search\nbogus line\ne1 0 x\n')).toEqual([
      { id: 'e0000000a', command: 'sleep 60', exitStatus: null },
      { id: 'e0000000b', command: 'xdotool search', exitStatus: -9 },
    ]);
  });
});
