// A tiny RFB 3.8 server for the desktop unit tests: a screen of solid
// colours, answering update requests with Raw rectangles and fences at once,
// recording the input it receives. Only what the protocol edge cases need.
import net from 'node:net';

export interface InputEvent {
  kind: 'key' | 'pointer';
  down?: boolean;
  keysym?: number;
  buttons?: number;
  x?: number;
  y?: number;
}

export class FakeVnc {
  readonly input: InputEvent[] = [];
  readonly encodings: number[][] = [];
  readonly requests: { incremental: boolean; x: number; y: number; width: number; height: number }[] = [];
  pixelFormat: Buffer | null = null;
  /** Called with each client fence that answers one of the server's. */
  onFenceAnswer: ((fence: Buffer) => void) | null = null;
  connections = 0;
  /** Fences the clients asked to be answered. */
  fencesAsked = 0;
  /** R, G, B, unused per pixel, as the client asked for. */
  screen: Buffer;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private pending: net.Socket[] = [];
  /** While paused, answers are queued (in order) instead of sent: a test can slip other messages in first. */
  private queued: [net.Socket, Buffer][] | null = null;

  private constructor(
    readonly width: number,
    readonly height: number,
  ) {
    this.screen = Buffer.alloc(width * height * 4);
    this.server = net.createServer((s) => this.serve(s));
  }

  /** Listens on `port` (0: any free one). */
  static async start(width = 64, height = 48, port = 0): Promise<FakeVnc> {
    const vnc = new FakeVnc(width, height);
    await new Promise<void>((resolve) => vnc.server.listen(port, '127.0.0.1', resolve));
    return vnc;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Paints a rectangle and sends it to every client with an incremental request outstanding. */
  paint(x: number, y: number, width: number, height: number, rgb: [number, number, number]): void {
    for (let row = y; row < y + height; row++) {
      for (let col = x; col < x + width; col++) this.screen.set([...rgb, 0], (row * this.width + col) * 4);
    }
    const waiting = this.pending;
    this.pending = [];
    for (const s of waiting) s.write(this.update([{ x, y, width, height }]));
  }

  pause(): void {
    this.queued ??= [];
  }

  resume(): void {
    const queued = this.queued ?? [];
    this.queued = null;
    for (const [socket, b] of queued) socket.write(b);
  }

  /** Sends bytes to every client now, ahead of any queued answer. */
  inject(b: Buffer): void {
    for (const s of this.sockets) s.write(b);
  }

  /** Client connections open now; one closed by its client is gone from the count. */
  get openClients(): number {
    return this.sockets.size;
  }

  /**
   * Closes every client connection (as a fork or a restarted desktop would),
   * done when each client has closed its end too: it has seen the close.
   */
  async dropClients(): Promise<void> {
    const closed = [...this.sockets].map((s) => new Promise((r) => s.once('close', r)));
    for (const s of this.sockets) s.end();
    await Promise.all(closed);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }

  /** A FramebufferUpdate with these rectangles as Raw pixels. */
  update(rects: { x: number; y: number; width: number; height: number }[]): Buffer {
    const parts: Buffer[] = [Buffer.from([0, 0, rects.length >> 8, rects.length & 255])];
    for (const r of rects) {
      const head = Buffer.alloc(12);
      head.writeUInt16BE(r.x, 0);
      head.writeUInt16BE(r.y, 2);
      head.writeUInt16BE(r.width, 4);
      head.writeUInt16BE(r.height, 6);
      head.writeInt32BE(0, 8);
      parts.push(head);
      for (let row = r.y; row < r.y + r.height; row++) parts.push(this.screen.subarray((row * this.width + r.x) * 4, (row * this.width + r.x + r.width) * 4));
    }
    return Buffer.concat(parts);
  }

  private serve(s: net.Socket): void {
    this.connections++;
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => undefined);
    let buffered = Buffer.alloc(0);
    let stage: 'version' | 'security' | 'init' | 'normal' = 'version';
    s.write('RFB 003.008\n');
    s.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const used = stage === 'normal' ? this.message(s, buffered) : handshakeStep();
        if (used === 0) return;
        buffered = buffered.subarray(used);
      }
    });
    const handshakeStep = (): number => {
      const need = { version: 12, security: 1, init: 1 }[stage as 'version'];
      if (buffered.length < need) return 0;
      if (stage === 'version') {
        s.write(Buffer.from([1, 1])); // one security type: None
        stage = 'security';
      } else if (stage === 'security') {
        s.write(Buffer.from([0, 0, 0, 0]));
        stage = 'init';
      } else {
        const init = Buffer.alloc(24);
        init.writeUInt16BE(this.width, 0);
        init.writeUInt16BE(this.height, 2);
        s.write(init); // pixel format left zero: the client sets its own; empty name
        stage = 'normal';
      }
      return need;
    };
  }

  private answer(s: net.Socket, b: Buffer): void {
    if (this.queued) this.queued.push([s, b]);
    else s.write(b);
  }

  /** Handles one client message if it is complete; returns the bytes it used (0: wait for more). */
  private message(s: net.Socket, b: Buffer): number {
    if (b.length < 1) return 0;
    switch (b[0]) {
      case 0:
        if (b.length < 20) return 0;
        this.pixelFormat = Buffer.from(b.subarray(4, 20));
        return 20;
      case 2: {
        if (b.length < 4) return 0;
        const n = b.readUInt16BE(2);
        if (b.length < 4 + 4 * n) return 0;
        this.encodings.push(Array.from({ length: n }, (_, i) => b.readInt32BE(4 + 4 * i)));
        return 4 + 4 * n;
      }
      case 3: {
        if (b.length < 10) return 0;
        const r = { incremental: b[1] === 1, x: b.readUInt16BE(2), y: b.readUInt16BE(4), width: b.readUInt16BE(6), height: b.readUInt16BE(8) };
        this.requests.push(r);
        if (r.incremental) this.pending.push(s);
        else this.answer(s, this.update([r]));
        return 10;
      }
      case 4:
        if (b.length < 8) return 0;
        this.input.push({ kind: 'key', down: b[1] === 1, keysym: b.readUInt32BE(4) });
        return 8;
      case 5:
        if (b.length < 6) return 0;
        this.input.push({ kind: 'pointer', buttons: b[1]!, x: b.readUInt16BE(2), y: b.readUInt16BE(4) });
        return 6;
      case 248: {
        if (b.length < 9 || b.length < 9 + b[8]!) return 0;
        if (!(b.readUInt32BE(4) & 0x80000000)) {
          this.onFenceAnswer?.(Buffer.from(b.subarray(0, 9 + b[8]!)));
          return 9 + b[8]!;
        }
        this.fencesAsked++;
        const reply = Buffer.from(b.subarray(0, 9 + b[8]!));
        reply.writeUInt32BE(b.readUInt32BE(4) & 0x7fffffff, 4); // the answer: without the request flag
        this.answer(s, reply);
        return 9 + b[8]!;
      }
      default:
        throw new Error(`the fake VNC server does not know client message ${b[0]}`);
    }
  }
}
