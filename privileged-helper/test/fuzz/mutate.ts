// Mutations of a kept input, as libFuzzer makes them (flip a bit, set a byte,
// write a length, insert, erase, repeat, splice another input, insert a token
// of the format), drawn by fast-check so that a failing input shrinks to the
// fewest, smallest mutations that still fail.
import fc from 'fast-check';

/** Lengths and counts at the edges of what parsers check: zero, one, sign bits, the limits Grove sets (1 MiB, 8192, 16 Mi) and past them. */
const INTERESTING = [
  0, 1, 2, 3, 4, 7, 8, 15, 16, 64, 65, 127, 128, 255, 256, 4096, 8191, 8192, 8193, 0x7fff, 0x8000, 0xffff, 0x10000, 0x100000, 0x100001, 0x1000000, 0x7fffffff,
  0x80000000, 0xfffffff0, 0xffffffff,
];

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'byte'; at: number; value: number }
  | { kind: 'word'; at: number; bytes: 2 | 4; value: number }
  | { kind: 'digits'; at: number; value: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'erase'; at: number; length: number }
  | { kind: 'repeat'; at: number; length: number; times: number }
  | { kind: 'splice'; at: number; from: number; length: number }
  | { kind: 'token'; at: number; token: number };

const at = fc.nat();
const interesting = fc.oneof(fc.constantFrom(...INTERESTING), fc.nat({ max: 0xffffffff }));

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at, bit: fc.nat({ max: 7 }) }),
  fc.record({ kind: fc.constant('byte' as const), at, value: fc.oneof(fc.constantFrom(0, 1, 0x7f, 0x80, 0xff), fc.nat({ max: 255 })) }),
  fc.record({ kind: fc.constant('word' as const), at, bytes: fc.constantFrom(2 as const, 4 as const), value: interesting }),
  fc.record({ kind: fc.constant('digits' as const), at, value: interesting }),
  fc.record({ kind: fc.constant('insert' as const), at, bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({ kind: fc.constant('erase' as const), at, length: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ kind: fc.constant('repeat' as const), at, length: fc.integer({ min: 1, max: 64 }), times: fc.integer({ min: 1, max: 512 }) }),
  fc.record({ kind: fc.constant('splice' as const), at, from: fc.nat(), length: fc.integer({ min: 1, max: 256 }) }),
  fc.record({ kind: fc.constant('token' as const), at, token: fc.nat() }),
);

/**
 * A kept input with one to six mutations. `kept` grows while the fuzzer runs
 * (inputs that reached new code), so it is read when a value is drawn.
 */
export function mutated(kept: readonly Uint8Array[], tokens: readonly Uint8Array[], maxBytes: number): fc.Arbitrary<Uint8Array> {
  return fc.tuple(fc.nat(), fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 6 })).map(([pick, other, steps]) => {
    let out: Buffer = Buffer.from(kept[pick % kept.length]!);
    for (const step of steps) out = apply(step, out, kept[other % kept.length]!, tokens).subarray(0, maxBytes);
    return out;
  });
}

function apply(m: Mutation, input: Buffer, other: Uint8Array, tokens: readonly Uint8Array[]): Buffer {
  const at = m.at % (input.length + 1);
  const within = input.length === 0 ? 0 : m.at % input.length;
  switch (m.kind) {
    case 'flip':
      return input.length === 0 ? input : overwrite(input, within, [input[within]! ^ (1 << m.bit)]);
    case 'byte':
      return input.length === 0 ? Buffer.from([m.value]) : overwrite(input, within, [m.value]);
    case 'word': {
      const word = Buffer.alloc(4);
      word.writeUInt32BE(m.value >>> 0);
      return overwrite(input, at, word.subarray(4 - m.bytes));
    }
    case 'digits':
      return insert(input, at, Buffer.from(String(m.value)));
    case 'insert':
      return insert(input, at, m.bytes);
    case 'erase':
      return Buffer.concat([input.subarray(0, at), input.subarray(at + m.length)]);
    case 'repeat': {
      const part = input.subarray(at, at + m.length);
      return insert(input, at, Buffer.concat(Array<Buffer>(m.times).fill(part)));
    }
    case 'splice': {
      const from = other.length === 0 ? 0 : m.from % other.length;
      return insert(input, at, other.subarray(from, from + m.length));
    }
    case 'token':
      return tokens.length === 0 ? input : insert(input, at, tokens[m.token % tokens.length]!);
  }
}

function overwrite(input: Buffer, at: number, bytes: ArrayLike<number>): Buffer {
  const out = Buffer.concat([input, Buffer.alloc(Math.max(0, at + bytes.length - input.length))]);
  out.set(bytes, at);
  return out;
}

function insert(input: Buffer, at: number, bytes: Uint8Array): Buffer {
  return Buffer.concat([input.subarray(0, at), bytes, input.subarray(at)]);
}
