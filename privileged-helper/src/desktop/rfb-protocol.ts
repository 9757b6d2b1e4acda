// The RFB protocol (RFC 6143) as far as Grove speaks it to a workspace's VNC
// server (TigerVNC Xvnc, -SecurityTypes None): the handshake up to ServerInit,
// the client messages it sends, and the server messages it reads. Shared by
// the first-frame probe (rfb-probe.ts) and the computer-use session
// (rfb-session.ts), so the wire format lives in one place.
import type net from 'node:net';
import type { ByteReader } from './byte-reader.js';

const SECURITY_NONE = 1;

/**
 * What a branch's VNC server may announce, read as root: past these the
 * session is dropped and the caller told why. A desktop's clipboard text is
 * never read (Grove does not use it) but is skipped only up to this length;
 * a screen is at most 8192 on a side and 16 million pixels (64 MiB of frame).
 */
export const MAX_CUT_TEXT_BYTES = 1 << 20;
export const MAX_SCREEN_SIDE = 8192;
export const MAX_SCREEN_PIXELS = 16 << 20;
const MAX_NAME_BYTES = 4096;

export const Encoding = {
  raw: 0,
  copyRect: 1,
  /** Pseudo-encodings: the server tells about a new screen size, answers fences, reports where the pointer went. */
  desktopSize: -223,
  extendedDesktopSize: -308,
  fence: -312,
  cursorPosition: 0x574d5666, // VMware's: a rectangle whose x,y is the pointer
} as const;

/** ClientFence / ServerFence flags (the RFB community extension). */
export const FenceFlag = { blockBefore: 1, blockAfter: 2, syncNext: 4, request: 0x80000000 } as const;

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface ServerInit {
  width: number;
  height: number;
  name: string;
}

/** The handshake up to ServerInit, as a shared client (another viewer, e.g. the app's, may stay connected). */
export async function handshake(socket: net.Socket, reader: ByteReader): Promise<ServerInit> {
  const banner = (await reader.read(12)).toString('latin1');
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

  socket.write(Buffer.from([1])); // ClientInit: shared
  const init = await reader.read(24); // width, height, pixel format (16), name length
  const nameLength = init.readUInt32BE(20);
  if (nameLength > MAX_NAME_BYTES) throw new Error(`the desktop announced a name of ${nameLength} bytes, over ${MAX_NAME_BYTES}`);
  const name = (await reader.read(nameLength)).toString('utf8');
  return { ...checkScreen(init.readUInt16BE(0), init.readUInt16BE(2)), name };
}

/** A screen size the helper will hold a framebuffer for; an error that says why otherwise. */
export function checkScreen(width: number, height: number): { width: number; height: number } {
  if (width === 0 || height === 0 || width > MAX_SCREEN_SIDE || height > MAX_SCREEN_SIDE || width * height > MAX_SCREEN_PIXELS) {
    throw new Error(
      `the desktop announced a ${width}×${height} screen, outside what Grove takes (at most ${MAX_SCREEN_SIDE} a side, ${MAX_SCREEN_PIXELS} pixels)`,
    );
  }
  return { width, height };
}

async function reason(reader: ByteReader): Promise<string> {
  const length = (await reader.read(4)).readUInt32BE(0);
  return (await reader.read(Math.min(length, 4096))).toString('utf8');
}

/**
 * SetPixelFormat: 32 bits per pixel, depth 24, true colour, red in the lowest
 * byte: in memory each pixel is R, G, B, unused, which is what the PNG encoder
 * wants without shuffling.
 */
export function setPixelFormatRgbx(): Buffer {
  const b = Buffer.alloc(20);
  b.writeUInt8(0, 0);
  const format = b.subarray(4);
  format.writeUInt8(32, 0); // bits per pixel
  format.writeUInt8(24, 1); // depth
  format.writeUInt8(0, 2); // little-endian
  format.writeUInt8(1, 3); // true colour
  format.writeUInt16BE(255, 4);
  format.writeUInt16BE(255, 6);
  format.writeUInt16BE(255, 8);
  format.writeUInt8(0, 10); // red shift
  format.writeUInt8(8, 11); // green shift
  format.writeUInt8(16, 12); // blue shift
  return b;
}

export function setEncodings(encodings: readonly number[]): Buffer {
  const b = Buffer.alloc(4 + 4 * encodings.length);
  b.writeUInt8(2, 0);
  b.writeUInt16BE(encodings.length, 2);
  encodings.forEach((e, i) => b.writeInt32BE(e, 4 + 4 * i));
  return b;
}

export function updateRequest(incremental: boolean, r: Rect): Buffer {
  const b = Buffer.alloc(10);
  b.writeUInt8(3, 0);
  b.writeUInt8(incremental ? 1 : 0, 1);
  b.writeUInt16BE(r.x, 2);
  b.writeUInt16BE(r.y, 4);
  b.writeUInt16BE(r.width, 6);
  b.writeUInt16BE(r.height, 8);
  return b;
}

export function keyEvent(down: boolean, keysym: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt8(4, 0);
  b.writeUInt8(down ? 1 : 0, 1);
  b.writeUInt32BE(keysym, 4);
  return b;
}

/** buttons: bit 0 left, 1 middle, 2 right, 3/4 wheel up/down, 5/6 wheel left/right. */
export function pointerEvent(buttons: number, x: number, y: number): Buffer {
  const b = Buffer.alloc(6);
  b.writeUInt8(5, 0);
  b.writeUInt8(buttons, 1);
  b.writeUInt16BE(x, 2);
  b.writeUInt16BE(y, 4);
  return b;
}

export function clientFence(flags: number, payload: Buffer): Buffer {
  if (payload.length > 64) throw new Error('a fence carries at most 64 bytes');
  const b = Buffer.alloc(9 + payload.length);
  b.writeUInt8(248, 0);
  b.writeUInt32BE(flags >>> 0, 4);
  b.writeUInt8(payload.length, 8);
  payload.copy(b, 9);
  return b;
}

export type ServerMessage = { type: 'update'; rects: number } | { type: 'fence'; flags: number; payload: Buffer } | { type: 'other' };

/**
 * The next server message. A FramebufferUpdate's rectangles are left for the
 * caller to read (readRectHeader, then the encoding's data); everything else
 * is read whole.
 */
export async function readServerMessage(reader: ByteReader): Promise<ServerMessage> {
  const type = (await reader.read(1))[0]!;
  switch (type) {
    case 0: // FramebufferUpdate: padding, number of rectangles
      return { type: 'update', rects: (await reader.read(3)).readUInt16BE(1) };
    case 1: {
      // SetColourMapEntries: padding, first colour, count, 6 bytes each
      const head = await reader.read(5);
      await reader.read(6 * head.readUInt16BE(3));
      return { type: 'other' };
    }
    case 2: // Bell
      return { type: 'other' };
    case 3: {
      // ServerCutText: 3 padding, length, text
      const head = await reader.read(7);
      const length = head.readUInt32BE(3);
      if (length > MAX_CUT_TEXT_BYTES) throw new Error(`the desktop announced clipboard text of ${length} bytes, over ${MAX_CUT_TEXT_BYTES}`);
      await reader.read(length);
      return { type: 'other' };
    }
    case 150: // EndOfContinuousUpdates
      return { type: 'other' };
    case 248: {
      // ServerFence: 3 padding, flags, length, payload
      const head = await reader.read(8);
      return { type: 'fence', flags: head.readUInt32BE(3), payload: Buffer.from(await reader.read(head.readUInt8(7))) };
    }
    default:
      throw new Error(`unexpected server message type ${type}`);
  }
}

export async function readRectHeader(reader: ByteReader): Promise<Rect & { encoding: number }> {
  const h = await reader.read(12);
  return { x: h.readUInt16BE(0), y: h.readUInt16BE(2), width: h.readUInt16BE(4), height: h.readUInt16BE(6), encoding: h.readInt32BE(8) };
}
