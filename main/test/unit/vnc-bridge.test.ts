// The app's bridge from a browser's WebSocket to a branch's desktop socket
// holds back a desktop that sends faster than the browser reads, instead of
// queueing all of it in the app.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { bridgeToVnc, HIGH_WATER } from '../../src/streams/vnc-bridge.js';
import { until } from '../../../privileged-helper/test/until.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

describe('bridgeToVnc', () => {
  it('stops reading a desktop that streams while the browser does not read, and goes on once it does', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'grove-bridge-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const sock = path.join(dir, 'vnc.sock');
    let sent = 0;
    let sentAt = Date.now();
    const desktop = net.createServer((s) => {
      s.on('error', () => undefined);
      const chunk = Buffer.alloc(256 << 10);
      const pump = () => {
        while (sent < 512 << 20 && s.write(chunk)) {
          sent += chunk.length;
          sentAt = Date.now();
        }
        if (sent < 512 << 20) s.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => desktop.listen(sock, r));
    cleanups.push(() => desktop.close());
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((r) => wss.on('listening', r));
    wss.on('connection', (ws) => bridgeToVnc(ws, sock));
    cleanups.push(() => wss.close());
    const browser = new WebSocket(`ws://127.0.0.1:${(wss.address() as net.AddressInfo).port}`);
    cleanups.push(() => browser.terminate());
    let received = 0;
    browser.on('message', (d: Buffer) => (received += d.length));
    await new Promise((r) => browser.once('open', r));
    const raw = (browser as unknown as { _socket: net.Socket })._socket;
    raw.pause(); // the browser stops reading
    await until(() => Date.now() - sentAt > 300, { what: 'the desktop to be held back', timeoutMs: 10_000 });
    const held = sent - received;
    // What is held is the bridge's high water plus what the kernel's buffers on both sockets take.
    expect(held).toBeLessThan(HIGH_WATER + (48 << 20));
    expect(sent).toBeLessThan(128 << 20);
    raw.resume();
    await until(() => received > held, { what: 'the bridge to go on once the browser reads' });
  });
});
