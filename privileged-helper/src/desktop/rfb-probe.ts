// Waits until a workspace's VNC server (TigerVNC Xvnc, -SecurityTypes None)
// really serves pictures: the RFB handshake (RFC 6143) up to ServerInit, then one
// non-incremental FramebufferUpdateRequest for the whole screen, done when the
// first FramebufferUpdate header arrives. The server may not listen yet (or
// a forwarder may accept and drop the connection while nothing listens behind
// it), so every failure before the deadline means: try again. It connects to
// the server itself (host and port) or through a branch's desktop socket (path).
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ByteReader } from './byte-reader.js';
import { handshake, readServerMessage, updateRequest } from './rfb-protocol.js';
import { GroveError } from '../protocol/wire.js';

const RETRY_MS = 100;

export type RfbEndpoint = { host: string; port: number } | { path: string };

function describe(at: RfbEndpoint): string {
  return 'path' in at ? at.path : `${at.host}:${at.port}`;
}

export interface FirstFrame {
  /** From the call until the server's ProtocolVersion banner (of the attempt that succeeded). */
  bannerMs: number;
  /** From the call until the first FramebufferUpdate header. */
  frameMs: number;
}

export async function firstFrame(at: RfbEndpoint, opts: { timeoutMs: number }): Promise<FirstFrame> {
  const start = performance.now();
  const deadline = start + opts.timeoutMs;
  let lastError = 'no attempt';
  while (performance.now() < deadline) {
    try {
      return await attempt(at, start, deadline);
    } catch (e) {
      lastError = e instanceof Error ? e.message : String(e);
    }
    const left = deadline - performance.now();
    if (left > 0) await sleep(Math.min(RETRY_MS, left));
  }
  throw new GroveError('E_HOST', `no VNC frame from ${describe(at)} within ${opts.timeoutMs} ms (last: ${lastError})`);
}

/** One connection: resolves on the first frame, rejects on any failure or at the deadline. */
async function attempt(at: RfbEndpoint, start: number, deadline: number): Promise<FirstFrame> {
  const socket = net.connect(at);
  socket.setNoDelay(true);
  const reader = new ByteReader(socket);
  let bannerMs = 0;
  socket.once('data', () => (bannerMs = performance.now() - start)); // the first bytes are the banner
  const timer = setTimeout(() => socket.destroy(new Error('deadline passed')), Math.max(0, deadline - performance.now()));
  try {
    const init = await handshake(socket, reader);
    // Not incremental: the whole screen, now.
    socket.write(updateRequest(false, { x: 0, y: 0, width: init.width, height: init.height }));
    while ((await readServerMessage(reader)).type !== 'update');
    return { bannerMs, frameMs: performance.now() - start };
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
}
