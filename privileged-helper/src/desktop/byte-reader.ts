// Exact-length reads from a socket, for a binary protocol read message by
// message (RFB). Chunks are queued as they arrive and joined only when a read
// spans several of them, so a 4 MB framebuffer rectangle costs one copy, not
// one per 64 KB chunk.
//
// What a branch sends is read as root, so it is bounded: past BUFFERED_LIMIT
// bytes read ahead of what the protocol asked for, the socket is paused until
// reads take them (a server that streams without end costs at most that); a
// read of more than MAX_READ bytes, which no sane message needs, fails.
import type net from 'node:net';

/** Bytes held beyond what reads asked for before the socket is paused. */
export const BUFFERED_LIMIT = 8 << 20;
/** The most one read may ask for (a raw rectangle of the largest screen allowed, rfb-protocol.ts MAX_SCREEN_PIXELS × 4). */
export const MAX_READ = 64 << 20;

export class ByteReader {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private failure: Error | null = null;
  private waiting: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | null = null;

  constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
      this.settle();
      if (this.buffered > BUFFERED_LIMIT && !this.waiting) socket.pause();
    });
    socket.on('error', (e) => this.fail(e));
    socket.on('end', () => this.fail(new Error('server closed the connection')));
    socket.on('close', () => this.fail(new Error('connection closed')));
  }

  /** The next n bytes; an end, error or close fails the pending and every later read. */
  read(n: number): Promise<Buffer> {
    if (this.waiting) throw new Error('one read at a time');
    if (n > MAX_READ) return Promise.reject(new Error(`the server sent a message of ${n} bytes, over the ${MAX_READ} a desktop ever needs`));
    return new Promise((resolve, reject) => {
      this.waiting = { n, resolve, reject };
      this.settle();
      if (this.waiting) this.socket.resume(); // it waits for more: read on
    });
  }

  private settle(): void {
    const w = this.waiting;
    if (!w) return;
    if (this.buffered >= w.n) {
      this.waiting = null;
      w.resolve(this.take(w.n));
    } else if (this.failure) {
      this.waiting = null;
      w.reject(this.failure);
    }
  }

  private take(n: number): Buffer {
    if (n === 0) return Buffer.alloc(0);
    this.buffered -= n;
    const first = this.chunks[0]!;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[0]!;
      const used = Math.min(chunk.length, n - filled);
      chunk.copy(out, filled, 0, used);
      filled += used;
      if (used === chunk.length) this.chunks.shift();
      else this.chunks[0] = chunk.subarray(used);
    }
    return out;
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.settle();
  }
}
