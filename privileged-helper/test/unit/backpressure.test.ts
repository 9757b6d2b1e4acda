// The helper's outgoing side of a connection (server/outgoing.ts), over a real
// Unix socket pair: it stops reading a client that does not read, reads on once
// the client caught up, and disconnects it once too much is left unread.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { Outgoing } from '../../src/server/outgoing.js';
import { until } from '../until.js';

interface Pair {
  /** The helper's end, reading requests as a connection does. */
  helperEnd: net.Socket;
  /** The client's end, which reads nothing until told to. */
  clientEnd: net.Socket;
}

const opened: { dir: string; server: net.Server; sockets: net.Socket[] }[] = [];

async function socketPair(): Promise<Pair> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'grove-backpressure-'));
  const server = net.createServer();
  server.listen(path.join(dir, 's.sock'));
  await once(server, 'listening');
  const clientEnd = net.connect(path.join(dir, 's.sock'));
  clientEnd.pause();
  const [helperEnd] = (await once(server, 'connection')) as [net.Socket];
  helperEnd.on('data', () => undefined);
  opened.push({ dir, server, sockets: [helperEnd, clientEnd] });
  return { helperEnd, clientEnd };
}

afterEach(() => {
  for (const { dir, server, sockets } of opened.splice(0)) {
    for (const s of sockets) s.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

const line = (bytes: number) => `${'x'.repeat(bytes - 1)}\n`;

/** Reads from the client's end until `bytes` arrived. */
async function readBytes(clientEnd: net.Socket, bytes: number): Promise<number> {
  let received = 0;
  clientEnd.on('data', (d: Buffer) => (received += d.length));
  clientEnd.resume();
  await until(() => received >= bytes, { what: `${bytes} bytes` });
  return received;
}

describe('outgoing back-pressure', () => {
  it('stops reading requests while the client does not read, and reads on once it did', async () => {
    const { helperEnd, clientEnd } = await socketPair();
    const outgoing = new Outgoing(helperEnd, 64 << 20, () => expect.fail('nothing was left unread past the limit'));
    let sent = 0;
    while (!helperEnd.isPaused()) {
      outgoing.send(line(4096));
      sent += 4096;
    }
    expect(helperEnd.writableLength).toBeGreaterThan(0);

    await readBytes(clientEnd, sent);
    await expect.poll(() => helperEnd.isPaused()).toBe(false);
  });

  it('disconnects a client that leaves more than the limit unread, once, saying how much', async () => {
    const { helperEnd } = await socketPair();
    const limit = 256 << 10;
    const overflows: number[] = [];
    const outgoing = new Outgoing(helperEnd, limit, (unread) => overflows.push(unread));
    for (let i = 0; i < 1000 && !helperEnd.destroyed; i++) outgoing.send(line(16 << 10));
    expect(helperEnd.destroyed).toBe(true);
    outgoing.send(line(16)); // after the disconnect: dropped, not counted again
    expect(overflows).toHaveLength(1);
    expect(overflows[0]).toBeGreaterThan(limit);
    expect(overflows[0]).toBeLessThanOrEqual(limit + (16 << 10));
  });

  it('sends one message larger than the limit whole when nothing else waits', async () => {
    const { helperEnd, clientEnd } = await socketPair();
    const outgoing = new Outgoing(helperEnd, 1024, () => expect.fail('a single message is not an overflow'));
    outgoing.send(line(4 << 20));
    expect(await readBytes(clientEnd, 4 << 20)).toBe(4 << 20);
    expect(helperEnd.destroyed).toBe(false);
  });
});
