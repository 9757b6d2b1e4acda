// A grammar of what an RFB server sends a client (RFC 6143 and the extensions
// Grove asks for): a version banner, the security handshake of that version,
// ServerInit, then server messages. Most draws are well formed, so that the
// fuzzer gets past the handshake; sizes lean to the edges of Grove's limits,
// and a draw often holds what completes Grove's first refresh (the answer to
// its first fence, then an update of the whole screen).
import fc from 'fast-check';
import { Encoding } from '../../../src/desktop/rfb-protocol.js';

type Version = 3 | 7 | 8;

const u8 = (n: number) => Buffer.from([n & 0xff]);
const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};
const cat = (...parts: Buffer[]) => Buffer.concat(parts);

/** A side: mostly small (a raw rectangle's pixels are in the input), sometimes at or past a limit. */
const side = fc.oneof({ arbitrary: fc.integer({ min: 1, max: 24 }), weight: 6 }, { arbitrary: fc.constantFrom(0, 1, 4096, 8192, 8193, 65535), weight: 1 });
const length32 = fc.oneof(fc.integer({ min: 0, max: 64 }), fc.constantFrom(1 << 20, (1 << 20) + 1, 0xfffffff0, 0xffffffff));

const banner: fc.Arbitrary<[Version, Buffer]> = fc
  .oneof(
    { arbitrary: fc.constantFrom<[Version, string]>([8, 'RFB 003.008\n'], [7, 'RFB 003.007\n'], [3, 'RFB 003.003\n']), weight: 8 },
    {
      arbitrary: fc.constantFrom<[Version, string]>(
        [8, 'RFB 003.889\n'],
        [8, 'RFB 004.001\n'],
        [3, 'RFB 003.005\n'],
        [3, 'RFB 002.000\n'],
        [8, 'RFB 003.008 '],
      ),
      weight: 1,
    },
  )
  .map(([v, text]) => [v, Buffer.from(text, 'latin1')]);

const reason = fc.tuple(length32, fc.string({ maxLength: 16 })).map(([n, text]) => cat(u32(n), Buffer.from(text)));

function security(version: Version): fc.Arbitrary<Buffer> {
  const none = version === 3 ? fc.constant(u32(1)) : fc.constant(cat(u8(1), u8(1)));
  const other =
    version === 3
      ? fc.oneof(
          reason.map((r) => cat(u32(0), r)),
          fc.constant(u32(2)),
        )
      : fc.oneof(
          reason.map((r) => cat(u8(0), r)),
          fc.uint8Array({ minLength: 1, maxLength: 8 }).map((types) => cat(u8(types.length), Buffer.from(types))),
        );
  const result =
    version === 8
      ? fc.oneof({ arbitrary: fc.constant(u32(0)), weight: 8 }, { arbitrary: reason.map((r) => cat(u32(1), r)), weight: 1 })
      : fc.constant(Buffer.alloc(0));
  return fc.oneof({ arbitrary: fc.tuple(none, result).map(([a, b]) => cat(a, b)), weight: 8 }, { arbitrary: other, weight: 1 });
}

const serverInit = (width: number, height: number) =>
  fc
    .oneof(
      { arbitrary: fc.string({ maxLength: 12 }).map((name) => Buffer.from(name)), weight: 8 },
      { arbitrary: fc.constant(Buffer.alloc(5000, 0x61)), weight: 1 },
    )
    .map((name) => cat(u16(width), u16(height), Buffer.alloc(16), u32(name.length), name));

interface Screen {
  width: number;
  height: number;
}

/** A rectangle header and its data; most lie inside the screen. */
const rect = (s: Screen): fc.Arbitrary<Buffer> => {
  const inside = fc
    .tuple(fc.nat(Math.max(0, s.width - 1)), fc.nat(Math.max(0, s.height - 1)))
    .chain(([x, y]) =>
      fc.tuple(fc.constant(x), fc.constant(y), fc.integer({ min: 0, max: Math.min(s.width - x, 24) }), fc.integer({ min: 0, max: Math.min(s.height - y, 24) })),
    );
  const anywhere = fc.tuple(fc.constantFrom(0, 1, s.width, 65535), fc.constantFrom(0, 1, s.height, 65535), side, side);
  const place = fc.oneof({ arbitrary: inside, weight: 6 }, { arbitrary: anywhere, weight: 1 });
  const header = ([x, y, w, h]: number[], encoding: number) => cat(u16(x!), u16(y!), u16(w!), u16(h!), u32(encoding));
  return fc.oneof(
    place.map(([x, y, w, h]) => cat(header([x!, y!, w!, h!], Encoding.raw), w! * h! <= 4096 ? Buffer.alloc(w! * h! * 4, (x! + y!) & 0xff) : Buffer.alloc(0))),
    fc.tuple(place, fc.nat(s.width), fc.nat(s.height)).map(([p, sx, sy]) => cat(header(p, Encoding.copyRect), u16(sx), u16(sy))),
    fc.tuple(side, side).map(([w, h]) => header([0, 0, w, h], Encoding.desktopSize)),
    place.map((p) => header(p, Encoding.cursorPosition)),
    fc.tuple(place, fc.integer({ min: -0x80000000, max: 0x7fffffff })).map(([p, encoding]) => header(p, encoding)),
  );
};

const update = (s: Screen) => fc.array(rect(s), { maxLength: 4 }).map((rects) => cat(u8(0), u8(0), u16(rects.length), ...rects));

/** ServerFence: its answer to the client's fence `id`, or a request of its own, or a payload of any length. */
const fence = fc
  .tuple(
    fc.constantFrom(0, 0x80000000, 0x80000007, 0xffffffff),
    fc.oneof(
      fc.integer({ min: 1, max: 4 }).map(u32),
      fc.uint8Array({ maxLength: 255 }).map((b) => Buffer.from(b)),
    ),
  )
  .map(([flags, payload]) => cat(u8(248), Buffer.alloc(3), u32(flags), u8(payload.length), payload));

/** What completes Grove's first refresh: the answer to fence 1, then the whole screen. */
const firstRefresh = (s: Screen) =>
  fc.constant(
    cat(
      u8(248),
      Buffer.alloc(3),
      u32(0),
      u8(4),
      u32(1),
      u8(0),
      u8(0),
      u16(1),
      u16(0),
      u16(0),
      u16(s.width),
      u16(s.height),
      u32(Encoding.raw),
      Buffer.alloc(s.width * s.height * 4 <= 1 << 16 ? s.width * s.height * 4 : 0),
    ),
  );

const colourMap = fc
  .oneof(fc.integer({ min: 0, max: 8 }), fc.constant(0xffff))
  .map((count) => cat(u8(1), u8(0), u16(0), u16(count), Buffer.alloc(count <= 8 ? 6 * count : 0)));
const cutText = fc.tuple(length32, fc.string({ maxLength: 32 })).map(([n, text]) => cat(u8(3), Buffer.alloc(3), u32(n), Buffer.from(text)));

const message = (s: Screen): fc.Arbitrary<Buffer> =>
  fc.oneof(
    { arbitrary: update(s), weight: 4 },
    { arbitrary: firstRefresh(s), weight: 2 },
    { arbitrary: fence, weight: 2 },
    { arbitrary: colourMap, weight: 1 },
    { arbitrary: fc.constant(u8(2)), weight: 1 }, // Bell
    { arbitrary: cutText, weight: 1 },
    { arbitrary: fc.constant(u8(150)), weight: 1 }, // EndOfContinuousUpdates
    { arbitrary: fc.nat(255).map(u8), weight: 1 },
  );

/** A whole server stream. */
export const rfbServerStream: fc.Arbitrary<Uint8Array> = fc
  .tuple(banner, side, side)
  .chain(([[version, hello], width, height]) =>
    fc
      .tuple(security(version), serverInit(width, height), fc.array(message({ width, height }), { maxLength: 8 }))
      .map(([sec, init, messages]) => cat(hello, sec, init, ...messages)),
  );

/** Pieces of the protocol worth inserting anywhere. */
export const rfbTokens: readonly Uint8Array[] = [
  Buffer.from('RFB 003.008\n'),
  cat(u8(248), Buffer.alloc(3), u32(0), u8(4), u32(1)),
  cat(u8(0), u8(0), u16(1)),
  cat(u32(Encoding.desktopSize)),
  cat(u32(Encoding.copyRect)),
  cat(u32(Encoding.cursorPosition)),
  cat(u8(3), Buffer.alloc(3), u32(0xfffffff0)),
  u16(8192),
  u16(8193),
];
