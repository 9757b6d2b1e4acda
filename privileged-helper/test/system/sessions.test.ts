// Every terminal and exec belongs to the connection that asked for it: a client
// that goes away at any moment (before the helper even answered included)
// takes them along, inside the branch and on the host. A client that stops
// reading gets back-pressure: the helper stops reading its requests and
// disconnects it when what it left unread passes the bound, and never grows.
import { readdir, readFile, readlink } from 'node:fs/promises';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { PROTOCOL_VERSION } from '../../src/protocol/methods.js';
import { connect, createWorkspace, instance } from './support.js';
import { holdsFor } from '../until.js';

/** Unique to this run: every command the tests start carries it (`sleep 9999.<RUN><n>`). */
const RUN = `9999.${process.pid}${Date.now() % 100_000}`;
const MB = 1 << 20;

const requestLine = (id: number, method: string, params: object) => `${JSON.stringify({ id, method, params })}\n`;
const helloParams = (name: string) => ({ protocol: PROTOCOL_VERSION, client: { name, kind: 'test' } });
const helloLine = (name: string) => requestLine(1, 'hello', helloParams(name));

/**
 * A connection that says hello and sends `line` at once, and is destroyed `delayMs` later, counted from the
 * reply to `line` if `afterReply`. Resolves whether that reply came first.
 */
async function cutOff(line: string, delayMs: number, afterReply = false): Promise<boolean> {
  const socket = net.connect(instance().socketPath);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  const replied = () => received.split('\n').some((l) => l.startsWith('{"id":2,'));
  const reply = new Promise<void>((resolve) => socket.on('data', (d: Buffer) => ((received += d.toString('utf8')), replied() && resolve())));
  socket.write(helloLine('sessions-cut') + line);
  if (afterReply) await Promise.race([reply, sleep(30_000)]);
  if (delayMs > 0) await sleep(delayMs);
  socket.destroy();
  return replied();
}

/** Host processes whose command line contains `marker`: grove-enter and script on the host, the command inside the branch. */
async function processesWith(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(marker)) found.push(`${entry}: ${cmdline.replaceAll('\0', ' ').slice(0, 160)}`);
  }
  return found;
}

async function expectNoneLeft(marker: string): Promise<void> {
  await expect.poll(() => processesWith(marker), { timeout: 20_000, interval: 250 }).toEqual([]);
}

const helperPid = async () => Number(await readFile(instance().pidFile, 'utf8'));

async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}

/** How many host PTYs the helper holds (one per open terminal). */
async function ptysOf(pid: number): Promise<number> {
  const fds = await readdir(`/proc/${pid}/fd`);
  const targets = await Promise.all(fds.map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')));
  return targets.filter((t) => t === '/dev/ptmx').length;
}

/** The helper's peak RSS while `during` runs, sampled every 50 ms. */
async function peakRss(pid: number, during: Promise<unknown>): Promise<number> {
  let peak = await rssBytes(pid);
  let done = false;
  void during.finally(() => (done = true)).catch(() => undefined);
  while (!done) {
    peak = Math.max(peak, await rssBytes(pid));
    await sleep(50);
  }
  return Math.max(peak, await rssBytes(pid));
}

/** A client that never reads: it says hello, sends `lines`, and finds out it was disconnected by writing (EPIPE). */
function deafClient(lines: string): { socket: net.Socket; closed: Promise<void> } {
  const socket = net.connect(instance().socketPath);
  socket.pause();
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  socket.write(helloLine('sessions-deaf') + lines);
  return { socket, closed };
}

let c: HelperClient;
let ws: Workspace;

beforeAll(async () => {
  c = await connect('sessions');
  ws = await createWorkspace(c, 'sessions');
});

afterAll(async () => {
  if (ws) await c?.request('workspace.delete', { workspace: ws.id }).catch(() => undefined);
  c?.close();
});

describe('sessions end with their connection', () => {
  it('ends 100 terminals cut off at random moments, before and after the reply', async () => {
    const marker = `${RUN}1`;
    const pid = await helperPid();
    const ptysBefore = await ptysOf(pid);
    let answered = 0;
    for (let n = 0; n < 100; n += 4) {
      const cuts = Array.from({ length: 4 }, (_, i) => {
        const open = requestLine(2, 'exec.open', { workspace: ws.id, argv: ['sleep', `${marker}${String(n + i).padStart(3, '0')}`], cols: 80, rows: 24 });
        // One goes at once (the helper cannot have answered yet), two at a random moment while the terminal
        // starts, and one at a random moment after the reply, however slow the machine.
        return i === 0 ? cutOff(open, 0) : cutOff(open, Math.random() * 50, i === 3);
      });
      answered += (await Promise.all(cuts)).filter(Boolean).length;
    }
    process.stderr.write(`[sessions] ${100 - answered} of 100 terminals cut off before the reply\n`);
    expect(answered).toBeGreaterThan(0);
    expect(answered).toBeLessThan(100);

    await expectNoneLeft(marker);
    const inside = await c.request('exec.run', { workspace: ws.id, argv: ['pgrep', '-f', `sleep ${marker}`] });
    expect(inside.exitCode, inside.stdout).toBe(1); // pgrep: nothing matched
    await expect.poll(() => ptysOf(pid), { timeout: 10_000 }).toBeLessThanOrEqual(ptysBefore);
  });

  it('ends exec.run commands cut off before or during the run', async () => {
    const marker = `${RUN}2`;
    const runLine = (n: number) => requestLine(2, 'exec.run', { workspace: ws.id, argv: ['sleep', `${marker}${String(n).padStart(3, '0')}`] });
    await Promise.all(Array.from({ length: 20 }, (_, n) => cutOff(runLine(n), n === 0 ? 0 : Math.random() * 50)));
    // And one cut off only once its command is surely running.
    const socket = net.connect(instance().socketPath);
    socket.on('error', () => undefined);
    socket.write(helloLine('sessions-run') + runLine(999));
    await expect.poll(() => processesWith(`${marker}999`), { timeout: 20_000 }).not.toEqual([]);
    socket.destroy();

    await expectNoneLeft(marker);
  });

  it('ends an exec.run command cut off in the middle of a fork, with the child that fork makes', async () => {
    // A process with a large heap spends most of its time in fork() copying page tables: a stop sent
    // then takes effect once the fork is done, and the child shows up only after that. The helper
    // must wait for the stop and look again, or that child lives on.
    const marker = `${RUN}4`;
    const forker = [
      'import os',
      'heap = bytearray(b"x") * (512 << 20)',
      'while True:',
      `    if os.fork() == 0: os.execvp("sleep", ["sleep", "${marker}"])`,
    ].join('\n');
    for (let round = 0; round < 3; round++) {
      const socket = net.connect(instance().socketPath);
      socket.on('error', () => undefined);
      socket.write(helloLine('sessions-fork') + requestLine(2, 'exec.run', { workspace: ws.id, argv: ['python3', '-c', forker] }));
      await expect.poll(async () => (await processesWith(marker)).length, { timeout: 20_000 }).toBeGreaterThan(2);
      socket.destroy();
      await expectNoneLeft(marker);
    }
  });
});

describe('back-pressure', () => {
  it('stops reading the requests of a client that does not read its replies, and loses none', async () => {
    const pid = await helperPid();
    const before = await rssBytes(pid);
    const count = 30_000;
    const requests = Array.from({ length: count }, (_, i) => requestLine(i + 2, 'hello', helloParams('sessions-deaf'))).join('');
    const { socket } = deafClient(requests);
    try {
      const settled = (async () => {
        // The helper reads while the replies find room, then stops: the rest stays with the client.
        await expect.poll(() => socket.writableLength, { timeout: 20_000 }).toBeGreaterThan(0);
        await holdsFor(3000, () => socket.writableLength > 0, 'what the helper does not read stays with the client');
        expect(await c.request('workspace.list', {})).toBeInstanceOf(Array); // others are served meanwhile
      })();
      const peak = await peakRss(pid, settled);
      await settled;
      process.stderr.write(`[backpressure] ${count} requests, replies unread: helper RSS ${Math.round(before / MB)} MB -> peak ${Math.round(peak / MB)} MB\n`);
      expect(peak - before).toBeLessThan(60 * MB);

      // Once the client reads, every reply arrives.
      const ids = (await readLines(socket, count + 1)).map((l) => (JSON.parse(l) as { id: number }).id);
      expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: count + 1 }, (_, i) => i + 1));
    } finally {
      socket.destroy();
    }
  });

  it('disconnects a client whose unread terminal output passes the bound, and ends its terminal', async () => {
    const marker = `${RUN}3`;
    const pid = await helperPid();
    const before = await rssBytes(pid);
    const chatty = requestLine(2, 'exec.open', { workspace: ws.id, argv: ['yes', marker], cols: 80, rows: 24 });
    const requests = Array.from({ length: 5000 }, (_, i) => requestLine(i + 3, 'workspace.list', {})).join('');
    const { socket, closed } = deafClient(chatty + requests);
    // Writing is how a client that does not read finds out that the helper hung up.
    const heartbeat = setInterval(() => socket.write('\n'), 100);
    try {
      const disconnected = Promise.race([closed, sleep(60_000).then(() => Promise.reject(new Error('the client was never disconnected')))]);
      const peak = await peakRss(pid, disconnected);
      await disconnected;
      process.stderr.write(`[backpressure] a terminal's output unread: helper RSS ${Math.round(before / MB)} MB -> peak ${Math.round(peak / MB)} MB\n`);
      expect(peak - before).toBeLessThan(60 * MB);
    } finally {
      clearInterval(heartbeat);
      socket.destroy();
    }
    expect(await readFile(instance().logFile, 'utf8')).toMatch(/disconnecting .*sessions-deaf.*unread/);
    await expectNoneLeft(marker);
    expect(await c.request('workspace.list', {})).toBeInstanceOf(Array);
  });
});

/** Resumes reading a paused socket until `count` lines arrived. */
function readLines(socket: net.Socket, count: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    let rest = '';
    socket.on('data', (d: Buffer) => {
      const parts = (rest + d.toString('utf8')).split('\n');
      rest = parts.pop()!;
      lines.push(...parts);
      if (lines.length >= count) resolve(lines.slice(0, count));
    });
    socket.once('close', () => reject(new Error(`the connection closed after ${lines.length} of ${count} lines`)));
    socket.resume();
  });
}
