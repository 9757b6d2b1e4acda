// One RFB connection to a desktop's VNC server, kept open for computer use.
// It holds a copy of the screen current to within one update: one incremental
// update request is always outstanding, and Xvnc answers it as soon as
// something on the screen changes. Input goes out as RFB key and pointer
// events; fences (answered in order with the messages before them) tell when
// the server has processed what was sent before.
import net from 'node:net';
import { GroveError } from '../protocol/wire.js';
import { ByteReader } from './byte-reader.js';
import { BYTES_PER_PIXEL, Framebuffer, union } from './framebuffer.js';
import {
  checkScreen,
  clientFence,
  Encoding,
  FenceFlag,
  handshake,
  keyEvent,
  pointerEvent,
  readRectHeader,
  readServerMessage,
  setEncodings,
  setPixelFormatRgbx,
  updateRequest,
  type Rect,
} from './rfb-protocol.js';

/** Raw first: every pixel arrives as is (a loopback link makes compression cost more than it saves). */
const ENCODINGS = [Encoding.raw, Encoding.copyRect, Encoding.desktopSize, Encoding.fence, Encoding.cursorPosition];

/** A server that answers no fence or refresh for this long is taken for hung: the session ends (the next call reconnects). */
const ANSWER_TIMEOUT_MS = 15_000;

/** A refresh waits for an update that covers its probe and was written after the call began. */
interface RefreshWaiter {
  region: Rect;
  /** The fence sent just before the request has come back: updates from now on are fresh. */
  fenced: boolean;
  resolve: () => void;
  reject: (e: Error) => void;
}

export class RfbSession {
  readonly framebuffer: Framebuffer;
  /**
   * Where the pointer is: where X had it when the session opened, where this
   * session last put it, or where the server said an app moved it (Xvnc
   * reports warps, not other viewers' moves).
   */
  cursor: { x: number; y: number };
  /** Mouse buttons this session holds down (RFB button mask). */
  buttons = 0;
  /** Why the connection ended; null while it is open. */
  closed: Error | null = null;

  private nextFence = 1;
  /** Fences sent and not yet answered: called back as the answer is read, before the next message. */
  private readonly fences = new Map<number, { answered: () => void; broke: (e: Error) => void }>();
  private readonly refreshes = new Set<RefreshWaiter>();
  private readonly changeListeners = new Set<(changed: Rect | null) => void>();

  /** Connects, negotiates, and resolves once the whole screen has arrived. */
  static async open(host: string, port: number, timeoutMs: number): Promise<RfbSession> {
    const socket = net.connect({ host, port });
    socket.setNoDelay(true);
    const reader = new ByteReader(socket);
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    try {
      const init = await handshake(socket, reader);
      const session = new RfbSession(socket, reader, init.width, init.height);
      await session.refresh({ x: 0, y: 0, width: init.width, height: init.height });
      return session;
    } catch (e) {
      socket.destroy();
      throw new GroveError('E_HOST', `cannot reach the desktop's VNC server at ${host}:${port}: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private constructor(
    private readonly socket: net.Socket,
    private readonly reader: ByteReader,
    width: number,
    height: number,
  ) {
    this.framebuffer = new Framebuffer(width, height);
    // Xvnc does not say where the pointer is on connecting: a fresh one starts it in the middle, and whoever
    // opens a session on a desktop that has run for a while asks X (SessionPool's `opened`).
    this.cursor = { x: Math.floor(width / 2), y: Math.floor(height / 2) };
    socket.on('close', () => this.fail(new Error('the connection closed')));
    this.send(setPixelFormatRgbx(), setEncodings(ENCODINGS));
    void this.readMessages();
  }

  /** The screen's size now. */
  get size(): { width: number; height: number } {
    return { width: this.framebuffer.width, height: this.framebuffer.height };
  }

  pointer(x: number, y: number, buttons: number): void {
    this.send(pointerEvent(buttons, x, y));
    this.cursor = { x, y };
    this.buttons = buttons;
  }

  key(keysym: number, down: boolean): void {
    this.send(keyEvent(down, keysym));
  }

  /** Resolves once the server has processed everything sent before (input included). */
  sync(): Promise<void> {
    return new Promise((resolve, reject) => this.fence(resolve, reject));
  }

  /**
   * Brings the whole screen up to date as of now: an incremental request for
   * the screen, a fence, then a non-incremental request for `probe`. Xvnc
   * answers the probe with everything else that changed in the same update,
   * and an update read after the fence's answer was written after the call,
   * so the first such update that covers the probe leaves the copy current.
   * A small probe keeps a screenshot of an unchanged screen from costing a
   * whole-screen transfer.
   */
  refresh(probe: Rect): Promise<void> {
    return new Promise((resolve, reject) => {
      const answered = this.watchdog('a screen update');
      const waiter: RefreshWaiter = {
        region: probe,
        fenced: false,
        resolve: () => (answered(), resolve()),
        reject: (e) => (answered(), reject(e)),
      };
      this.refreshes.add(waiter);
      this.send(updateRequest(true, this.whole()));
      this.fence(() => (waiter.fenced = true), waiter.reject);
      this.send(updateRequest(false, probe));
    });
  }

  /** Called with what changed after every update that changed pixels, and with null once when the connection ends. */
  onChange(listener: (changed: Rect | null) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  close(): void {
    this.socket.destroy();
    this.fail(new Error('the session was closed'));
  }

  private whole(): Rect {
    return { x: 0, y: 0, ...this.size };
  }

  private fence(answered: () => void, broke: (e: Error) => void): void {
    const id = this.nextFence++;
    this.send(clientFence(FenceFlag.request | FenceFlag.blockBefore, fencePayload(id)));
    const done = this.watchdog('a fence');
    this.fences.set(id, { answered: () => (done(), answered()), broke: (e) => (done(), broke(e)) });
  }

  /** Ends the session unless the returned function is called within ANSWER_TIMEOUT_MS. */
  private watchdog(awaited: string): () => void {
    const timer = setTimeout(() => {
      this.socket.destroy();
      this.fail(new Error(`the server sent no answer to ${awaited} within ${ANSWER_TIMEOUT_MS / 1000} s`));
    }, ANSWER_TIMEOUT_MS).unref();
    return () => clearTimeout(timer);
  }

  private send(...messages: Buffer[]): void {
    this.assertOpen();
    this.socket.write(messages.length === 1 ? messages[0]! : Buffer.concat(messages));
  }

  private assertOpen(): void {
    if (this.closed) throw new GroveError('E_HOST', `the connection to the desktop's VNC server is gone: ${this.closed.message}`);
  }

  private async readMessages(): Promise<void> {
    try {
      for (;;) {
        const msg = await readServerMessage(this.reader);
        if (msg.type === 'update') await this.readUpdate(msg.rects);
        else if (msg.type === 'fence') this.onFence(msg.flags, msg.payload);
      }
    } catch (e) {
      this.socket.destroy();
      this.fail(e as Error);
    }
  }

  private async readUpdate(rects: number): Promise<void> {
    const fb = this.framebuffer;
    const covered = new Map<RefreshWaiter, number>();
    const cover = (r: Rect) => {
      for (const w of this.refreshes) if (w.fenced) covered.set(w, (covered.get(w) ?? 0) + overlap(r, w.region));
    };
    let changed: Rect | null = null;
    let resized = false;
    for (let i = 0; i < rects; i++) {
      const r = await readRectHeader(this.reader);
      switch (r.encoding) {
        case Encoding.raw:
          fb.check(r);
          changed = union(changed, fb.putRaw(r, await this.reader.read(r.width * r.height * BYTES_PER_PIXEL)));
          cover(r);
          break;
        case Encoding.copyRect: {
          const src = await this.reader.read(4);
          changed = union(changed, fb.copyRect(r, src.readUInt16BE(0), src.readUInt16BE(2)));
          cover(r);
          break;
        }
        case Encoding.desktopSize:
          checkScreen(r.width, r.height);
          fb.resize(r.width, r.height);
          resized = true;
          changed = union(changed, { x: 0, y: 0, width: r.width, height: r.height });
          this.dropRefreshesOffScreen();
          break;
        case Encoding.cursorPosition:
          this.cursor = { x: r.x, y: r.y };
          break;
        default:
          throw new Error(`the server sent encoding ${r.encoding}, which was not asked for`);
      }
    }
    // The next request first (the server may answer it while the rest of this runs); after a
    // new screen size, the whole new screen (the copy starts out blank).
    this.send(updateRequest(!resized, this.whole()));
    for (const [w, area] of covered) {
      if (area >= w.region.width * w.region.height) {
        this.refreshes.delete(w);
        w.resolve();
      }
    }
    if (changed) {
      for (const listener of this.changeListeners) listener(changed);
    }
  }

  /** A refresh whose probe is no longer on the screen would wait forever. */
  private dropRefreshesOffScreen(): void {
    for (const w of this.refreshes) {
      if (this.framebuffer.contains(w.region)) continue;
      this.refreshes.delete(w);
      w.reject(new GroveError('E_CONFLICT', `the screen changed size to ${this.framebuffer.width}x${this.framebuffer.height} meanwhile`));
    }
  }

  private onFence(flags: number, payload: Buffer): void {
    if (flags & FenceFlag.request) {
      // The server's own round-trip probe: answered at once, with the flags we honour.
      this.send(clientFence(flags & (FenceFlag.blockBefore | FenceFlag.blockAfter | FenceFlag.syncNext), payload));
      return;
    }
    if (payload.length !== 4) return;
    const id = payload.readUInt32BE(0);
    this.fences.get(id)?.answered();
    this.fences.delete(id);
  }

  private fail(e: Error): void {
    if (this.closed) return;
    this.closed = e;
    const gone = new GroveError('E_HOST', `the connection to the desktop's VNC server broke: ${e.message}`);
    for (const f of this.fences.values()) f.broke(gone);
    this.fences.clear();
    for (const w of this.refreshes) w.reject(gone);
    this.refreshes.clear();
    for (const listener of this.changeListeners) listener(null);
  }
}

function fencePayload(id: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(id, 0);
  return b;
}

/** Pixels two rectangles share. */
function overlap(a: Rect, b: Rect): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  return w > 0 && h > 0 ? w * h : 0;
}
