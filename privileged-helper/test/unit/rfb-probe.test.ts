import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { firstFrame, type RfbEndpoint } from '../../src/desktop/rfb-probe.js';
import { holdsFor, until } from '../until.js';

const servers: net.Server[] = [];
const sockets: net.Socket[] = [];
/** What went wrong in a server side a test played: the test fails with it. */
const serverFailures: unknown[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  expect(serverFailures.splice(0)).toEqual([]);
});

/** Listens on a free loopback port (or at a Unix socket path); `onConnection` plays the server side. */
async function listen(onConnection: (socket: net.Socket) => void | Promise<void>, socketPath?: string): Promise<RfbEndpoint> {
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    Promise.resolve(onConnection(socket)).catch((err: unknown) => serverFailures.push(err));
  });
  servers.push(server);
  if (socketPath) {
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    return { path: socketPath };
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port };
}

/** RFB 3.8 with only None offered, up to the client's FramebufferUpdateRequest. */
async function handshake(s: net.Socket, name: string): Promise<void> {
  s.write('RFB 003.008\n');
  await expectBytes(s, 12);
  s.write(Buffer.from([1, 1]));
  await expectBytes(s, 1);
  s.write(Buffer.from([0, 0, 0, 0]));
  await expectBytes(s, 1);
  s.write(serverInit(64, 48, name));
  await expectBytes(s, 10);
}

/** A server that offers only None and sends the update header at once. */
async function playServer(s: net.Socket): Promise<void> {
  await handshake(s, 'x');
  s.write(Buffer.from([0, 0, 0, 1]));
}

/** Resolves with the next `n` bytes the client sends. */
function expectBytes(socket: net.Socket, n: number): Promise<Buffer> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      got = Buffer.concat([got, chunk]);
      if (got.length >= n) {
        socket.off('data', onData);
        if (got.length > n) socket.unshift(got.subarray(n));
        resolve(got.subarray(0, n));
      }
    };
    socket.on('data', onData);
  });
}

function serverInit(width: number, height: number, name: string): Buffer {
  const b = Buffer.alloc(24);
  b.writeUInt16BE(width, 0);
  b.writeUInt16BE(height, 2);
  Buffer.from([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]).copy(b, 4);
  b.writeUInt32BE(Buffer.byteLength(name), 20);
  return Buffer.concat([b, Buffer.from(name)]);
}

describe('firstFrame', () => {
  it('does the RFB 3.8 handshake with security None and resolves on the first FramebufferUpdate header', async () => {
    const sent: Record<string, Buffer> = {};
    const at = await listen(async (s) => {
      s.write('RFB 003.008\n');
      sent.version = await expectBytes(s, 12);
      s.write(Buffer.from([2, 2, 1])); // offers VncAuth and None
      sent.security = await expectBytes(s, 1);
      s.write(Buffer.from([0, 0, 0, 0])); // SecurityResult OK
      sent.clientInit = await expectBytes(s, 1);
      s.write(serverInit(1280, 800, 'grove:0'));
      sent.request = await expectBytes(s, 10);
      s.write(Buffer.from([2])); // a Bell first: skipped
      s.write(Buffer.from([0, 0, 0, 1])); // FramebufferUpdate, 1 rectangle (never sent)
    });
    const t = await firstFrame(at, { timeoutMs: 5000 });
    expect(sent.version!.toString('latin1')).toBe('RFB 003.008\n');
    expect([...sent.security!]).toEqual([1]);
    expect([...sent.clientInit!]).toEqual([1]);
    expect([...sent.request!]).toEqual([3, 0, 0, 0, 0, 0, 1280 >> 8, 1280 & 255, 800 >> 8, 800 & 255]);
    expect(t.bannerMs).toBeGreaterThanOrEqual(0);
    expect(t.frameMs).toBeGreaterThanOrEqual(t.bannerMs);
  });

  it('does not resolve before the update header arrives', async () => {
    let sendHeader: (() => void) | null = null;
    const at = await listen(async (s) => {
      await handshake(s, '');
      sendHeader = () => s.write(Buffer.from([0, 0, 0, 1]));
    });
    let done = false;
    const probe = firstFrame(at, { timeoutMs: 5000 }).then((r) => ((done = true), r));
    const send = await until(() => sendHeader, { what: 'the handshake' });
    await holdsFor(300, () => !done, 'the probe waits for the update header');
    send();
    await expect(probe).resolves.toMatchObject({ frameMs: expect.any(Number) });
  });

  it('retries while the server drops connections before its banner', async () => {
    let connections = 0;
    const at = await listen((s) => {
      if (++connections < 3) {
        s.destroy();
        return;
      }
      return playServer(s);
    });
    await firstFrame(at, { timeoutMs: 5000 });
    expect(connections).toBe(3);
  });

  it("reaches the server through a Unix socket (a branch's desktop socket)", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'grove-rfb-'));
    try {
      const at = await listen(playServer, path.join(dir, 'vnc.sock'));
      await expect(firstFrame(at, { timeoutMs: 5000 })).resolves.toMatchObject({ frameMs: expect.any(Number) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the socket path when it times out', async () => {
    await expect(firstFrame({ path: '/nonexistent/vnc.sock' }, { timeoutMs: 300 })).rejects.toThrow(/no VNC frame from \/nonexistent\/vnc\.sock .*ENOENT/);
  });

  it('rejects at the deadline when the server never sends a frame', async () => {
    const at = await listen((s) => {
      s.write('RFB 003.008\n'); // and then nothing
    });
    const started = Date.now();
    await expect(firstFrame(at, { timeoutMs: 400 })).rejects.toThrow(/no VNC frame .* within 400 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('rejects at the deadline when nothing listens', async () => {
    const at = await listen(() => {});
    await new Promise((r) => servers.pop()!.close(r));
    await expect(firstFrame(at, { timeoutMs: 300 })).rejects.toThrow(/ECONNREFUSED/);
  });
});
