// What CRIU says about its own run, from the statistics it writes to its work
// dir (`stats-dump`, `stats-restore`), so the log can stay quiet: CRIU's
// debug log (-v4) is written during a dump, while the tree is frozen.
//
// The file: two 32-bit magics, then one entry — a 32-bit little-endian length
// and a protobuf StatsEntry: field 1 DumpStatsEntry, field 2
// RestoreStatsEntry (CRIU's images/stats.proto; times in µs).
// The tree is stopped from the first task seized (freezing) until the last
// is released (frozen), so the two add up to what the source lost.
import type { CriuDumpStats, CriuRestoreStats } from '../../protocol/entities.js';

const HEADER_BYTES = 8;
const DUMP_STATS = 1;
const RESTORE_STATS = 2;
const DUMP = { freezing: 1, frozen: 2, memdump: 3, memwrite: 4, pagesScanned: 5, pagesWritten: 7 } as const;
const RESTORE = { forking: 3, restore: 4, pagesRestored: 5 } as const;

export function dumpStats(statsDump: Buffer): CriuDumpStats | null {
  const f = entry(statsDump, DUMP_STATS);
  if (!f) return null;
  const freezing = num(f, DUMP.freezing);
  const frozen = num(f, DUMP.frozen);
  if (freezing === null || frozen === null) return null;
  return {
    sourceFrozenMs: ms(freezing + frozen),
    freezingMs: ms(freezing),
    memdumpMs: ms(num(f, DUMP.memdump) ?? 0),
    memwriteMs: ms(num(f, DUMP.memwrite) ?? 0),
    pagesScanned: num(f, DUMP.pagesScanned) ?? 0,
    pagesWritten: num(f, DUMP.pagesWritten) ?? 0,
  };
}

export function restoreStats(statsRestore: Buffer): CriuRestoreStats | null {
  const f = entry(statsRestore, RESTORE_STATS);
  if (!f) return null;
  const forking = num(f, RESTORE.forking);
  const restore = num(f, RESTORE.restore);
  if (forking === null || restore === null) return null;
  return { forkingMs: ms(forking), restoreMs: ms(restore), pagesRestored: num(f, RESTORE.pagesRestored) ?? 0 };
}

function entry(file: Buffer, which: number): Map<number, number | Buffer> | null {
  if (file.length < HEADER_BYTES + 4) return null;
  const size = file.readUInt32LE(HEADER_BYTES);
  const stats = fields(file.subarray(HEADER_BYTES + 4, HEADER_BYTES + 4 + size)).get(which);
  return stats instanceof Buffer ? fields(stats) : null;
}

function num(f: Map<number, number | Buffer>, field: number): number | null {
  const v = f.get(field);
  return typeof v === 'number' ? v : null;
}

const ms = (us: number) => Math.round(us / 1000);

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
