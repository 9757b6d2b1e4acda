// Waits until a workspace's VNC server (TigerVNC Xvnc, -SecurityTypes None)
// really serves pictures: the RFB handshake (RFC 6143) up to ServerInit, then one
// non-incremental FramebufferUpdateRequest for the whole screen, done when the
// first FramebufferUpdate header arrives. The server may not listen yet (or
// the host port's forwarder may accept and drop the connection while nothing
// listens behind it), so every failure before the deadline means: try again.
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { GroveError } from '../protocol/wire.js';

const RETRY_MS = 100;
const SECURITY_NONE = 1;

export interface FirstFrame {
  /** From the call until the server's ProtocolVersion banner (of the attempt that succeeded). */
  bannerMs: number;
  /** From the call until the first FramebufferUpdate header. */
  frameMs: number;
}

export async function firstFrame(host: string, port: number, opts: { timeoutMs: number }): Promise<FirstFrame> {
  const start = performance.now();
  const deadline = start + opts.timeoutMs;
  let lastError = 'no attempt';
  while (performance.now() < deadline) {
    try {
      return await attempt(host, port, start, deadline);
    } catch (e) {
      lastError = e instanceof Error ? e.message : String(e);
    }
    const left = deadline - performance.now();
    if (left > 0) await sleep(Math.min(RETRY_MS, left));
  }
  throw new GroveError('E_HOST', `no VNC frame from ${host}:${port} within ${opts.timeoutMs} ms (last: ${lastError})`);
}

/** One connection: resolves on the first frame, rejects on any failure or at the deadline. */
async function attempt(host: string, port: number, start: number, deadline: number): Promise<FirstFrame> {
  const socket = net.connect({ host, port });
  socket.setNoDelay(true);
  const reader = new Reader(socket);
  const timer = setTimeout(() => socket.destroy(new Error('deadline passed')), Math.max(0, deadline - performance.now()));
  try {
    const banner = (await reader.read(12)).toString('latin1');
    const bannerMs = performance.now() - start;
    const m = /^RFB (\d{3})\.(\d{3})\n$/.exec(banner);
    if (!m) throw new Error(`not an RFB server: ${JSON.stringify(banner)}`);
    const minor = Number(m[1]) > 3 ? 8 : Number(m[2]);
    if (Number(m[1]) < 3 || minor < 3) throw new Error(`unsupported RFB version ${banner.trim()}`);
    const version = minor >= 8 ? 8 : minor >= 7 ? 7 : 3;
    socket.write(`RFB 003.00${version}\n`);

    if (version === 3) {
      // 3.3: the server picks the security type.
      const type = (await reader.read(4)).readUInt32BE(0);
      if (type === 0) throw new Error(`server refused: ${await reason(reader)}`);
      if (type !== SECURITY_NONE) throw new Error(`server wants security type ${type}, not None`);
    } else {
      const count = (await reader.read(1))[0]!;
      if (count === 0) throw new Error(`server refused: ${await reason(reader)}`);
      const types = [...(await reader.read(count))];
      if (!types.includes(SECURITY_NONE)) throw new Error(`server offers security types ${types.join(',')}, not None`);
      socket.write(Buffer.from([SECURITY_NONE]));
    }
    if (version === 8) {
      // 3.8 sends a SecurityResult even for None (3.7 and 3.3 do not).
      const result = (await reader.read(4)).readUInt32BE(0);
      if (result !== 0) throw new Error(`security handshake failed: ${await reason(reader)}`);
    }

    socket.write(Buffer.from([1])); // ClientInit: shared, so the app's viewer may stay connected
    const init = await reader.read(24); // width, height, pixel format (16), name length
    const width = init.readUInt16BE(0);
    const height = init.readUInt16BE(2);
    await reader.read(init.readUInt32BE(20)); // desktop name

    const request = Buffer.alloc(10);
    request.writeUInt8(3, 0); // FramebufferUpdateRequest
    request.writeUInt8(0, 1); // not incremental: the whole screen, now
    request.writeUInt16BE(0, 2);
    request.writeUInt16BE(0, 4);
    request.writeUInt16BE(width, 6);
    request.writeUInt16BE(height, 8);
    socket.write(request);

    for (;;) {
      const type = (await reader.read(1))[0]!;
      switch (type) {
        case 0: // FramebufferUpdate: padding, number of rectangles
          await reader.read(3);
          return { bannerMs, frameMs: performance.now() - start };
        case 1: {
          // SetColourMapEntries: padding, first colour, count, 6 bytes each
          const head = await reader.read(5);
          await reader.read(6 * head.readUInt16BE(3));
          break;
        }
        case 2: // Bell
          break;
        case 3: {
          // ServerCutText: 3 padding, length, text
          const head = await reader.read(7);
          await reader.read(head.readUInt32BE(3));
          break;
        }
        default:
          throw new Error(`unexpected server message type ${type} before the first frame`);
      }
    }
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
}

async function reason(reader: Reader): Promise<string> {
  const length = (await reader.read(4)).readUInt32BE(0);
  return (await reader.read(Math.min(length, 4096))).toString('utf8');
}

/** Exact-length reads from a socket; an end, error or close fails the pending and every later read. */
class Reader {
  private buffered = Buffer.alloc(0);
  private failure: Error | null = null;
  private waiting: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | null = null;

  constructor(socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.settle();
    });
    socket.on('error', (e) => this.fail(e));
    socket.on('end', () => this.fail(new Error('server closed the connection')));
    socket.on('close', () => this.fail(new Error('connection closed')));
  }

  read(n: number): Promise<Buffer> {
    if (this.waiting) throw new Error('one read at a time');
    return new Promise((resolve, reject) => {
      this.waiting = { n, resolve, reject };
      this.settle();
    });
  }

  private settle(): void {
    const w = this.waiting;
    if (!w) return;
    if (this.buffered.length >= w.n) {
      this.waiting = null;
      const out = this.buffered.subarray(0, w.n);
      this.buffered = this.buffered.subarray(w.n);
      w.resolve(out);
    } else if (this.failure) {
      this.waiting = null;
      w.reject(this.failure);
    }
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.settle();
  }
}
