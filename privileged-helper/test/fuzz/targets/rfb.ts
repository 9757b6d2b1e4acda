// Fuzz target: Grove's RFB client (desktop/rfb-session.ts and what it runs:
// rfb-protocol.ts, byte-reader.ts, framebuffer.ts), against a branch's VNC
// server that says anything. An input is everything the server sends: a TCP
// server on loopback writes it, in a few pieces so that reads span chunks,
// whatever the client says, then closes. Properties:
// - RfbSession.open resolves, or rejects with E_HOST saying why; nothing else
//   is thrown and nothing is left uncaught;
// - the screen the session holds is one Grove allows (at most MAX_SCREEN_SIDE
//   a side and MAX_SCREEN_PIXELS in all), and its buffer is exactly that
//   screen, before and after every later message;
// - once the server has closed, the session ends too, saying why.
// A server streaming without end is not a fuzzer's short input:
// test/unit/rfb-hostile.test.ts holds the reader to its limit.
import net from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { BYTES_PER_PIXEL } from '../../../src/desktop/framebuffer.js';
import { MAX_SCREEN_PIXELS, MAX_SCREEN_SIDE } from '../../../src/desktop/rfb-protocol.js';
import { RfbSession } from '../../../src/desktop/rfb-session.js';
import { GroveError } from '../../../src/protocol/wire.js';
import type { FuzzTarget } from '../engine.js';
import { rfbServerStream, rfbTokens } from '../grammar/rfb.js';

/** Longer than any input takes on loopback; an input that reaches it is a hang. */
const OPEN_TIMEOUT_MS = 10_000;

let server: net.Server | null = null;
let port = 0;
let sending: Buffer = Buffer.alloc(0);

export const rfbTarget: FuzzTarget = {
  name: 'rfb',
  steers: (url) => /\/privileged-helper\/src\/desktop\/(byte-reader|rfb-protocol|rfb-session|framebuffer)\.ts$/.test(url),
  maxBytes: 1 << 18,
  grammar: rfbServerStream,
  tokens: rfbTokens,
  setUp: async () => {
    server = net.createServer((socket) => void serve(socket, sending));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  },
  tearDown: async () => {
    await new Promise((resolve) => server?.close(resolve));
    server = null;
  },
  run: async (input) => {
    sending = input;
    let session: RfbSession;
    try {
      session = await RfbSession.open('127.0.0.1', port, OPEN_TIMEOUT_MS);
    } catch (e) {
      if (e instanceof GroveError && e.code === 'E_HOST' && e.message.length > 0) return;
      throw new Error(`RfbSession.open failed with something other than E_HOST: ${(e as Error).stack ?? String(e)}`, { cause: e });
    }
    try {
      checkScreen(session, 'once open');
      await ended(session);
      checkScreen(session, 'at its end');
      if (!session.closed?.message) throw new Error('the session ended without saying why');
    } finally {
      session.close();
    }
  },
};

/** Writes the input in up to four pieces, each in a turn of its own, then closes. */
async function serve(socket: net.Socket, input: Buffer): Promise<void> {
  socket.on('error', () => undefined); // the client hangs up on what it refuses
  socket.resume(); // what the client says is dropped, and its end seen: the socket closes
  socket.setNoDelay(true);
  for (const piece of pieces(input)) {
    if (socket.destroyed) return;
    socket.write(piece);
    await nextTurn();
  }
  socket.end();
}

/** Cut points taken from the input itself, so that one input is always cut alike. */
function pieces(input: Buffer): Buffer[] {
  const sum = input.reduce((a, b) => (a * 31 + b) >>> 0, 7);
  const cuts = [sum % 97, (sum >>> 8) % 1031, (sum >>> 16) % 65537].map((c) => Math.min(c, input.length)).sort((a, b) => a - b);
  return [0, ...cuts].map((from, i) => input.subarray(from, [...cuts, input.length][i]));
}

function checkScreen(session: RfbSession, when: string): void {
  const { width, height } = session.size;
  if (width > MAX_SCREEN_SIDE || height > MAX_SCREEN_SIDE || width * height > MAX_SCREEN_PIXELS) {
    throw new Error(`${when}, the session holds a ${width}×${height} screen, past Grove's limits`);
  }
  const bytes = session.framebuffer.pixels.length;
  if (bytes !== width * height * BYTES_PER_PIXEL) throw new Error(`${when}, the session holds ${bytes} bytes of frame for a ${width}×${height} screen`);
}

/** Resolves once the session has ended (the server closes after its input). */
function ended(session: RfbSession): Promise<void> {
  return new Promise((resolve) => {
    if (session.closed) return resolve();
    session.onChange((changed) => changed === null && resolve());
  });
}
