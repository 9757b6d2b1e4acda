import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ByteReader } from '../../src/desktop/byte-reader.js';
import { Framebuffer } from '../../src/desktop/framebuffer.js';
import { Encoding } from '../../src/desktop/rfb-protocol.js';
import { RfbSession } from '../../src/desktop/rfb-session.js';
import { FakeVnc } from './desktop-fake-vnc.js';
import { holdsFor, until } from '../until.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

async function connected(width = 64, height = 48): Promise<{ vnc: FakeVnc; session: RfbSession }> {
  const vnc = await FakeVnc.start(width, height);
  open.push(vnc);
  vnc.paint(0, 0, width, height, [10, 20, 30]);
  const session = await RfbSession.open('127.0.0.1', vnc.port, 5000);
  open.push(session);
  return { vnc, session };
}

const pixel = (fb: Framebuffer, x: number, y: number) => [...fb.pixels.subarray((y * fb.width + x) * 4, (y * fb.width + x) * 4 + 3)];

describe('RfbSession', () => {
  it('asks for 32-bit RGBX, Raw/CopyRect and the pseudo-encodings, and opens with the whole screen', async () => {
    const { vnc, session } = await connected();
    expect([...vnc.pixelFormat!.subarray(0, 4)]).toEqual([32, 24, 0, 1]);
    expect([...vnc.pixelFormat!.subarray(10, 13)]).toEqual([0, 8, 16]); // red, green, blue shifts
    expect(vnc.encodings[0]).toEqual([Encoding.raw, Encoding.copyRect, Encoding.desktopSize, Encoding.fence, Encoding.cursorPosition]);
    expect(vnc.requests.find((r) => !r.incremental)).toEqual({ incremental: false, x: 0, y: 0, width: 64, height: 48 });
    expect(pixel(session.framebuffer, 63, 47)).toEqual([10, 20, 30]);
  });

  it('keeps an incremental request outstanding and reports what changed', async () => {
    const { vnc, session } = await connected();
    const changes: unknown[] = [];
    session.onChange((c) => changes.push(c));
    await session.sync();
    expect(vnc.requests.at(-1)).toMatchObject({ incremental: true, width: 64, height: 48 });
    vnc.paint(5, 6, 3, 2, [200, 0, 0]);
    await until(() => changes.length === 1);
    expect(changes[0]).toEqual({ x: 5, y: 6, width: 3, height: 2 });
    expect(pixel(session.framebuffer, 7, 7)).toEqual([200, 0, 0]);
    // Repainting the same colour changes nothing: no change is reported.
    vnc.paint(5, 6, 3, 2, [200, 0, 0]);
    await session.sync();
    await holdsFor(50, () => changes.length === 1, 'repainting the same colour reports no change');
  });

  it('resolves sync only after the server has read the input sent before it', async () => {
    const { vnc, session } = await connected();
    session.pointer(10, 11, 1);
    session.key(0x61, true);
    session.key(0x61, false);
    await session.sync();
    expect(vnc.input).toEqual([
      { kind: 'pointer', buttons: 1, x: 10, y: 11 },
      { kind: 'key', down: true, keysym: 0x61 },
      { kind: 'key', down: false, keysym: 0x61 },
    ]);
    expect(session.cursor).toEqual({ x: 10, y: 11 });
    expect(session.buttons).toBe(1);
  });

  it('refresh asks for the screen, fences, then asks for the probe alone', async () => {
    const { vnc, session } = await connected();
    await session.sync(); // the request that followed the first update has arrived
    const before = vnc.requests.length;
    await session.refresh({ x: 3, y: 4, width: 1, height: 1 });
    expect(vnc.requests.slice(before, before + 2)).toEqual([
      { incremental: true, x: 0, y: 0, width: 64, height: 48 },
      { incremental: false, x: 3, y: 4, width: 1, height: 1 },
    ]);
  });

  it('refresh ignores an update that was on its way before the fence came back', async () => {
    const { vnc, session } = await connected();
    vnc.paint(0, 0, 64, 48, [0, 255, 0]);
    await session.sync();
    vnc.pause();
    let done = false;
    const refreshed = session.refresh({ x: 0, y: 0, width: 64, height: 48 }).then(() => (done = true));
    await until(() => vnc.requests.some((r) => !r.incremental && vnc.requests.indexOf(r) > 0));
    // An older picture covering the whole region, sent ahead of the fence's answer.
    const now = Buffer.from(vnc.screen);
    vnc.screen.fill(7);
    vnc.inject(vnc.update([{ x: 0, y: 0, width: 64, height: 48 }]));
    vnc.screen = now;
    await holdsFor(100, () => !done, 'an update sent before the fence came back leaves the refresh waiting');
    vnc.resume();
    await refreshed;
    expect(pixel(session.framebuffer, 30, 30)).toEqual([0, 255, 0]);
  });

  it("answers the server's own fences with its payload and without the request flag", async () => {
    const { vnc, session } = await connected();
    const answered = new Promise<Buffer>((resolve) => (vnc.onFenceAnswer = resolve));
    const fence = Buffer.from([248, 0, 0, 0, 0x80, 0, 0, 1, 3, 9, 8, 7]);
    vnc.inject(fence);
    const reply = await answered;
    expect(reply.readUInt32BE(4)).toBe(1); // blockBefore, no request flag
    expect([...reply.subarray(9)]).toEqual([9, 8, 7]);
    await session.sync();
  });

  it('follows a new screen size and the pointer position the server reports', async () => {
    const { vnc, session } = await connected();
    const rect = (x: number, y: number, w: number, h: number, encoding: number) => {
      const b = Buffer.alloc(12);
      b.writeUInt16BE(x, 0);
      b.writeUInt16BE(y, 2);
      b.writeUInt16BE(w, 4);
      b.writeUInt16BE(h, 6);
      b.writeInt32BE(encoding, 8);
      return b;
    };
    vnc.inject(Buffer.concat([Buffer.from([0, 0, 0, 2]), rect(0, 0, 32, 16, Encoding.desktopSize), rect(12, 13, 0, 0, Encoding.cursorPosition)]));
    await until(() => session.framebuffer.width === 32);
    expect(session.framebuffer.height).toBe(16);
    expect(session.cursor).toEqual({ x: 12, y: 13 });
    // The copy of the new screen starts blank: the whole of it is asked for.
    await until(() => vnc.requests.some((r) => !r.incremental && r.width === 32 && r.height === 16));
  });

  it('fails what is pending when the connection drops, and says so', async () => {
    const { vnc, session } = await connected();
    const changes: unknown[] = [];
    session.onChange((c) => changes.push(c));
    vnc.pause();
    const pending = session.sync();
    await until(() => vnc.fencesAsked > 0, { what: "the sync's fence to reach the server" });
    const dropped = vnc.dropClients();
    await expect(pending).rejects.toMatchObject({ code: 'E_HOST' });
    await dropped;
    expect(session.closed).not.toBeNull();
    expect(changes).toEqual([null]);
    expect(() => session.key(0x61, true)).toThrow(/connection to the desktop's VNC server is gone/);
  });

  it('refuses a server that is not RFB, with E_HOST', async () => {
    const server = net.createServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise((r) => server.close(r)) });
    const port = (server.address() as net.AddressInfo).port;
    await expect(RfbSession.open('127.0.0.1', port, 2000)).rejects.toMatchObject({ code: 'E_HOST', message: expect.stringContaining('not an RFB server') });
  });
});

describe('Framebuffer', () => {
  it('copies overlapping rectangles as if through a copy (CopyRect)', () => {
    const fb = new Framebuffer(4, 1);
    fb.putRaw({ x: 0, y: 0, width: 4, height: 1 }, Buffer.from([1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]));
    expect(fb.copyRect({ x: 1, y: 0, width: 3, height: 1 }, 0, 0)).toEqual({ x: 1, y: 0, width: 3, height: 1 });
    expect([0, 1, 2, 3].map((i) => fb.pixels[i * 4])).toEqual([1, 1, 2, 3]);
  });

  it('reports only the pixels that changed', () => {
    const fb = new Framebuffer(8, 3);
    const data = Buffer.alloc(8 * 3 * 4);
    data[(1 * 8 + 2) * 4] = 9;
    data[(2 * 8 + 5) * 4 + 1] = 9;
    expect(fb.putRaw({ x: 0, y: 0, width: 8, height: 3 }, data)).toEqual({ x: 2, y: 1, width: 4, height: 2 });
    expect(fb.putRaw({ x: 0, y: 0, width: 8, height: 3 }, data)).toBeNull();
  });

  it('refuses a rectangle off the screen', () => {
    expect(() => new Framebuffer(4, 4).putRaw({ x: 3, y: 0, width: 2, height: 1 }, Buffer.alloc(8))).toThrow(/outside the 4x4 screen/);
  });
});

describe('ByteReader', () => {
  it('reads exact lengths across chunks, and fails reads after the end', async () => {
    const [a, b] = await socketPair();
    const reader = new ByteReader(b);
    a.write(Buffer.from([1, 2]));
    a.write(Buffer.from([3, 4, 5]));
    expect([...(await reader.read(4))]).toEqual([1, 2, 3, 4]);
    expect([...(await reader.read(0))]).toEqual([]);
    expect([...(await reader.read(1))]).toEqual([5]);
    a.end();
    await expect(reader.read(1)).rejects.toThrow(/closed/);
    b.destroy();
  });
});

async function socketPair(): Promise<[net.Socket, net.Socket]> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const other = await accepted;
  server.close();
  return [client, other];
}
