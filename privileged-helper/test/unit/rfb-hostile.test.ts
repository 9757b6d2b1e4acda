// A branch's VNC server is the branch's: it may say anything. What it
// announces is bounded (clipboard text, screen size, a rectangle's place), the
// session ends saying why, and a server that streams without end makes the
// helper hold no more than the reader's limit.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BUFFERED_LIMIT, ByteReader } from '../../src/desktop/byte-reader.js';
import { RfbSession } from '../../src/desktop/rfb-session.js';
import { until } from '../until.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** An RFB 3.8 server that completes the handshake for a `width`×`height` screen, then does `then`. */
async function hostile(then: (s: net.Socket) => void, width = 64, height = 48): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.write('RFB 003.008\n');
    let step = 0;
    s.on('data', () => {
      step++;
      if (step === 1) s.write(Buffer.from([1, 1])); // one security type: None
      if (step === 2) s.write(Buffer.alloc(4)); // SecurityResult: OK
      if (step === 3) {
        const init = Buffer.alloc(24 + 4);
        init.writeUInt16BE(width, 0);
        init.writeUInt16BE(height, 2);
        init.writeUInt32BE(4, 20);
        init.write('evil', 24);
        s.write(init);
        then(s);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closing.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return (server.address() as net.AddressInfo).port;
}

/** A FramebufferUpdate of one raw rectangle (pixels zero). */
function rawUpdate(x: number, y: number, w: number, h: number): Buffer {
  const head = Buffer.alloc(4 + 12);
  head.writeUInt8(0, 0);
  head.writeUInt16BE(1, 2);
  head.writeUInt16BE(x, 4);
  head.writeUInt16BE(y, 6);
  head.writeUInt16BE(w, 8);
  head.writeUInt16BE(h, 10);
  head.writeInt32BE(0, 12);
  return Buffer.concat([head, Buffer.alloc(w * h * 4)]);
}

describe('a hostile VNC server', () => {
  it('may not announce clipboard text of gigabytes: the session ends, saying so', async () => {
    const port = await hostile((s) => {
      const cut = Buffer.alloc(8);
      cut.writeUInt8(3, 0);
      cut.writeUInt32BE(0xfffffff0, 4);
      s.write(cut);
      s.write(Buffer.alloc(1 << 20));
    });
    await expect(RfbSession.open('127.0.0.1', port, 5000)).rejects.toMatchObject({
      code: 'E_HOST',
      message: expect.stringContaining('announced clipboard text of 4294967280 bytes, over 1048576'),
    });
  });

  it('may not announce a screen larger than Grove holds', async () => {
    const port = await hostile(() => undefined, 65535, 65535);
    await expect(RfbSession.open('127.0.0.1', port, 5000)).rejects.toMatchObject({ message: expect.stringContaining('announced a 65535×65535 screen') });
  });

  it('may not send a rectangle outside its screen: it is refused before its pixels are read', async () => {
    const port = await hostile((s) => s.write(rawUpdate(0, 0, 4000, 4000)));
    await expect(RfbSession.open('127.0.0.1', port, 5000)).rejects.toMatchObject({ message: expect.stringContaining('outside the 64x48 screen') });
  });
});

describe('ByteReader', () => {
  it('holds at most its limit of what a server streams ahead of the reads', async () => {
    let sent = 0;
    let sentAt = Date.now();
    const server = net.createServer((s) => {
      s.on('error', () => undefined);
      const chunk = Buffer.alloc(1 << 20);
      const pump = () => {
        while (sent < 256 << 20 && s.write(chunk)) {
          sent += chunk.length;
          sentAt = Date.now();
        }
        if (sent < 256 << 20) s.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closing.push(() => new Promise((r) => server.close(r)));
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    closing.push(async () => void socket.destroy());
    const reader = new ByteReader(socket);
    expect((await reader.read(16)).length).toBe(16);
    await until(() => Date.now() - sentAt > 300, { what: 'the server to be held back', timeoutMs: 10_000 });
    const held = (reader as unknown as { buffered: number }).buffered;
    expect(held).toBeLessThanOrEqual(BUFFERED_LIMIT + (1 << 20));
    expect(sent).toBeLessThan(64 << 20); // the server was held back too
    // Reading on resumes the flow.
    expect((await reader.read(BUFFERED_LIMIT * 2)).length).toBe(BUFFERED_LIMIT * 2);
  });

  it('refuses a read no message needs', async () => {
    const server = net.createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closing.push(() => new Promise((r) => server.close(r)));
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    closing.push(async () => void socket.destroy());
    await expect(new ByteReader(socket).read(0xfffffff0)).rejects.toThrow(/over the 67108864 a desktop ever needs/);
  });
});
