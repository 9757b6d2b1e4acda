// How long a dump kept the tree stopped, from the statistics CRIU writes to
// its images dir (`stats-dump`), so the log can stay quiet: CRIU's debug log
// (-v4) cost ~0.3 s of a desktop's dump while the tree was frozen.
//
// The file: two 32-bit magics, then one entry — a 32-bit little-endian length
// and a protobuf StatsEntry whose field 1 is DumpStatsEntry, in which field 1
// is freezing_time and field 2 frozen_time, both µs (CRIU's stats.proto).
// The tree is stopped from the first task seized (freezing) until the last
// is released (frozen), so the two add up to what the source lost.

const HEADER_BYTES = 8;
const DUMP_STATS = 1;
const FREEZING_TIME = 1;
const FROZEN_TIME = 2;

export function sourceFrozenMs(statsDump: Buffer): number | null {
  if (statsDump.length < HEADER_BYTES + 4) return null;
  const size = statsDump.readUInt32LE(HEADER_BYTES);
  const entry = statsDump.subarray(HEADER_BYTES + 4, HEADER_BYTES + 4 + size);
  const dump = fields(entry).get(DUMP_STATS);
  if (!(dump instanceof Buffer)) return null;
  const stats = fields(dump);
  const freezing = stats.get(FREEZING_TIME);
  const frozen = stats.get(FROZEN_TIME);
  if (typeof freezing !== 'number' || typeof frozen !== 'number') return null;
  return Math.round((freezing + frozen) / 1000);
}

/** The top-level fields of a protobuf message: varints as numbers, length-delimited ones as bytes. */
function fields(msg: Buffer): Map<number, number | Buffer> {
  const out = new Map<number, number | Buffer>();
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; at < msg.length; shift += 7) {
      const byte = msg[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    throw new Error('truncated varint in CRIU stats');
  };
  while (at < msg.length) {
    const key = varint();
    const [field, wire] = [Math.floor(key / 8), key % 8];
    if (wire === 0) out.set(field, varint());
    else if (wire === 2) {
      const len = varint();
      out.set(field, msg.subarray(at, at + len));
      at += len;
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else throw new Error(`unexpected protobuf wire type ${wire} in CRIU stats`);
  }
  return out;
}
