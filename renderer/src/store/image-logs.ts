// Each image's log as the renderer holds it: read once from the controller
// (image.logs) and followed line by line (image.output events). The two can
// overlap or cross; lines carry the controller's growing sequence number, so
// the newer job wins and no line shows twice.
import { MAX_IMAGE_LOG_LINES, type ImageLog, type ImageLogLine } from '../../../main/src/api/contract.js';

const lastSeq = (log: ImageLog) => log.lines.at(-1)?.seq ?? -1;

/** A line as it comes: the same job grows; a newer job starts the log again; an older line changes nothing. */
export function appendLine(known: ImageLog | undefined, job: string, line: ImageLogLine): ImageLog {
  if (known?.job === job) return line.seq > lastSeq(known) ? { job, lines: [...known.lines, line].slice(-MAX_IMAGE_LOG_LINES) } : known;
  return !known || line.seq > lastSeq(known) ? { job, lines: [line] } : known;
}

/** What was read, with what was followed meanwhile. */
export function mergeLog(known: ImageLog | undefined, read: ImageLog): ImageLog {
  if (!known) return read;
  if (known.job !== read.job) return lastSeq(read) >= lastSeq(known) ? read : known;
  const bySeq = new Map([...read.lines, ...known.lines].map((l) => [l.seq, l]));
  return { job: read.job, lines: [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(-MAX_IMAGE_LOG_LINES) };
}
