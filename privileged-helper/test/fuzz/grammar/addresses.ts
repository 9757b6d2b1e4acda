// A grammar of IP address literals, in every form a resolver or the kernel
// takes: IPv4 in one to four parts, each decimal, octal or hex; IPv6 with or
// without '::', leading zeros, upper case, an embedded dotted IPv4, a zone id,
// brackets. The addresses lean to those the gate must refuse (loopback,
// unspecified, link-local, multicast, Grove's subnet) and to the IPv6 prefixes
// that carry an IPv4 address (mapped, compatible, NAT64, 6to4).
import fc from 'fast-check';

/** The branch subnet the fuzz targets give the gate. */
export const FUZZ_SUBNET = '10.215.0.0/16';

const v4Bytes: fc.Arbitrary<number[]> = fc.oneof(
  fc
    .tuple(fc.constantFrom(127, 0, 169, 224, 239, 240, 255, 10, 192, 8), fc.nat(255), fc.nat(255), fc.nat(255))
    .map(([a, b, c, d]) => [a, a === 169 ? 254 : a === 10 ? 215 : b, c, d]),
  fc.array(fc.nat(255), { minLength: 4, maxLength: 4 }),
);

const v6Bytes: fc.Arbitrary<readonly number[]> = fc.oneof(
  v4Bytes.chain((v4) =>
    fc.constantFrom(
      [...zeros(10), 0xff, 0xff, ...v4], // mapped
      [...zeros(12), ...v4], // compatible
      [0, 0x64, 0xff, 0x9b, ...zeros(8), ...v4], // NAT64
      [0, 0x64, 0xff, 0x9b, 0, 1, ...zeros(6), ...v4], // local-use NAT64
      [0x20, 0x02, ...v4, ...zeros(10)], // 6to4
    ),
  ),
  fc.constantFrom([...zeros(15), 1], zeros(16), [0xfe, 0x80, ...zeros(13), 1], [0xff, 0x02, ...zeros(13), 1], [0x20, 0x01, 0x0d, 0xb8, ...zeros(11), 1]),
  fc.array(fc.nat(255), { minLength: 16, maxLength: 16 }),
);

/** An IPv4 address as 1-4 parts, the last filling the remaining bytes, each written in its own base. */
const v4Literal: fc.Arbitrary<string> = fc
  .tuple(v4Bytes, fc.integer({ min: 1, max: 4 }), fc.array(fc.constantFrom('dec', 'oct', 'hex', 'HEX', 'zeros'), { minLength: 4, maxLength: 4 }))
  .map(([bytes, parts, bases]) => {
    const values = [...bytes.slice(0, parts - 1), bytes.slice(parts - 1).reduce((n, b) => n * 256 + b, 0)];
    return values.map((v, i) => inBase(v, bases[i]!)).join('.');
  });

const v6Literal: fc.Arbitrary<string> = fc
  .tuple(v6Bytes, fc.boolean(), fc.boolean(), fc.boolean(), fc.nat(8), fc.constantFrom('', '', '%eth0', '%1', '%lo'), fc.boolean())
  .map(([bytes, dottedTail, upper, padded, compressAt, zone, bracketed]) => {
    const groups = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!).map((g) =>
      padded ? g.toString(16).padStart(4, '0') : g.toString(16),
    );
    const words = dottedTail ? [...groups.slice(0, 6), bytes.slice(12).join('.')] : groups;
    let text = compress(words, compressAt);
    if (upper) text = text.toUpperCase();
    text += zone;
    return bracketed ? `[${text}]` : text;
  });

export const addressLiteral: fc.Arbitrary<string> = fc.oneof(v4Literal, v6Literal);

function inBase(v: number, base: string): string {
  if (base === 'oct') return `0${v.toString(8)}`;
  if (base === 'hex') return `0x${v.toString(16)}`;
  if (base === 'HEX') return `0X${v.toString(16).toUpperCase()}`;
  if (base === 'zeros') return `0x00${v.toString(16)}`;
  return String(v);
}

/** Words with the run of zero groups starting at `at` (if any there) written as '::'. */
function compress(words: string[], at: number): string {
  let end = at;
  while (end < words.length && /^0+$/.test(words[end]!)) end++;
  if (end === at) return words.join(':');
  return `${words.slice(0, at).join(':')}::${words.slice(end).join(':')}`;
}

function zeros(n: number): number[] {
  return Array<number>(n).fill(0);
}
